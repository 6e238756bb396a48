"""The rule of a verified report folder: recompute it and compare it with what it says.

A folder is recognised by its ``params.json`` (schema ``evalarc.report-params.v1``); its ``kind``
selects the report file and the recomputation. Recomputation uses the same compute function the
writing command used, from the folder's own input copies and recorded options.

The rule of a verified folder: every file in it is exactly one of

(a) *preserved*: an input, recording, candidate file or the recorded options, read by the
    recomputation and bound by its SHA-256 to the report that names it;
(b) *regenerated*: the report JSON (compared byte for byte with the recomputed report as the
    writing command writes it, with the recorded ``created_at``/``evalarc_version`` taken over
    only at the positions the kind's schema defines; a large diff is read without its rows
    and compared as a stream), and every
    derived file (``summary.md``, ``cases.jsonl``, ``tuning-failures.json``, ``events.jsonl``, the
    evaluations of an audit, the page), rendered again and compared byte for byte;
(c) refused: anything else, and any preserved file or record whose suffix is outside the
    allow-list :data:`evalarc.bundle.HELD_SUFFIXES` (a static host could serve it as a document
    a browser runs script in), a hard link, symlink, device file or a name with control characters
    (:func:`evalarc.bundle.scan_tree`); also any option in ``params.json`` the kind does not know.

Scope: this proves the report follows from the preserved bytes and options. It does not rerun
the source tools' grading, does not authenticate where inputs came from, and cannot detect a
coordinated fabrication that rewrites inputs, hashes and report together.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc import __version__, schemas
from evalarc.bundle import (
    PARAMS_FILE,
    PARAMS_SCHEMA,
    Derived,
    EvidenceFolder,
    Later,
    TextStream,
    is_active,
    load_report_head,
    load_report_json,
    private_reads,
    refused_type,
    scan_tree,
    shown_name,
)
from evalarc.canonical import pretty_json
from evalarc.errors import VerificationError
from evalarc.reports.kind import PAGE_FILE, ReportKind, page_files
from evalarc.schemas import check_schema

VERIFICATION_SCHEMA = schemas.VERIFICATION
SCOPE = (
    "Recomputed from the preserved input bytes and the recorded options and compared with the "
    "saved report; every derived file (summary, case lines, failure lists, events, page) was "
    "rendered again and compared byte for byte, and no other file is allowed. Preserved files "
    "are bound by SHA-256 to the report that names them: that proves they are the bytes the "
    "report was computed from but cannot prove they are what the source tools wrote; the source "
    "tools' grading was not rerun and the inputs' origin is not authenticated."
)
VOLATILE_KEYS = ("created_at", "evalarc_version")
PRESERVED = "preserved"
REGENERATED = "regenerated"
RECORD = "record"
"""A process record kept beside the report (``hillclimb-run``'s log and patches): listed, not
checked, never published in a site."""
BUNDLE_FILES = frozenset({"index.html", "evalarc-bundle.json"})
"""Files of a site bundle that the site's own verification checks (the site page, the bundle
manifest): :mod:`evalarc.site.verify_site` renders and hashes them."""


def _kinds() -> dict[str, ReportKind]:
    from evalarc.reports.registry import KINDS

    return {kind.name: kind for kind in KINDS}


# -- volatile keys, only where the schema puts them ------------------------------------------


def _positions(value: Any, path: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """The objects at ``path`` inside ``value`` (``*`` steps into every list item)."""
    if not path:
        if isinstance(value, dict):
            yield value
        return
    step, rest = path[0], path[1:]
    if step == "*":
        if isinstance(value, list):
            for item in value:
                yield from _positions(item, rest)
    elif isinstance(value, dict) and step in value:
        yield from _positions(value[step], rest)


def adopt_volatile(
    recomputed: dict[str, Any], recorded: dict[str, Any], positions: tuple[tuple[str, ...], ...]
) -> dict[str, Any]:
    """``recomputed`` with ``created_at``/``evalarc_version`` taken from ``recorded`` at the
    schema's positions only (the same key injected anywhere else still differs)."""
    adopted: dict[str, Any] = json.loads(json.dumps(recomputed, allow_nan=False))
    for path in positions:
        mine = list(_positions(adopted, path))
        theirs = list(_positions(recorded, path))
        if len(mine) != len(theirs):
            continue  # the structure differs: the comparison fails anyway
        for target, source in zip(mine, theirs, strict=True):
            for key in VOLATILE_KEYS:
                if key in target and isinstance(source.get(key), str):
                    target[key] = source[key]
    return adopted


