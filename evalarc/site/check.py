"""The page checker: a page checks itself with a real HTML parser, not with regexes.

One function, :func:`check_page`, answers "could this page leak, run foreign code or break?":

- exactly one Content-Security-Policy ``<meta>``, with ``default-src 'none'``, no
  ``'unsafe-inline'``/``'unsafe-eval'``, and the SHA-256 of every inline ``<style>`` and
  executable ``<script>`` listed in its ``style-src``/``script-src``;
- no external ``src``/``href`` (nothing with a scheme or a ``//`` host, so no request can leave
  the page and no ``javascript:`` link exists), no event-handler attributes, no ``style``
  attributes, no ``<script src>``, no frames, objects, forms or ``<base>``;
- data islands are ``<script type="application/json">`` whose text parses as JSON;
- every internal link resolves: a relative file exists inside the site root, a ``#fragment``
  names an ``id`` on the target page.

The site builder, ``evalarc verify site/`` and the tests all call it, so what the tests prove is
what ``verify`` enforces.
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

URL_ATTRIBUTES = frozenset(
    {
        "href",
        "src",
        "srcset",
        "action",
        "formaction",
        "poster",
        "data",
        "xlink:href",
        "background",
        "cite",
        "longdesc",
        "manifest",
        "ping",
        "codebase",
        "archive",
        "usemap",
        "lowsrc",
        "dynsrc",
        "icon",
    }
)
FORBIDDEN_ELEMENTS = frozenset(
    {"base", "iframe", "frame", "frameset", "object", "embed", "applet", "form", "portal", "link"}
)
DATA_SCRIPT_TYPE = "application/json"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one page."""

    page: str
    """The page's path relative to the site root (or its name when checked alone)."""
    message: str

    def __str__(self) -> str:
        return f"{self.page}: {self.message}"


@dataclass
class _Link:
    attribute: str
    value: str
    line: int


