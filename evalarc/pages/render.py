"""The one jinja2 environment every page uses: autoescape on, undefined names are errors,
CSS inlined from ``assets/`` and allowed by hash in a strict Content-Security-Policy.

Pages render text written by models and candidate programs, so nothing reaches HTML unescaped:
templates get page models (plain dataclasses) and never mark strings safe themselves.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

from evalarc.errors import OutputError
from evalarc.resources import bundled_dir


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(bundled_dir("site_templates"))),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env


def _asset(name: str, closing_tag: str) -> str:
    """An asset inlined verbatim; it may not contain its own closing tag."""
    text = (bundled_dir("assets") / name).read_text(encoding="utf-8")
    if closing_tag in text.lower():
        raise OutputError(f"assets/{name} contains '{closing_tag}' and cannot be inlined")
    return text


def stylesheet() -> str:
    """``assets/evalarc.css`` (read on every call, so ``site serve`` sees edits)."""
    return _asset("evalarc.css", "</style")


def script() -> str:
    """``assets/evalarc.js``: sorting, filtering, paging and trace stepping; pages work without
    it (read on every call, so ``site serve`` sees edits)."""
    return _asset("evalarc.js", "</script")


LATER_ROWS = "main table:not([data-static]) > thead + tbody > tr:nth-child(n+101)"
"""The rows past the first page (100, ``PAGE_SIZE`` in assets/evalarc.js) of a table the page
script enhances: assets/evalarc.css hides them until the script pages them."""
NOSCRIPT_CSS = f"{LATER_ROWS} {{ display: table-row; }}"
"""Shown only when scripting is off: every row of a long table."""


def content_security_policy(styles: list[str], scripts: list[str], *, dynamic: bool = False) -> str:
    """No network, no frames, no forms; exactly these styles and scripts, allowed by hash.

    ``dynamic`` adds ``'strict-dynamic'``: scripts that the hashed script inserts itself may
    run (the diff page's evidence chunks, :mod:`evalarc.pages.case_views`), and no host or
    ``'self'`` source is ever trusted, which matters under ``file://``, where ``'self'`` would
    admit any local file. ``frame-ancestors`` is left out: browsers ignore it in a ``<meta>``
    policy and log an error.
    """
    style_src = " ".join(_csp_hash(style) for style in styles) or "'none'"
    script_src = " ".join(_csp_hash(text) for text in scripts) or "'none'"
    if dynamic and scripts:
        script_src += " 'strict-dynamic'"
    return (
        "default-src 'none'; "
        f"style-src {style_src}; script-src {script_src}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def render_page(
    template: str,
    *,
    title: str,
    home: str | None = None,
    dynamic_scripts: bool = False,
    **context: Any,
) -> str:
    """Render ``template`` with the shared layout, inline CSS and JS, and the CSP.

    The CSS and JS are our own files, passed as markup so the bytes hashed into the policy are
    the bytes in the page (escaping would turn quotes into ``&#34;`` and the browser would drop
    them); everything else goes through autoescape. ``home`` links back to a site's index;
    ``dynamic_scripts`` lets the page's script load evidence chunks (see
    :func:`content_security_policy`).
    """
    css, js = stylesheet(), script()
    return (
        environment()
        .get_template(template)
        .render(
            title=title,
            css=Markup(css),
            noscript_css=Markup(NOSCRIPT_CSS),
            script=Markup(js),
            csp=content_security_policy([css, NOSCRIPT_CSS], [js], dynamic=dynamic_scripts),
            home=home,
            **context,
        )
    )