# -- options ---------------------------------------------------------------------------------


class TrackedParams(dict[str, Any]):
    """params.json as read by a recomputation: remembers every option it looked up, so an
    option nobody reads (a typo, or one a newer EvalArc added) can be refused."""

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__(value)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return super().__contains__(key)


_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _version_key(text: object) -> tuple[int, int, int] | None:
    match = _VERSION.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def _refuse_unknown_options(params: TrackedParams, kind: ReportKind, recorded: Any) -> None:
    known = params.read | kind.informational | {"schema_version", "kind"}
    unknown = sorted(key for key in params if key not in known)
    if not unknown:
        return
    names = ", ".join(repr(shown_name(key)) for key in unknown[:5])
    writer = recorded.get("evalarc_version") if isinstance(recorded, dict) else None
    theirs, ours = _version_key(writer), _version_key(__version__)
    if theirs is not None and ours is not None and theirs > ours:
        raise VerificationError(
            f"{PARAMS_FILE} has option(s) {names} unknown to this EvalArc {__version__}: "
            f"the folder was written by EvalArc {shown_name(str(writer))}, which is newer; "
            "verify it with that version"
        )
    raise VerificationError(f"{PARAMS_FILE} has option(s) {names} unknown to a {kind.name} report")


# -- the folder rule -------------------------------------------------------------------------


@dataclass(frozen=True)
class FolderVerdict:
    """A verified report folder: its kind, summary and every file with its role."""

    kind: ReportKind
    summary: dict[str, Any]
    files: dict[str, dict[str, Any]]
    params: dict[str, Any]
    report: dict[str, Any]


def folder_of(evidence: Path) -> Path:
    if evidence.is_dir():
        return evidence
    if evidence.is_file() and evidence.suffix == ".json":
        return evidence.parent
    raise VerificationError(f"{evidence} is neither a report folder nor a report JSON file")


def is_process_record(params_document: dict[str, Any], name: str) -> bool:
    """Whether ``name`` (relative, POSIX) is a process record of the kind ``params_document``
    names: kept beside the report by the writing command, listed by ``verify`` but not
    checkable, so a site leaves it out of the bundle."""
    kind = _kinds().get(str(params_document.get("kind")))
    if kind is None:
        return False
    return any(
        name == record or (record.endswith("/") and name.startswith(record))
        for record in kind.records
    )


def check_report_folder(evidence: Path, *, site_bundle: bool = False) -> FolderVerdict:
    """Apply the rule of a verified folder (module docstring) to the report folder ``evidence``,
    each file opened once and parsed from the bytes hashed (:func:`private_reads`)."""
    with private_reads():
        return _check_report_folder(evidence, site_bundle=site_bundle)


