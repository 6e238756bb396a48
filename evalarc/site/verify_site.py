"""``evalarc verify site/``: prove a built site follows from the evidence bundled inside it.

Steps (every problem is collected; the error names the first file and counts the rest):

1. The whole tree is scanned from ``lstat`` alone (:func:`evalarc.bundle.scan_tree`): bounded
   depth, file count and apparent size, and no symlink, hard link, device or control-character
   name, before a byte is read. ``manifest.json`` (``evalarc.site.v1``) is read strictly; a
   newer schema is refused. A file outside the index, the listed docs and the listed bundles
   is refused before anything is hashed.
2. Every bundle is verified as a report folder by recomputation
   (:func:`evalarc.verify.check_report_folder`): each of its files is a preserved input bound
   by hash to its report, or a file rendered again and compared byte for byte, or refused (an
   unknown file, an active document). Its page is rendered again and compared, and its
   ``evalarc-bundle.json`` must list exactly those files with the hashes just computed, and
   hash to what ``manifest.json`` records.
3. The docs and the index are rendered again with the builder's own functions and compared
   byte for byte.
4. Every page (all of them EvalArc's by now) passes the page checker (:mod:`evalarc.site.check`).

``verify --json`` lists every file with its role: ``preserved`` (a) or ``regenerated`` (b).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalarc.bundle import (
    MAX_EVIDENCE_FILE_BYTES,
    MAX_TREE_DEPTH,
    EvidenceFolder,
    load_report_json,
    private_copy,
    private_reads,
    scan_tree,
    shown_name,
)
from evalarc.canonical import sha256_bytes
from evalarc.errors import EvalArcError, VerificationError
from evalarc.pages.case_views import CHUNK_DIR
from evalarc.reports.check import PRESERVED, REGENERATED, VERIFICATION_SCHEMA
from evalarc.site.build import (
    BUNDLE_MANIFEST,
    BUNDLE_SCHEMA,
    DOCS_DIR,
    MAX_DOC_BYTES,
    PAGE_FILE,
    REPORTS_DIR,
    SITE_MANIFEST,
    SITE_SCHEMA,
    IndexEntry,
    built_at_problem,
    decode_doc,
    doc_links,
    doc_title,
    render_bundle,
    render_doc,
    render_index,
    title_problem,
)
from evalarc.site.check import check_html

SITE_SCOPE = (
    "Every file is a preserved input, bound by SHA-256 to the bundled report that names it, a "
    "file rendered again and compared byte for byte (report JSON, summaries, case lines, failure "
    "lists, events, pages, manifests), or a doc; nothing else is allowed. Docs are prose, not "
    "recomputed: published as the builder wrote them (each page rendered again from its Markdown "
    "and compared) and bound to no report; the site's title and build time are the builder's "
    "words too, checked only for their form. The hash binding cannot prove that a preserved "
    "input is what the source tool wrote, only that the report follows from it; the source "
    "tools' grading was not rerun and the inputs' origin is not authenticated."
)
PROSE = "prose"
"""The role of a site's docs (Markdown and its rendered page): prose, not recomputed."""
MAX_SITE_FILES = 200_000
MAX_SITE_BYTES = 16 * 1024 * 1024 * 1024
"""Apparent bytes a site may hold (each bundle is bounded more tightly by its own check)."""
MAX_BUNDLE_MANIFEST_BYTES = 16 * 1024 * 1024
_BUNDLE_PATH = re.compile(rf"{REPORTS_DIR}/[a-z0-9][a-z0-9-]*")
_DOC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.md")
_SCHEMA = re.compile(r"evalarc\.site\.v(\d+)")


def is_site(path: Path) -> bool:
    """Whether ``path`` looks like a built site (a folder with a site ``manifest.json``)."""
    manifest = path / SITE_MANIFEST
    if not path.is_dir() or manifest.is_symlink() or not manifest.is_file():
        return False
    try:
        # Under private_reads (verify) this is the manifest's one read: verify_site reads the
        # same private copy, so the file that decided "site" is the file verified as one.
        with private_reads(), private_copy(manifest, MAX_EVIDENCE_FILE_BYTES)[0].open("rb") as f:
            head = f.read(4096)
    except (OSError, EvalArcError):
        return False
    return b'"evalarc.site.v' in head


@dataclass
class _Findings:
    problems: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.problems.append(message)

    def raise_if_any(self) -> None:
        if not self.problems:
            return
        first = self.problems[0]
        more = len(self.problems) - 1
        suffix = f" (and {more} more problem{'s' if more != 1 else ''})" if more else ""
        raise VerificationError(first + suffix)


@dataclass(frozen=True)
class _Report:
    path: str
    label: str
    kind: str
    manifest_sha256: str


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise VerificationError(f"{SITE_MANIFEST}: {what} is not a string")
    return value


