"""``evalarc verify``: a thin dispatcher. A built site goes to :mod:`evalarc.site.verify_site`;
any other folder (or a report JSON inside one) to the rule of a verified report folder,
:func:`evalarc.reports.check.check_report_folder`, which recomputes it with its kind's own
compute function; a bundle verified on its own also has its site page and manifest checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalarc.bundle import private_reads
from evalarc.errors import EvalArcError, VerificationError
from evalarc.reports.check import SCOPE, VERIFICATION_SCHEMA, check_report_folder, folder_of
from evalarc.site.build import check_bundle_files
from evalarc.site.verify_site import is_site, verify_site


def verify_report_folder(evidence: Path, *, site_bundle: bool = False) -> dict[str, Any]:
    """Verify a report folder (or a report file inside one), or a whole built site; every file
    is opened once, and what is parsed is exactly what was hashed (:func:`private_reads`: a file
    swapped between two reads cannot be verified as one thing and parsed as another)."""
    with private_reads():
        return _verify_report_folder(evidence, site_bundle=site_bundle)


def _verify_report_folder(evidence: Path, *, site_bundle: bool = False) -> dict[str, Any]:
    """Verify a report folder (or a report file inside one), or a whole built site (see
    :mod:`evalarc.site.verify_site`); raise VerificationError on any inconsistency, return the
    ``evalarc.verification.v1`` result otherwise."""
    if not evidence.exists() and not evidence.is_symlink():
        raise VerificationError(f"{evidence} does not exist")
    if not evidence.is_symlink() and is_site(evidence):
        return verify_site(evidence)
    given = folder_of(evidence)
    bundle = not site_bundle and (given / "evalarc-bundle.json").is_file()
    verdict = check_report_folder(given, site_bundle=site_bundle or bundle)
    files = verdict.files
    if bundle:
        files = {**files, **check_bundle_files(given, verdict)}
    summary = dict(verdict.summary)
    # Executed runs state their own scope (replayed through today's grader, no candidate run).
    scope = summary.pop("scope", SCOPE)
    return {
        "schema_version": VERIFICATION_SCHEMA,
        "verified": True,
        "kind": verdict.kind.name,
        **summary,
        "files": dict(sorted(files.items())),
        "scope": scope,
    }


def verification_failure(error: EvalArcError | str) -> dict[str, Any]:
    """The JSON printed by ``verify --json`` when verification fails (or cannot finish)."""
    message = error.message if isinstance(error, EvalArcError) else error
    return {
        "schema_version": VERIFICATION_SCHEMA,
        "verified": False,
        "error": message,
        "scope": SCOPE,
    }
