"""``evalarc verify``: recompute a received report folder and compare it with what it says.

A folder is recognised by its ``params.json`` (schema ``evalarc.report-params.v1``); its ``kind``
selects the report file and the recomputation. Recomputation uses the same compute function the
writing command used, from the folder's own input copies and recorded options. The comparison
ignores only ``created_at`` and ``evalarc_version`` (at every level).

Scope: this proves the report follows from the preserved bytes and options. It does not rerun
the source tools' grading, does not authenticate where inputs came from, and cannot detect a
coordinated fabrication that rewrites inputs, hashes and report together.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from evalarc.bundle import (
    PARAMS_FILE,
    PARAMS_SCHEMA,
    EvidenceFolder,
    ReportKind,
    load_report_json,
)
from evalarc.errors import EvalArcError, VerificationError

VERIFICATION_SCHEMA = "evalarc.verification.v1"
SCOPE = (
    "Recomputed from the preserved input bytes and the recorded options and compared with the "
    "saved report; the source tools' grading was not rerun, the inputs' origin is not "
    "authenticated, and HTML and Markdown files were not checked."
)
IGNORED_KEYS = frozenset({"created_at", "evalarc_version"})

# Modules that write report folders; each exposes ``REPORT_KIND`` (an evalarc.bundle.ReportKind).
# A new report kind adds its module here.
REPORT_MODULES: tuple[str, ...] = (
    "evalarc.diff_report",
    "evalarc.health_report",
    "evalarc.hillclimb_report",
    "evalarc.executed_report",
    "evalarc.trajectory_report",
)


def _kinds() -> dict[str, ReportKind]:
    kinds: dict[str, ReportKind] = {}
    for module_name in REPORT_MODULES:
        module = importlib.import_module(module_name)
        # A module writing several kinds (evaluation and audit folders) lists them all.
        for kind in getattr(module, "REPORT_KINDS", (module.REPORT_KIND,)):
            assert isinstance(kind, ReportKind)
            kinds[kind.name] = kind
    return kinds


def strip_volatile(value: Any) -> Any:
    """Drop ``created_at``/``evalarc_version`` at every level.

    The C parser's hook drops them, not Python recursion: a report nested as deeply as the
    parser that read it allows (a few hundred levels in a recorded runtime object) compares
    instead of overflowing the stack, which Python recursion did from about 500 levels."""
    return json.loads(json.dumps(value, allow_nan=False), object_pairs_hook=_without_volatile)


def _without_volatile(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {key: item for key, item in pairs if key not in IGNORED_KEYS}


def _normalised(value: Any) -> str:
    # JSON text keeps booleans and numbers apart (True != 1 here, unlike Python equality).
    return json.dumps(strip_volatile(value), sort_keys=True, allow_nan=False)


def _folder_of(evidence: Path) -> Path:
    if evidence.is_dir():
        return evidence
    if evidence.is_file() and evidence.suffix == ".json":
        return evidence.parent
    raise VerificationError(f"{evidence} is neither a report folder nor a report JSON file")


def verify_report_folder(evidence: Path) -> dict[str, Any]:
    """Verify a report folder (or a report file inside one), or a whole built site (see
    :mod:`evalarc.site.verify_site`); raise VerificationError on any inconsistency, return the
    ``evalarc.verification.v1`` result otherwise."""
    if not evidence.exists() and not evidence.is_symlink():
        raise VerificationError(f"{evidence} does not exist")
    from evalarc.site.verify_site import is_site, verify_site

    if not evidence.is_symlink() and is_site(evidence):
        return verify_site(evidence)
    folder = EvidenceFolder(_folder_of(evidence))
    if not folder.exists(PARAMS_FILE):
        raise VerificationError(
            f"{folder.root.name} has no {PARAMS_FILE}; it is not a report folder"
        )
    params = load_report_json(folder, PARAMS_FILE)
    if params.get("schema_version") != PARAMS_SCHEMA:
        raise VerificationError(f"{PARAMS_FILE} is not an EvalArc report parameter file")
    kinds = _kinds()
    kind = kinds.get(str(params.get("kind")))
    if kind is None:
        raise VerificationError(
            f"{PARAMS_FILE} names an unknown report kind {params.get('kind')!r}"
        )
    recorded = load_report_json(folder, kind.report_file)
    try:
        recomputed = kind.recompute(folder, params, recorded)
        same = _normalised(recorded) == _normalised(recomputed)
    except RecursionError:
        raise VerificationError(f"{kind.report_file} is nested too deeply to compare") from None
    if not same:
        raise VerificationError(
            f"{kind.report_file} differs from the recomputed {kind.name} report"
        )
    summary = dict(kind.summarize(recorded))
    # Executed runs state their own scope (replayed through today's grader, no candidate run).
    scope = summary.pop("scope", SCOPE)
    return {
        "schema_version": VERIFICATION_SCHEMA,
        "verified": True,
        "kind": kind.name,
        **summary,
        "files": folder.files_json(),
        "scope": scope,
    }


def verification_failure(error: EvalArcError) -> dict[str, Any]:
    """The JSON printed by ``verify --json`` when verification fails."""
    return {
        "schema_version": VERIFICATION_SCHEMA,
        "verified": False,
        "error": error.message,
        "scope": SCOPE,
    }