def _file_table(value: object, where: str) -> dict[str, tuple[str, int]]:
    if not isinstance(value, dict):
        raise VerificationError(f"{where}: files is not an object")
    table: dict[str, tuple[str, int]] = {}
    for name, record in value.items():
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("sha256"), str)
            or not isinstance(record.get("bytes"), int)
            or isinstance(record.get("bytes"), bool)
        ):
            raise VerificationError(f"{where}: the entry for {name!r} is malformed")
        table[str(name)] = (record["sha256"], record["bytes"])
    return table


def _read_manifest(folder: EvidenceFolder) -> dict[str, Any]:
    manifest = load_report_json(folder, SITE_MANIFEST)
    schema = manifest.get("schema_version")
    if schema != SITE_SCHEMA:
        match = _SCHEMA.fullmatch(str(schema))
        if match and int(match.group(1)) > 1:
            raise VerificationError(
                f"{SITE_MANIFEST} is {schema}, newer than this EvalArc reads ({SITE_SCHEMA})"
            )
        raise VerificationError(f"{SITE_MANIFEST} is not an EvalArc site manifest")
    return manifest


def _reports(manifest: Mapping[str, Any]) -> list[_Report]:
    rows = manifest.get("reports")
    if not isinstance(rows, list):
        raise VerificationError(f"{SITE_MANIFEST}: reports is not a list")
    reports: list[_Report] = []
    seen: set[str] = set()
    for row in rows:
        if not isinstance(row, dict):
            raise VerificationError(f"{SITE_MANIFEST}: a report entry is not an object")
        path = _text(row.get("path"), "a report path")
        if not _BUNDLE_PATH.fullmatch(path) or path in seen:
            raise VerificationError(f"{SITE_MANIFEST}: report path {path!r} is not allowed")
        seen.add(path)
        reports.append(
            _Report(
                path=path,
                label=_text(row.get("label"), "a report label"),
                kind=_text(row.get("kind"), "a report kind"),
                manifest_sha256=_text(row.get("manifest_sha256"), "a bundle manifest hash"),
            )
        )
    return reports


def _docs(manifest: Mapping[str, Any]) -> list[str]:
    docs = manifest.get("docs")
    if not isinstance(docs, list) or not all(isinstance(name, str) for name in docs):
        raise VerificationError(f"{SITE_MANIFEST}: docs is not a list of names")
    for name in docs:
        if not _DOC_NAME.fullmatch(name):
            raise VerificationError(f"{SITE_MANIFEST}: doc name {name!r} is not allowed")
    return [str(name) for name in docs]


def verify_site(root: Path) -> dict[str, Any]:
    """Verify the site at ``root``; raise VerificationError naming the first bad file. Every
    file is opened once and what is hashed is what is parsed (:func:`private_reads`)."""
    with private_reads():
        return _verify_site(root)


