"""``evalarc site build``: report folders in, one self-contained static site out.

Layout of a site::

    index.html                     every report with its verdict, and the docs
    manifest.json                  evalarc.site.v1: options, reports, docs, SHA-256 of the rest
    reports/<slug>/                a byte copy of one report folder (inputs, params, report JSON,
                                   recordings), whose index.html is the site page for it
    reports/<slug>/evalarc-bundle.json   evalarc.site-bundle.v1: SHA-256 of every bundle file
    docs/<name>.md, docs/<name>.html     each Markdown doc and its rendered page

Every report folder is copied first and then verified from the copy with
:func:`evalarc.verify.verify_report_folder`, and its page is rendered from the same copy, so a
site never shows a report that does not follow from its own bundle, and ``evalarc verify site/``
(:mod:`evalarc.site.verify_site`) can redo every step with the functions defined here.

Each bundle's page is its report kind's own page (``ReportKind.page``, listed in
:data:`evalarc.reports.registry.KINDS`), rendered exactly as the report folder's ``index.html``
but with a link home.

Pages: jinja2 with autoescape (the shared :func:`evalarc.pages.render.environment`), CSS and JS
inlined from ``assets/`` and allowed by hash in a Content-Security-Policy without
``'unsafe-inline'``; data islands only through the escaping ``tojson`` filter. The same inputs
give the same bytes; the build time shown on the index comes from ``SOURCE_DATE_EPOCH`` when set.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from markupsafe import Markup

from evalarc import __version__, schemas
from evalarc.bundle import (
    MAX_EVIDENCE_FILE_BYTES,
    PARAMS_FILE,
    EvidenceFolder,
    load_report_json,
    private_reads,
    scan_tree,
    staged_folder,
    write_bytes,
    write_json,
    write_text,
)
from evalarc.canonical import pretty_json, sha256_bytes, sha256_file
from evalarc.clock import timestamp
from evalarc.errors import EvalArcError, InputError, OutputError, UsageError, VerificationError
from evalarc.pages.case_views import CHUNK_DIR
from evalarc.pages.render import render_page
from evalarc.pages.view import render_view
from evalarc.reports.check import (
    REGENERATED,
    FolderVerdict,
    check_report_folder,
    is_process_record,
)
from evalarc.reports.registry import kind_named
from evalarc.terminal import has_unsafe_characters

SITE_SCHEMA = schemas.SITE
BUNDLE_SCHEMA = schemas.SITE_BUNDLE
SITE_MANIFEST = "manifest.json"
BUNDLE_MANIFEST = "evalarc-bundle.json"
PAGE_FILE = "index.html"
REPORTS_DIR = "reports"
DOCS_DIR = "docs"
DEFAULT_TITLE = "EvalArc reports"
MAX_TITLE_CHARS = 120
MAX_REPORTS = 1000
MAX_BUNDLE_FILES = 20_000
MAX_BUNDLE_BYTES = 2 * 1024 * 1024 * 1024
MAX_DOC_BYTES = 1024 * 1024
DISCOVERY_DEPTH = 6
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
SLUG_CHARS = 60
REPORT_HOME = "../../index.html"
DOC_HOME = "../index.html"


# --------------------------------------------------------------------------- rendering


def render_site_page(template: str, *, title: str, home: str | None, **context: Any) -> str:
    """A site page: the shared renderer (autoescape, inline CSS and JS allowed by hash)."""
    return render_page(template, title=title, home=home, **context)


# --------------------------------------------------------------------------- page kinds


# --------------------------------------------------------------------------- bundles


@dataclass(frozen=True)
class BundlePage:
    """A verified bundle and its rendered page."""

    kind: str
    passed: bool
    verdict: str
    html: str
    files: dict[str, bytes] = field(default_factory=dict)
    """Rendered files beside the page (evidence chunks), by path in the bundle; ``verify``
    renders them again and compares them byte for byte, like the page."""
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every verified file of the bundle but its page, chunks and manifest: SHA-256, size and
    role (preserved or regenerated)."""


def render_bundle(bundle: Path) -> BundlePage:
    """Verify the report folder ``bundle`` by recomputation and render its site page.

    Raises VerificationError (from verify) or InputError; the caller adds the bundle's name.
    The bundle's own page and manifest are the caller's to compare."""
    verdict = check_report_folder(bundle, site_bundle=True)
    page = _bundle_page(bundle, verdict)
    return replace(page, verified=verdict.files)


