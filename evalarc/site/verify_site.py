"""``evalarc verify site/``: prove a built site follows from the evidence bundled inside it.

Steps (every problem is collected; the error names the first file and counts the rest):

1. ``manifest.json`` (``evalarc.site.v1``) is read strictly; a newer schema is refused.
2. Every file in the site must be listed, either in ``manifest.json`` (the index and the docs) or
   in its bundle's ``evalarc-bundle.json``; every listed file must exist with its SHA-256 and
   size; each bundle manifest must hash to what ``manifest.json`` records. So an added, removed
   or edited file is named.
3. Every bundle is verified as a report folder by recomputation
   (:func:`evalarc.verify.verify_report_folder`: edited inputs, recordings, params or report
   JSON fail here even when the manifests were rewritten to match).
4. Every page is rendered again with the builder's own functions and compared byte for byte: the
   report pages from their bundles, the docs from their bundled Markdown, the index from the
   recorded options and the recomputed verdicts.
5. Every page passes the page checker (:mod:`evalarc.site.check`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalarc.bundle import EvidenceFolder, load_report_json
from evalarc.canonical import sha256_bytes
from evalarc.errors import EvalArcError, VerificationError
from evalarc.site.build import (
    BUNDLE_MANIFEST,
    BUNDLE_SCHEMA,
    DOCS_DIR,
    PAGE_FILE,
    REPORTS_DIR,
    SITE_MANIFEST,
    SITE_SCHEMA,
    IndexEntry,
    decode_doc,
    doc_links,
    doc_title,
    render_bundle,
    render_doc,
    render_index,
    walk_files,
)
from evalarc.site.case_page import CHUNK_DIR
from evalarc.site.check import check_site

SITE_SCOPE = (
    "Every file was checked against the site's SHA-256 manifests, every bundled report was "
    "recomputed from its preserved inputs and recorded options, and every page was rendered "
    "again and compared byte for byte; the source tools' grading was not rerun and the inputs' "
    "origin is not authenticated."
)
MAX_SITE_FILES = 200_000
_BUNDLE_PATH = re.compile(rf"{REPORTS_DIR}/[a-z0-9][a-z0-9-]*")
_DOC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.md")
_SCHEMA = re.compile(r"evalarc\.site\.v(\d+)")


def is_site(path: Path) -> bool:
    """Whether ``path`` looks like a built site (a folder with a site ``manifest.json``)."""
    manifest = path / SITE_MANIFEST
    if not path.is_dir() or not manifest.is_file():
        return False
    try:
        head = manifest.read_bytes()[:4096]
    except OSError:
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
    """Verify the site at ``root``; raise VerificationError naming the first bad file."""
    from evalarc.verify import VERIFICATION_SCHEMA

    folder = EvidenceFolder(root)
    manifest = _read_manifest(folder)
    options = manifest.get("options")
    if not isinstance(options, dict):
        raise VerificationError(f"{SITE_MANIFEST}: options is not an object")
    title = _text(options.get("title"), "options.title")
    built_at = _text(manifest.get("built_at"), "built_at")
    reports = _reports(manifest)
    docs = _docs(manifest)
    loose = _file_table(manifest.get("files"), SITE_MANIFEST)
    findings = _Findings()

    expected_loose = {PAGE_FILE} | {f"{DOCS_DIR}/{name}" for name in docs}
    expected_loose |= {f"{DOCS_DIR}/{name[:-3]}.html" for name in docs}
    for name in sorted(set(loose) ^ expected_loose):
        side = "lists" if name in loose else "does not list"
        findings.add(f"{SITE_MANIFEST} {side} {name}")

    # Every listed file, with the manifest that lists it.
    listed: dict[str, tuple[str, int, str]] = {
        name: (*record, SITE_MANIFEST) for name, record in loose.items()
    }
    listed[SITE_MANIFEST] = ("", 0, "")
    bundle_ok: dict[str, bool] = {}
    rendered_dirs: dict[str, list[str]] = {}
    for report in reports:
        manifest_path = f"{report.path}/{BUNDLE_MANIFEST}"
        listed[manifest_path] = ("", 0, "")
        bundle_ok[report.path] = False
        try:
            data = folder.read_bytes(manifest_path)
        except EvalArcError as error:
            findings.add(error.message)
            continue
        if sha256_bytes(data) != report.manifest_sha256:
            findings.add(f"{manifest_path} differs from the SHA-256 {SITE_MANIFEST} records")
            continue
        try:
            bundle = load_report_json(folder, manifest_path)
            if bundle.get("schema_version") != BUNDLE_SCHEMA:
                raise VerificationError(f"{manifest_path} is not an EvalArc bundle manifest")
            if bundle.get("kind") != report.kind or bundle.get("source") != report.label:
                raise VerificationError(f"{manifest_path} disagrees with {SITE_MANIFEST}")
            files = _file_table(bundle.get("files"), manifest_path)
        except EvalArcError as error:
            findings.add(error.message)
            continue
        if PAGE_FILE not in files:
            findings.add(f"{manifest_path} does not list the page {PAGE_FILE}")
        for name, record in files.items():
            listed[f"{report.path}/{name}"] = (*record, manifest_path)
        bundle_ok[report.path] = True
        rendered_dirs[report.path] = sorted(
            name for name in files if name.startswith(f"{CHUNK_DIR}/")
        )

    try:
        present = {relative for relative, _ in walk_files(folder.root, limit=MAX_SITE_FILES)}
    except EvalArcError as error:
        raise VerificationError(error.message) from None
    for name in sorted(present - set(listed)):
        findings.add(f"{name} is not listed in any manifest of this site")
    for name, (digest, size, owner) in sorted(listed.items()):
        if not owner:
            continue
        if name not in present:
            findings.add(f"{name} is missing (listed in {owner})")
            continue
        try:
            folder.hash_file(name)
        except EvalArcError as error:
            findings.add(error.message)
            continue
        found = folder.files[name]
        if found.sha256 != digest or found.bytes != size:
            findings.add(f"{name} differs from its SHA-256 in {owner}")

    entries: list[IndexEntry] = []
    results: list[dict[str, Any]] = []
    for report in reports:
        slug = report.path.split("/", 1)[1]
        if not bundle_ok[report.path]:
            continue
        try:
            page = render_bundle(folder.root / REPORTS_DIR / slug)
        except EvalArcError as error:
            findings.add(f"{report.path}: {error.message}")
            continue
        if page.kind != report.kind:
            findings.add(f"{report.path} holds a {page.kind} report, not {report.kind}")
        page_name = f"{report.path}/{PAGE_FILE}"
        if name_differs(folder, page_name, page.html):
            findings.add(f"{page_name} differs from the page rendered from its bundle")
        for relative, data in sorted(page.files.items()):
            file_name = f"{report.path}/{relative}"
            if file_differs(folder, file_name, data):
                findings.add(f"{file_name} differs from the file rendered from its bundle")
        for relative in rendered_dirs.get(report.path, []):
            if relative not in page.files:
                findings.add(f"{report.path}/{relative} is not rendered from its bundle")
        entries.append(IndexEntry(slug, report.label, page.kind, page.passed, page.verdict))
        results.append({"path": report.path, "kind": page.kind, "passed": page.passed})

    titles: list[tuple[str, str]] = []
    texts: dict[str, str] = {}
    for name in docs:
        source = f"{DOCS_DIR}/{name}"
        try:
            texts[name] = decode_doc(source, folder.read_bytes(source))
        except EvalArcError as error:
            findings.add(error.message)
            continue
        titles.append((name, doc_title(texts[name], name[:-3])))
    for name, text in texts.items():
        html = render_doc(text, title=doc_title(text, name[:-3]), docs=doc_links(titles, ""))
        page_name = f"{DOCS_DIR}/{name[:-3]}.html"
        if name_differs(folder, page_name, html):
            findings.add(f"{page_name} differs from the page rendered from {DOCS_DIR}/{name}")

    if len(entries) == len(reports) and len(texts) == len(docs):
        index = render_index(title, built_at, entries, doc_links(titles, f"{DOCS_DIR}/"))
        if name_differs(folder, PAGE_FILE, index):
            findings.add(f"{PAGE_FILE} differs from the index rendered from {SITE_MANIFEST}")

    for problem in check_site(folder.root):
        findings.add(str(problem))
    findings.raise_if_any()
    return {
        "schema_version": VERIFICATION_SCHEMA,
        "verified": True,
        "kind": "site",
        "passed": all(result["passed"] for result in results),
        "reports": results,
        "docs": docs,
        "files": folder.files_json(),
        "scope": SITE_SCOPE,
    }


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