def _verify_site(root: Path) -> dict[str, Any]:
    """Verify the site at ``root``; raise VerificationError naming the first bad file."""
    folder = EvidenceFolder(root)
    shown = str(root)
    # The whole tree from lstat alone, before any byte is hashed: depth, counts and sizes are
    # bounded, links, devices and control-character names refused.
    tree = scan_tree(
        folder.root,
        shown=shown,
        max_files=MAX_SITE_FILES,
        max_bytes=MAX_SITE_BYTES,
        max_depth=MAX_TREE_DEPTH + 2,
    )
    present = {item.relative for item in tree}
    manifest = _read_manifest(folder)
    options = manifest.get("options")
    if not isinstance(options, dict):
        raise VerificationError(f"{SITE_MANIFEST}: options is not an object")
    # Free text no report vouches for: held to the form the builder writes (site build.py).
    title = _text(options.get("title"), "options.title")
    problem = title_problem(title)
    if problem is not None:
        raise VerificationError(f"{SITE_MANIFEST}: the title {problem}")
    built_at = _text(manifest.get("built_at"), "built_at")
    problem = built_at_problem(built_at)
    if problem is not None:
        raise VerificationError(f"{SITE_MANIFEST}: built_at {problem}")
    reports = _reports(manifest)
    docs = _docs(manifest)
    loose = _file_table(manifest.get("files"), SITE_MANIFEST)
    findings = _Findings()

    expected_loose = {PAGE_FILE} | {f"{DOCS_DIR}/{name}" for name in docs}
    expected_loose |= {f"{DOCS_DIR}/{name[:-3]}.html" for name in docs}
    for name in sorted(set(loose) ^ expected_loose):
        side = "lists" if name in loose else "does not list"
        findings.add(f"{SITE_MANIFEST} {side} {shown_name(name)}")
    bundle_paths = {report.path for report in reports}
    for name in sorted(present):
        top = "/".join(name.split("/", 2)[:2])
        if name != SITE_MANIFEST and name not in expected_loose and top not in bundle_paths:
            findings.add(f"{shown_name(name)} is not listed in any manifest of this site")
    findings.raise_if_any()  # nothing unknown is read, let alone hashed

    roles: dict[str, dict[str, Any]] = {}
    pages: list[str] = []
    entries: list[IndexEntry] = []
    results: list[dict[str, Any]] = []
    for report in reports:
        problems = _verify_bundle(folder, report, present, roles, entries, results)
        for problem in problems:
            findings.add(problem)
        if not problems:
            pages.append(f"{report.path}/{PAGE_FILE}")

    for name, (digest, size) in sorted(loose.items()):
        if name not in present:
            findings.add(f"{shown_name(name)} is missing (listed in {SITE_MANIFEST})")
            continue
        try:
            folder.hash_file(name, limit=MAX_DOC_BYTES * 4)
        except EvalArcError as error:
            findings.add(error.message)
            continue
        found = folder.files[name]
        if found.sha256 != digest or found.bytes != size:
            findings.add(f"{name} differs from its SHA-256 in {SITE_MANIFEST}")

    titles: list[tuple[str, str]] = []
    texts: dict[str, str] = {}
    for name in docs:
        source = f"{DOCS_DIR}/{name}"
        try:
            texts[name] = decode_doc(source, folder.read_bytes(source, limit=MAX_DOC_BYTES))
        except EvalArcError as error:
            findings.add(error.message)
            continue
        titles.append((name, doc_title(texts[name], name[:-3])))
        roles[source] = {**folder.files_json()[source], "role": PROSE}
    for name, text in texts.items():
        html = render_doc(text, title=doc_title(text, name[:-3]), docs=doc_links(titles, ""))
        page_name = f"{DOCS_DIR}/{name[:-3]}.html"
        if name_differs(folder, page_name, html):
            findings.add(f"{page_name} differs from the page rendered from {DOCS_DIR}/{name}")
        else:
            pages.append(page_name)
            roles[page_name] = {**folder.files_json()[page_name], "role": PROSE}

    if len(entries) == len(reports) and len(texts) == len(docs):
        index = render_index(title, built_at, entries, doc_links(titles, f"{DOCS_DIR}/"))
        if name_differs(folder, PAGE_FILE, index):
            findings.add(f"{PAGE_FILE} differs from the index rendered from {SITE_MANIFEST}")
        else:
            pages.append(PAGE_FILE)
            roles[PAGE_FILE] = {**folder.files_json()[PAGE_FILE], "role": REGENERATED}

    findings.raise_if_any()
    # Every page is now one EvalArc rendered; check each (links resolve, CSP holds).
    for page in sorted(pages):
        # The page as it was compared (its private copy), not the path read again.
        text = folder.read_bytes(page).decode("utf-8")
        for page_problem in check_html(text, page=folder.root / page, root=folder.root):
            findings.add(str(page_problem))
    findings.raise_if_any()
    manifest_data = folder.read_bytes(SITE_MANIFEST)
    roles[SITE_MANIFEST] = {
        "sha256": sha256_bytes(manifest_data),
        "bytes": len(manifest_data),
        "role": PRESERVED,
    }
    return {
        "schema_version": VERIFICATION_SCHEMA,
        "verified": True,
        "kind": "site",
        "passed": all(result["passed"] for result in results),
        "reports": results,
        "docs": docs,
        "files": dict(sorted(roles.items())),
        "scope": SITE_SCOPE,
    }