def _bundle_page(bundle: Path, verdict: FolderVerdict) -> BundlePage:
    """The site page of a verified bundle, from the report and options it was verified with."""
    kind = kind_named(verdict.kind.name)
    if kind is None:
        raise InputError(f"no site page is defined for {verdict.kind.name} reports")
    kind_name, passed = kind.name, bool(verdict.summary["passed"])
    view = kind.page(EvidenceFolder(bundle), verdict.params, verdict.report)
    html = render_view(view, home=REPORT_HOME)
    return BundlePage(kind_name, passed, view.verdict, html, dict(view.files))


def _kind_label(name: str) -> str:
    kind = kind_named(name)
    return kind.label if kind is not None else name


def check_bundle_files(bundle: Path, verdict: Any) -> dict[str, dict[str, Any]]:
    """For a bundle verified on its own (``evalarc verify site/reports/x``): its site page and
    evidence chunks must be the ones rendered from it and its manifest must list exactly the
    bundle's files; return those as regenerated files."""
    folder = EvidenceFolder(bundle)
    page = _bundle_page(bundle, verdict)
    rendered = {PAGE_FILE: page.html.encode("utf-8"), **page.files}
    listed = {
        name: {"sha256": row["sha256"], "bytes": row["bytes"]}
        for name, row in verdict.files.items()
    }
    for name, expected in sorted(rendered.items()):
        data = folder.read_bytes(name)
        if data != expected:
            raise VerificationError(f"{name} differs from the file rendered from its bundle")
        listed[name] = {"sha256": sha256_bytes(data), "bytes": len(data)}
    manifest = load_report_json(folder, BUNDLE_MANIFEST)
    label = manifest.get("source")
    if not isinstance(label, str):
        raise VerificationError(f"{BUNDLE_MANIFEST} names no source")
    expected_manifest = bundle_manifest(verdict.kind.name, label, listed)
    if folder.read_bytes(BUNDLE_MANIFEST) != pretty_json(expected_manifest).encode("utf-8"):
        raise VerificationError(f"{BUNDLE_MANIFEST} does not list exactly the bundle's files")
    return {
        name: {**folder.files_json()[name], "role": REGENERATED}
        for name in (*rendered, BUNDLE_MANIFEST)
    }


def bundle_files(bundle: Path) -> dict[str, dict[str, Any]]:
    """SHA-256 and size of every file in ``bundle`` except its bundle manifest, by POSIX path."""
    files: dict[str, dict[str, Any]] = {}
    for relative, path in walk_files(bundle):
        if relative == BUNDLE_MANIFEST:
            continue
        digest, size = sha256_file(path)
        files[relative] = {"sha256": digest, "bytes": size}
    return files


def bundle_manifest(kind: str, label: str, files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "schema_version": BUNDLE_SCHEMA,
        "kind": kind,
        "source": label,
        "page": PAGE_FILE,
        "files": dict(sorted(files.items())),
    }


def walk_files(root: Path, *, limit: int = MAX_BUNDLE_FILES) -> Iterator[tuple[str, Path]]:
    """Every regular file under ``root`` as (POSIX relative path, path), sorted, refusing
    symlinks and special files and stopping at ``limit`` files."""
    count = 0
    stack = [(root, PurePosixPath())]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name, reverse=True)
        except OSError as error:
            raise InputError(f"cannot read {folder}: {error.strerror or error}") from None
        for entry in entries:
            relative = prefix / entry.name
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                raise InputError(f"{entry.path} is a symlink; symlinks are refused")
            if stat.S_ISDIR(info.st_mode):
                stack.append((Path(entry.path), relative))
            elif stat.S_ISREG(info.st_mode):
                count += 1
                if count > limit:
                    raise InputError(f"{root.name} holds more than {limit} files")
                yield relative.as_posix(), Path(entry.path)
            else:
                raise InputError(f"{entry.path} is not a regular file")
    return


def _sorted_walk(root: Path) -> list[tuple[str, Path]]:
    return sorted(walk_files(root))


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class ReportSource:
    path: Path
    label: str
    """Shown on the index: the folder's name, or its path inside the directory given."""


def _is_report_folder(path: Path) -> bool:
    params = path / PARAMS_FILE
    return params.is_file() and not params.is_symlink()