def _check_report_folder(evidence: Path, *, site_bundle: bool = False) -> FolderVerdict:
    """Apply the rule of a verified folder (module docstring) to the report folder ``evidence``.

    ``site_bundle``: the folder is a bundle of a site being built or verified; its page and
    bundle manifest (:data:`BUNDLE_FILES`) are the caller's to check."""
    given = folder_of(evidence)
    folder = EvidenceFolder(given)
    shown = str(given)
    tree = {item.relative: item for item in scan_tree(folder.root, shown=shown)}
    # Inside a site the caller names the bundle; on its own the folder is named as given.
    prefix = "" if site_bundle else f"{shown}/"
    if PARAMS_FILE not in tree:
        raise VerificationError(f"{shown} has no {PARAMS_FILE}; it is not a report folder")
    params_document = load_report_json(folder, PARAMS_FILE)
    check_schema(params_document, PARAMS_SCHEMA, f"{prefix}{PARAMS_FILE}", error=VerificationError)
    kinds = _kinds()
    kind = kinds.get(str(params_document.get("kind")))
    if kind is None:
        raise VerificationError(
            f"{PARAMS_FILE} names an unknown report kind "
            f"{shown_name(str(params_document.get('kind')))!r}"
        )
    if kind.bulk:
        recorded: dict[str, Any] = load_report_head(folder, kind.report_file, kind.bulk)
    else:
        recorded = load_report_json(folder, kind.report_file)
    check_schema(recorded, kind.schema, f"{prefix}{kind.report_file}", error=VerificationError)
    params = TrackedParams(params_document)
    try:
        recomputed = kind.recompute(folder, params, recorded)
    except RecursionError:
        raise VerificationError(
            f"{kind.report_file}: its inputs nest too deeply to recompute"
        ) from None
    try:
        if isinstance(recomputed, dict):
            text = pretty_json(adopt_volatile(recomputed, recorded, kind.volatile))

            def whole(write: Callable[[str], object]) -> None:
                write(text)

            same = folder.matches_text(kind.report_file, whole)
        else:
            same = folder.matches_text(kind.report_file, recomputed.write_json)
    except RecursionError:
        raise VerificationError(f"{kind.report_file} is nested too deeply to compare") from None
    if not same:
        raise VerificationError(
            f"{kind.report_file} differs from the recomputed {kind.name} report"
        )
    from evalarc.pages.case_views import CHUNK_DIR

    def site_file(name: str) -> bool:
        # A bundle's page, manifest and evidence chunks are rendered by the site (its caller).
        return site_bundle and (name in BUNDLE_FILES or name.startswith(f"{CHUNK_DIR}/"))

    derived: Derived = dict(kind.derive(folder, params, recorded)) if kind.derive else {}
    if not site_bundle and PAGE_FILE in tree:
        # The folder's page and the files beside it are the kind's page rendered again.
        derived.update(page_files(kind, folder, params_document, recorded))
    _refuse_unknown_options(params, kind, recorded)
    preserved = set(folder.files) - {kind.report_file}
    regenerated = {kind.report_file}
    for name, expected in sorted(derived.items()):
        if site_file(name):
            continue
        if name not in tree:
            raise VerificationError(f"{prefix}{name} is missing")
        differs = f"{name} differs from the one rendered again from the verified report"
        if isinstance(expected, TextStream):
            problem = None if folder.matches_text(name, expected.write_to) else differs
        else:
            data = folder.read_bytes(name)
            if isinstance(expected, Later):
                expected = expected.make()
            problem = expected(data) if callable(expected) else None
            if problem is None and not callable(expected) and data != expected:
                problem = differs
        if problem is not None:
            raise VerificationError(problem)
        regenerated.add(name)
        preserved.discard(name)
    records: set[str] = set()
    for name in sorted(tree):
        if name in preserved or name in regenerated:
            continue
        if site_file(name):
            continue
        if any(
            name == record or (record.endswith("/") and name.startswith(record))
            for record in kind.records
        ):
            if site_bundle:
                raise VerificationError(
                    f"{prefix}{shown_name(name)} is a process record verify cannot check; "
                    "a site publishes only inputs and regenerated files"
                )
            if is_active(name):
                raise VerificationError(refused_type(f"{prefix}{shown_name(name)}"))
            records.add(name)
            continue
        raise VerificationError(
            f"{prefix}{shown_name(name)} is neither an input the {kind.name} report names nor a "
            "file EvalArc writes into such a folder"
        )
    for name in sorted(preserved):
        if is_active(name):
            raise VerificationError(refused_type(f"{prefix}{shown_name(name)}"))
    files = {
        name: {
            "sha256": record.sha256,
            "bytes": record.bytes,
            "role": REGENERATED if name in regenerated else PRESERVED,
        }
        for name, record in sorted(folder.files.items())
    }
    for name in sorted(records):
        files[name] = {"bytes": tree[name].bytes, "role": RECORD}
    return FolderVerdict(kind, dict(kind.summarize(recorded)), files, params_document, recorded)