def _verify_bundle(
    folder: EvidenceFolder,
    report: _Report,
    present: set[str],
    roles: dict[str, dict[str, Any]],
    entries: list[IndexEntry],
    results: list[dict[str, Any]],
) -> list[str]:
    """Verify one bundle: its manifest against the site manifest, the bundle by recomputation
    (which refuses unknown files), its page by rendering, its manifest's table against the
    hashes verification recorded. The problems found (none: it verified)."""
    manifest_path = f"{report.path}/{BUNDLE_MANIFEST}"
    page_name = f"{report.path}/{PAGE_FILE}"
    if manifest_path not in present:
        return [f"{manifest_path} is missing (listed in {SITE_MANIFEST})"]
    try:
        data = folder.read_bytes(manifest_path, limit=MAX_BUNDLE_MANIFEST_BYTES)
        if sha256_bytes(data) != report.manifest_sha256:
            return [f"{manifest_path} differs from the SHA-256 {SITE_MANIFEST} records"]
        bundle = load_report_json(folder, manifest_path)
        if bundle.get("schema_version") != BUNDLE_SCHEMA:
            return [f"{manifest_path} is not an EvalArc bundle manifest"]
        if bundle.get("kind") != report.kind or bundle.get("source") != report.label:
            return [f"{manifest_path} disagrees with {SITE_MANIFEST}"]
        listed = _file_table(bundle.get("files"), manifest_path)
    except EvalArcError as error:
        return [error.message]
    if PAGE_FILE not in listed:
        return [f"{manifest_path} does not list the page {PAGE_FILE}"]
    # Before any recomputation: the bundle's files against its manifest, by name, then by
    # hash (the bundle's tree is bounded by scan_tree first, so no oversized set is hashed).
    slug = report.path.split("/", 1)[1]
    try:
        tree = scan_tree(folder.root / REPORTS_DIR / slug, shown=report.path)
    except EvalArcError as error:
        return [error.message]
    on_disk = {item.relative for item in tree} - {BUNDLE_MANIFEST}
    problems: list[str] = []
    for name in sorted(on_disk - set(listed)):
        problems.append(
            f"{report.path}/{shown_name(name)} is not listed in any manifest of this site"
        )
    for name in sorted(set(listed) - on_disk):
        problems.append(f"{report.path}/{shown_name(name)} is missing (listed in {manifest_path})")
    for name in sorted(set(listed) & on_disk):
        try:
            folder.hash_file(f"{report.path}/{name}")
        except EvalArcError as error:
            problems.append(error.message)
            continue
        record = folder.files[f"{report.path}/{name}"]
        if (record.sha256, record.bytes) != listed[name]:
            problems.append(f"{report.path}/{name} differs from its SHA-256 in {manifest_path}")
    if problems:
        return problems
    try:
        page = render_bundle(folder.root / REPORTS_DIR / slug)
    except EvalArcError as error:
        return [f"{report.path}: {error.message}"]
    if page.kind != report.kind:
        problems.append(f"{report.path} holds a {page.kind} report, not {report.kind}")
    found = {name: (row["sha256"], row["bytes"]) for name, row in page.verified.items()}
    chunks: dict[str, dict[str, Any]] = {}
    for relative, expected in sorted(page.files.items()):
        file_name = f"{report.path}/{relative}"
        if file_name not in present:
            continue  # named below as missing from the manifest's listing
        if file_differs(folder, file_name, expected):
            problems.append(f"{file_name} differs from the file rendered from its bundle")
            continue
        record = folder.files[file_name]
        found[relative] = (record.sha256, record.bytes)
        chunks[file_name] = {"sha256": record.sha256, "bytes": record.bytes, "role": REGENERATED}
    for relative in sorted(listed):
        if relative.startswith(f"{CHUNK_DIR}/") and relative not in page.files:
            problems.append(f"{report.path}/{relative} is not rendered from its bundle")
    page_data: bytes | None = None
    if page_name in present:
        try:
            page_data = folder.read_bytes(page_name)
        except EvalArcError as error:
            problems.append(error.message)
    if page_data is not None:
        found[PAGE_FILE] = (sha256_bytes(page_data), len(page_data))
    for name in sorted(set(listed) | set(found)):
        if name not in found:
            problems.append(
                f"{report.path}/{shown_name(name)} is missing (listed in {manifest_path})"
            )
        elif name not in listed:
            problems.append(f"{report.path}/{shown_name(name)} is not listed in {manifest_path}")
        elif listed[name] != found[name]:
            problems.append(f"{report.path}/{name} differs from its SHA-256 in {manifest_path}")
    if page_data is not None and page_data != page.html.encode("utf-8"):
        problems.append(f"{page_name} differs from the page rendered from its bundle")
    if problems:
        return problems
    assert page_data is not None
    page_record = folder.files[page_name]
    for name, row in page.verified.items():
        roles[f"{report.path}/{name}"] = row
    roles.update(chunks)
    roles[page_name] = {
        "sha256": page_record.sha256,
        "bytes": page_record.bytes,
        "role": REGENERATED,
    }
    roles[manifest_path] = {
        "sha256": sha256_bytes(data),
        "bytes": len(data),
        "role": REGENERATED,
    }
    entries.append(IndexEntry(slug, report.label, page.kind, page.passed, page.verdict))
    results.append({"path": report.path, "kind": page.kind, "passed": page.passed})
    return []


def file_differs(folder: EvidenceFolder, name: str, data: bytes) -> bool:
    """Whether the rendered file ``name`` differs from ``data`` (a missing file differs)."""
    try:
        return folder.read_bytes(name) != data
    except EvalArcError:
        return True


def name_differs(folder: EvidenceFolder, name: str, html: str) -> bool:
    """Whether the page file ``name`` differs from ``html`` (a missing page differs)."""
    try:
        return folder.read_bytes(name) != html.encode("utf-8")
    except EvalArcError:
        return True