class _Scan(HTMLParser):
    """Collect what the checks need in one pass over the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[_Link] = []
        self.problems: list[str] = []
        self.policies: list[str] = []
        self.styles: list[str] = []
        self.scripts: list[str] = []
        self._raw_kind: str | None = None
        self._raw_text: list[str] = []
        self._raw_line = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        values = {name: value or "" for name, value in attrs}
        if tag in FORBIDDEN_ELEMENTS:
            self.problems.append(f"line {line}: <{tag}> is not allowed")
        for name, value in attrs:
            text = value or ""
            if name.startswith("on"):
                self.problems.append(f"line {line}: event handler attribute {name} on <{tag}>")
            elif name == "style":
                self.problems.append(f"line {line}: inline style attribute on <{tag}>")
            elif name in URL_ATTRIBUTES:
                self.links.append(_Link(name, text, line))
            if name == "id":
                self.ids.add(text)
            if name == "name" and tag == "a":
                self.ids.add(text)
        if tag == "meta" and values.get("http-equiv", "").lower() == "content-security-policy":
            self.policies.append(values.get("content", ""))
        if tag == "script":
            kind = values.get("type", "").strip().lower()
            if "src" in values:
                self.problems.append(f"line {line}: <script src> is not allowed")
            self._start_raw("data" if kind == DATA_SCRIPT_TYPE else "script", line)
            if kind not in ("", DATA_SCRIPT_TYPE, "text/javascript"):
                self.problems.append(f"line {line}: <script type={kind!r}> is not allowed")
        elif tag == "style":
            self._start_raw("style", line)

    def _start_raw(self, kind: str, line: int) -> None:
        self._raw_kind = kind
        self._raw_text = []
        self._raw_line = line

    def handle_data(self, data: str) -> None:
        if self._raw_kind is not None:
            self._raw_text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._raw_kind is None or tag not in ("script", "style"):
            return
        text = "".join(self._raw_text)
        if self._raw_kind == "style":
            self.styles.append(text)
        elif self._raw_kind == "script":
            self.scripts.append(text)
        else:
            try:
                json.loads(text)
            except ValueError:
                self.problems.append(f"line {self._raw_line}: a JSON data island is not JSON")
        self._raw_kind = None


def _hash_source(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _directives(policy: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            found.setdefault(words[0].lower(), words[1:])
    return found


def _policy_problems(scan: _Scan) -> list[str]:
    if len(scan.policies) != 1:
        return [f"expected one Content-Security-Policy meta, found {len(scan.policies)}"]
    directives = _directives(scan.policies[0])
    problems: list[str] = []
    if directives.get("default-src") != ["'none'"]:
        problems.append("the Content-Security-Policy does not set default-src 'none'")
    for name, sources in directives.items():
        for source in sources:
            if source.lower() in ("'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*"):
                problems.append(f"the Content-Security-Policy allows {source} in {name}")
            elif not source.startswith("'") and source.lower() not in ("data:",):
                problems.append(f"the Content-Security-Policy allows a host source {source!r}")
    for directive, blocks in (("style-src", scan.styles), ("script-src", scan.scripts)):
        allowed = set(directives.get(directive, []))
        for block in blocks:
            if _hash_source(block) not in allowed:
                problems.append(f"an inline <{directive[:-4]}> is not allowed by its hash")
    return problems


def _link_problem(link: _Link, page: Path, root: Path, ids: set[str]) -> str | None:
    value = link.value.strip()
    where = f"line {link.line}: {link.attribute}={value[:80]!r}"
    if link.attribute == "srcset":
        return f"{where}: srcset is not allowed"
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or value.startswith(("//", "\\")) or "\\" in value:
        return f"{where} points outside the page"
    if not parts.path:
        fragment = unquote(parts.fragment)
        if parts.fragment and fragment not in ids:
            return f"{where}: no element has id {fragment!r}"
        return None
    relative = posixpath.normpath(
        posixpath.join(page.parent.relative_to(root).as_posix(), unquote(parts.path))
    )
    if relative == ".." or relative.startswith("../") or relative.startswith("/"):
        return f"{where} leaves the site"
    target = root / relative
    if parts.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    if target.is_symlink() or not target.is_file():
        return f"{where}: {relative} does not exist"
    fragment = unquote(parts.fragment)
    if fragment and target.suffix == ".html" and fragment not in _page_ids(target):
        return f"{where}: {relative} has no id {fragment!r}"
    return None


def _page_ids(path: Path) -> set[str]:
    scan = _Scan()
    scan.feed(path.read_text(encoding="utf-8", errors="replace"))
    scan.close()
    return scan.ids


def check_html(html: str, *, page: Path, root: Path | None = None) -> list[Problem]:
    """Check one page's markup; internal links are resolved against ``page`` inside ``root``
    (default: the page's own folder)."""
    site_root = Path(root if root is not None else page.parent).resolve()
    page_path = page.resolve()
    try:
        label = page_path.relative_to(site_root).as_posix()
    except ValueError:
        label = page.name
    scan = _Scan()
    scan.feed(html)
    scan.close()
    messages = list(scan.problems)
    messages += _policy_problems(scan)
    for link in scan.links:
        problem = _link_problem(link, page_path, site_root, scan.ids)
        if problem is not None:
            messages.append(problem)
    return [Problem(label, message) for message in messages]


def check_page(page: Path, root: Path | None = None) -> list[Problem]:
    """Check the page file ``page`` (see :func:`check_html`)."""
    return check_html(page.read_text(encoding="utf-8"), page=page, root=root)


def check_chunk(path: Path, root: Path) -> list[Problem]:
    """A script file in a site must be an evidence chunk of the one fixed, data-only shape
    (:mod:`evalarc.pages.case_views`) in a bundle's ``case-views/``, named by its SHA-256."""
    from evalarc.pages.case_views import CHUNK_DIR, parse_chunk

    label = path.relative_to(root).as_posix()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if path.parent.name != CHUNK_DIR or path.name != f"{digest}.js":
        return [Problem(label, "a script file that is not a content-addressed evidence chunk")]
    if parse_chunk(data) is None:
        return [Problem(label, "an evidence chunk that is not evalarcChunk(<JSON>); data only")]
    return []


def check_site(root: Path) -> list[Problem]:
    """Check that every file under ``root`` is of a type a site may hold (EvalArc's ``.html``
    pages or a suffix on the allow-list :data:`evalarc.bundle.HELD_SUFFIXES`), then every
    ``.html`` file, in path order, and every ``.js`` file (only evidence chunks may be scripts)."""
    from evalarc.bundle import PAGE_SUFFIX, is_active, refused_type

    problems: list[Problem] = []
    for path in sorted(root.rglob("*")):
        label = path.relative_to(root).as_posix()
        if not path.is_dir() and path.suffix.lower() != PAGE_SUFFIX and is_active(label):
            problems.append(Problem(label, refused_type("the file", label)))
    for page in sorted(root.rglob("*.html")):
        problems += check_page(page, root)
    for script in sorted(root.rglob("*.js")):
        problems += check_chunk(script, root)
    return problems