def discover_reports(paths: Sequence[Path]) -> list[ReportSource]:
    """Report folders named directly, or found (depth <= DISCOVERY_DEPTH) in directories.

    A report folder is a directory with a ``params.json``; dot-folders, symlinks and built
    sites are skipped. Sorted by label, then path, so argument order does not matter."""
    found: dict[Path, ReportSource] = {}
    for given in paths:
        if given.is_symlink():
            raise InputError(f"{given} is a symlink; pass the folder itself")
        if not given.is_dir():
            raise InputError(f"{given} is not a folder")
        if _is_report_folder(given):
            resolved = given.resolve()
            found.setdefault(resolved, ReportSource(resolved, given.resolve().name))
            continue
        before = len(found)
        for folder in _search(given.resolve(), depth=0):
            relative = folder.relative_to(given.resolve()).as_posix()
            found.setdefault(folder, ReportSource(folder, relative))
        if len(found) == before:
            raise InputError(f"{given} holds no report folder (no {PARAMS_FILE} found)")
    if len(found) > MAX_REPORTS:
        raise InputError(f"{len(found)} report folders found; at most {MAX_REPORTS} per site")
    return sorted(found.values(), key=lambda source: (source.label, str(source.path)))


def _search(folder: Path, depth: int) -> Iterator[Path]:
    if (folder / SITE_MANIFEST).is_file() and (folder / REPORTS_DIR).is_dir():
        return  # a built site: its bundles are not new inputs
    try:
        children = sorted(entry for entry in folder.iterdir())
    except OSError as error:
        raise InputError(f"cannot read {folder}: {error.strerror or error}") from None
    for child in children:
        if child.name.startswith(".") or child.name in SKIPPED_DIRS:
            continue
        if child.is_symlink() or not child.is_dir():
            continue
        if _is_report_folder(child):
            yield child
        elif depth + 1 < DISCOVERY_DEPTH:
            yield from _search(child, depth + 1)


def slug_for(label: str, taken: set[str]) -> str:
    """A URL-safe folder name for ``label``, unique among ``taken`` (which it extends)."""
    base = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:SLUG_CHARS].strip("-")
    base = base or "report"
    slug, number = base, 2
    while slug in taken:
        slug = f"{base}-{number}"
        number += 1
    taken.add(slug)
    return slug


# --------------------------------------------------------------------------- docs


@dataclass(frozen=True)
class DocLink:
    href: str
    title: str


@dataclass(frozen=True)
class DocPage:
    title: str
    body: Markup
    """HTML from markdown-it (raw HTML off) and pygments; the only markup a template gets."""
    docs: list[DocLink]


def _highlight(code: str, language: str, attrs: str) -> str:
    # pygments ships no type hints (types-Pygments is not a dependency).
    from pygments import highlight  # type: ignore[import-untyped]
    from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
    from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]

    if not language:
        return ""
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        return ""  # markdown-it escapes and wraps it as plain code
    spans = str(highlight(code, lexer, HtmlFormatter(nowrap=True)))
    return f'<pre class="highlight"><code>{spans}</code></pre>\n'


def _external(href: str) -> bool:
    parts = urlsplit(href)
    return bool(parts.scheme or parts.netloc) or href.startswith("//")


