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


def stylesheet() -> str:
    """``assets/evalarc.css``; it may not contain ``</style`` (it is inlined raw)."""
    css = (bundled_dir("assets") / "evalarc.css").read_text(encoding="utf-8")
    if "</style" in css.lower():
        raise ValueError("assets/evalarc.css contains '</style' and cannot be inlined")
    return css


def content_security_policy(styles: list[str]) -> str:
    """No network, no scripts unless hashed, no frames, no forms: a page that only shows."""
    style_src = " ".join(_csp_hash(style) for style in styles)
    return (
        "default-src 'none'; "
        f"style-src {style_src}; "
        "img-src data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def render_page(template: str, *, title: str, **context: Any) -> str:
    """Render ``template`` with the shared layout, inline CSS and CSP."""
    css = stylesheet()
    # The stylesheet is our own asset, inlined verbatim: escaping it would change the bytes the
    # CSP hash allows (quotes become &#34;) and the browser would drop every rule.
    return (
        environment()
        .get_template(template)
        .render(title=title, css=Markup(css), csp=content_security_policy([css]), **context)
    )