def _doc_href(href: str) -> str:
    """Point a link to a sibling ``.md`` at its rendered ``.html``."""
    parts = urlsplit(href)
    if parts.path.endswith(".md"):
        path = parts.path[:-3] + ".html"
        return path + (f"#{parts.fragment}" if parts.fragment else "")
    return href


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt
    from markdown_it.common.utils import escapeHtml

    md = MarkdownIt("commonmark", {"html": False, "highlight": _highlight}).enable("table")

    def link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        href = str(token.attrGet("href") or "")
        stack = env.setdefault("links", [])
        if _external(href):
            # No request may leave the page: an external link is shown, not followed.
            stack.append(href)
            return '<span class="external">'
        stack.append(None)
        token.attrSet("href", _doc_href(href))
        return str(self.renderToken(tokens, idx, options, env))

    def link_close(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        href = env["links"].pop()
        if href is None:
            return str(self.renderToken(tokens, idx, options, env))
        return f"</span> (<code>{escapeHtml(href)}</code>)"

    def image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        alt = self.renderInlineAsText(tokens[idx].children or [], options, env)
        return f'<span class="img-alt">[image: {escapeHtml(alt)}]</span>'

    def heading_ids(state: Any) -> None:
        # Each heading gets a stable id from its text, so "other.md#setup" can resolve.
        taken: set[str] = set()
        tokens = state.tokens
        for index, token in enumerate(tokens):
            if token.type == "heading_open" and index + 1 < len(tokens):
                text = tokens[index + 1].content
                token.attrSet("id", slug_for(text, taken))

    md.core.ruler.push("evalarc_heading_ids", heading_ids)
    md.add_render_rule("link_open", link_open)
    md.add_render_rule("link_close", link_close)
    md.add_render_rule("image", image)
    return md


def doc_title(text: str, fallback: str) -> str:
    """The first level-1 heading, without Markdown code marks, else ``fallback``."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip().strip("#").replace("`", "").strip() or fallback
    return fallback


def render_doc(text: str, *, title: str, docs: list[DocLink]) -> str:
    body = Markup(_markdown().render(text, {}))
    return render_site_page(
        "doc.html.j2", title=title, home=DOC_HOME, page=DocPage(title, body, docs)
    )


def doc_sources(docs_dir: Path) -> list[tuple[str, bytes]]:
    """``docs_dir``'s top-level ``*.md`` files as (name, bytes), sorted by name."""
    if docs_dir.is_symlink() or not docs_dir.is_dir():
        raise InputError(f"docs folder {docs_dir} is not a folder")
    found: list[tuple[str, bytes]] = []
    for path in sorted(docs_dir.glob("*.md")):
        if path.is_symlink() or not path.is_file():
            raise InputError(f"{path} is not a regular file")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.md", path.name):
            raise InputError(f"{path}: doc names may hold only letters, digits, '.', '_', '-'")
        data = path.read_bytes()
        if len(data) > MAX_DOC_BYTES:
            raise InputError(f"{path} exceeds {MAX_DOC_BYTES} bytes")
        found.append((path.name, data))
    return found


def decode_doc(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name} is not UTF-8") from None


def doc_links(names_and_titles: Sequence[tuple[str, str]], prefix: str) -> list[DocLink]:
    return [
        DocLink(prefix + posixpath.splitext(name)[0] + ".html", title)
        for name, title in names_and_titles
    ]


# --------------------------------------------------------------------------- index


@dataclass(frozen=True)
class IndexRow:
    href: str
    label: str
    kind: str
    tone: str
    verdict: str
    """Symbol and word, so the verdict never rests on colour: ``✓ pass`` / ``✗ fail``."""
    summary: str


@dataclass(frozen=True)
class IndexPage:
    title: str
    line: str
    rows: list[IndexRow]
    docs: list[DocLink]
    built_at: str


@dataclass(frozen=True)
class IndexEntry:
    """What the index needs to know about one bundle."""

    slug: str
    label: str
    kind: str
    passed: bool
    verdict: str


def build_index_page(
    title: str, built_at: str, entries: Sequence[IndexEntry], docs: list[DocLink]
) -> IndexPage:
    failing = sum(1 for entry in entries if not entry.passed)
    rows = [
        IndexRow(
            href=f"{REPORTS_DIR}/{entry.slug}/{PAGE_FILE}",
            label=entry.label,
            kind=_kind_label(entry.kind),
            tone="ok" if entry.passed else "bad",
            verdict="✓ pass" if entry.passed else "✗ fail",
            summary=entry.verdict,
        )
        for entry in entries
    ]
    return IndexPage(
        title=title,
        line=f"{len(entries)} report(s), {failing} with a failing verdict. "
        "Every report was recomputed from its bundled inputs when this site was built.",
        rows=rows,
        docs=docs,
        built_at=built_at,
    )


def render_index(
    title: str, built_at: str, entries: Sequence[IndexEntry], docs: list[DocLink]
) -> str:
    page = build_index_page(title, built_at, entries, docs)
    return render_site_page("index.html.j2", title=title, home=None, page=page)


# --------------------------------------------------------------------------- build


def title_problem(title: str) -> str | None:
    """What is wrong with a site title, or None. The title is free text the builder chose (no
    report vouches for it), so it is held to a form a reader can trust to show what it says:
    1 to :data:`MAX_TITLE_CHARS` characters, not blank, and no control, bidi, zero-width or
    other invisible character (which could reorder or hide words)."""
    if not title.strip() or len(title) > MAX_TITLE_CHARS:
        return f"must be 1 to {MAX_TITLE_CHARS} characters"
    if has_unsafe_characters(title):
        return "may not contain control characters (nor bidi, zero-width or other invisible ones)"
    return None


BUILT_AT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""The form of a site's build time: :func:`evalarc.clock.timestamp`, the build's clock or
``SOURCE_DATE_EPOCH``, in UTC to the second."""
_BUILT_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def built_at_problem(value: str) -> str | None:
    """What is wrong with a site's build time, or None: it must be a real UTC time in exactly
    the form ``site build`` writes (``2026-11-30T13:22:10Z``), never free text."""
    if not _BUILT_AT.fullmatch(value):
        return "is not a UTC time of the form YYYY-MM-DDTHH:MM:SSZ (as site build writes it)"
    try:
        datetime.strptime(value, BUILT_AT_FORMAT)
    except ValueError:
        return "is not a real date and time"
    return None


@dataclass(frozen=True)
class SiteOptions:
    title: str = DEFAULT_TITLE

    def validate(self) -> None:
        problem = title_problem(self.title)
        if problem is not None:
            raise UsageError(f"--title {problem}")


@dataclass(frozen=True)
class BuiltSite:
    output: Path
    reports: list[IndexEntry]
    docs: list[str]

    @property
    def failing(self) -> int:
        return sum(1 for entry in self.reports if not entry.passed)


def _refuse_nesting(output: Path, inputs: Sequence[Path]) -> None:
    target = Path(os.path.abspath(output))
    for given in inputs:
        source = given.resolve()
        if target == source or source in target.parents:
            raise UsageError(f"output folder {output} is inside the input {given}; choose another")


def _params_of(source: ReportSource) -> dict[str, Any]:
    """The folder's params.json as an object, or an empty one (verify refuses it later)."""
    try:
        document = load_report_json(EvidenceFolder(source.path), PARAMS_FILE)
    except EvalArcError:
        return {}
    return document if isinstance(document, dict) else {}


def _copy_bundle(source: ReportSource, dest: Path) -> None:
    """Copy a report folder into the site, refusing it (before a byte is copied) when it holds
    a symlink, hard link, device file, a name with control characters, or too much; what is
    copied is then verified from the copy, where an unknown or active file refuses it too."""
    tree = scan_tree(
        source.path,
        shown=str(source.path),
        max_files=MAX_BUNDLE_FILES,
        max_bytes=MAX_BUNDLE_BYTES,
        error=InputError,
    )
    params_document = _params_of(source)
    for item in tree:
        if item.relative == PAGE_FILE or item.relative.startswith(f"{CHUNK_DIR}/"):
            continue  # the folder's page and its evidence chunks: the site renders its own
        if is_process_record(params_document, item.relative):
            continue  # a record verify cannot check (hillclimb-run's log): never published
        if item.relative == BUNDLE_MANIFEST:
            raise InputError(f"{source.path}/{item.relative}: a reserved file name")
        target = dest.joinpath(*PurePosixPath(item.relative).parts)
        copied = _copy_file(item.path, target, MAX_EVIDENCE_FILE_BYTES)
        if copied != item.bytes:
            raise InputError(f"{source.path}/{item.relative} changed while it was being copied")


def _copy_file(source: Path, target: Path, limit: int) -> int:
    """Copy ``source`` to ``target`` a chunk at a time (a bundle's diff.json may be hundreds of
    megabytes); the bytes copied, at most ``limit`` + 1 (the caller compares the count)."""
    copied = 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with source.open("rb") as reader, target.open("wb") as writer:
            while copied <= limit and (chunk := reader.read(min(_COPY_CHUNK, limit + 1 - copied))):
                writer.write(chunk)
                copied += len(chunk)
    except OSError as error:
        raise InputError(f"cannot copy {source}: {error.strerror or error}") from None
    return copied


_COPY_CHUNK = 1 << 20


def build_site(
    inputs: Sequence[Path],
    output: Path,
    *,
    options: SiteOptions | None = None,
    docs_dir: Path | None = None,
    on_report: Callable[[str], None] | None = None,
) -> BuiltSite:
    """Build a new site at ``output`` from report folders (or directories of them) and docs.

    Nothing is written unless every report verifies and every page renders; ``output`` must
    not exist and may not lie inside an input."""
    with private_reads():
        return _build_site(inputs, output, options or SiteOptions(), docs_dir, on_report)


def _build_site(
    inputs: Sequence[Path],
    output: Path,
    options: SiteOptions,
    docs_dir: Path | None,
    on_report: Callable[[str], None] | None,
) -> BuiltSite:
    """:func:`build_site` inside one :func:`private_reads`: each copied bundle file is read once
    by the verification and the page, from a private copy of the bytes it hashed (the bundle is
    itself a copy in the 0700 staging folder, which is what is published)."""
    options.validate()
    sources = discover_reports(inputs)
    docs = doc_sources(docs_dir) if docs_dir is not None else []
    _refuse_nesting(output, [*inputs, *([docs_dir] if docs_dir is not None else [])])
    built_at = timestamp()
    problem = built_at_problem(built_at)
    if problem is not None:
        # A clock (or SOURCE_DATE_EPOCH) outside years 1000-9999: verify would refuse the site.
        raise UsageError(f"the build time {built_at!r} {problem}")
    taken: set[str] = set()
    entries: list[IndexEntry] = []
    report_rows: list[dict[str, Any]] = []
    with staged_folder(output) as staging:
        for source in sources:
            slug = slug_for(source.label, taken)
            bundle = staging / REPORTS_DIR / slug
            _copy_bundle(source, bundle)
            try:
                page = render_bundle(bundle)
            except EvalArcError as error:
                raise InputError(f"{source.path}: {error.message}") from None
            write_text(bundle / PAGE_FILE, page.html)
            for relative, data in sorted(page.files.items()):
                target = bundle.joinpath(*PurePosixPath(relative).parts)
                if target.exists():
                    raise InputError(f"{source.path}/{relative}: a reserved file name")
                write_bytes(target, data)
            manifest = bundle_manifest(page.kind, source.label, bundle_files(bundle))
            write_json(bundle / BUNDLE_MANIFEST, manifest)
            entries.append(IndexEntry(slug, source.label, page.kind, page.passed, page.verdict))
            report_rows.append(
                {
                    "path": f"{REPORTS_DIR}/{slug}",
                    "label": source.label,
                    "kind": page.kind,
                    "manifest_sha256": sha256_bytes((bundle / BUNDLE_MANIFEST).read_bytes()),
                }
            )
            if on_report is not None:
                on_report(f"{source.label}: {page.kind}, {'pass' if page.passed else 'fail'}")
        titles = [(name, doc_title(decode_doc(name, data), name[:-3])) for name, data in docs]
        for name, data in docs:
            text = decode_doc(name, data)
            write_bytes(staging / DOCS_DIR / name, data)
            write_text(
                staging / DOCS_DIR / (name[:-3] + ".html"),
                render_doc(text, title=doc_title(text, name[:-3]), docs=doc_links(titles, "")),
            )
        index = render_index(options.title, built_at, entries, doc_links(titles, f"{DOCS_DIR}/"))
        write_text(staging / PAGE_FILE, index)
        files = {
            relative: {"sha256": sha256_bytes(data), "bytes": len(data)}
            for relative, data in _loose_files(staging)
        }
        write_json(
            staging / SITE_MANIFEST,
            site_manifest(options, built_at, report_rows, [name for name, _ in docs], files),
        )
        _self_check(staging)
    return BuiltSite(output, entries, [name for name, _ in docs])


def _loose_files(staging: Path) -> Iterator[tuple[str, bytes]]:
    """The files outside bundles: the index and the docs."""
    yield PAGE_FILE, (staging / PAGE_FILE).read_bytes()
    docs = staging / DOCS_DIR
    if docs.is_dir():
        for relative, path in _sorted_walk(docs):
            yield f"{DOCS_DIR}/{relative}", path.read_bytes()


def site_manifest(
    options: SiteOptions,
    built_at: str,
    reports: list[dict[str, Any]],
    docs: list[str],
    files: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    return {
        "schema_version": SITE_SCHEMA,
        "generator": f"EvalArc {__version__}",
        "built_at": built_at,
        "options": {"title": options.title},
        "reports": reports,
        "docs": docs,
        "files": dict(sorted(files.items())),
    }


def _self_check(root: Path) -> None:
    from evalarc.site.check import check_site

    problems = check_site(root)
    if problems:
        raise OutputError(f"the built site fails its own page check: {problems[0]}")
