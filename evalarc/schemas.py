"""Every schema id EvalArc writes or reads, defined once, and the one check of a document's
``schema_version``: a document of a newer version than this EvalArc reads is refused with a
message naming the file and both versions (never misread as the version it knows).

Ids follow ``evalarc.<name>.v<N>``; a change a reader of version N would misread bumps N.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from evalarc.errors import EvalArcError, InputError

AUDIT = "evalarc.audit.v2"
CASE_MANIFEST = "evalarc.case-manifest.v1"
CASE_SPLIT = "evalarc.case-split.v1"
EVAL_HEALTH = "evalarc.eval-health.v1"
EVALUATION = "evalarc.evaluation.v2"
EVENT = "evalarc.event.v1"
HILLCLIMB_ALLOWED = "evalarc.hillclimb-allowed.v1"
HILLCLIMB_REVIEW = "evalarc.hillclimb-review.v1"
HILLCLIMB_RUN = "evalarc.hillclimb-run.v1"
PACK = "evalarc.pack.v1"
PACK_VIEWS = "evalarc.pack-views.v1"
RECORDING_INDEX = "evalarc.recording-index.v1"
RECORDING_STORE = "evalarc.recording-store.v1"
REPORT_PARAMS = "evalarc.report-params.v1"
RESULTS_DIFF = "evalarc.results-diff.v1"
SITE = "evalarc.site.v1"
SITE_BUNDLE = "evalarc.site-bundle.v1"
TRAJECTORY = "evalarc.trajectory.v1"
TUNING_FAILURES = "evalarc.tuning-failures.v1"
VERIFICATION = "evalarc.verification.v1"

_ID = re.compile(r"(evalarc\.[a-z][a-z0-9-]*)\.v([1-9][0-9]{0,5})")


def split_id(schema: str) -> tuple[str, int] | None:
    """``("evalarc.audit", 2)`` for ``evalarc.audit.v2``; None for anything else."""
    match = _ID.fullmatch(schema)
    return (match.group(1), int(match.group(2))) if match else None


def check_schema(
    document: Mapping[str, object],
    expected: str,
    name: str,
    *,
    error: type[EvalArcError] = InputError,
) -> None:
    """Refuse ``document`` (read from the file ``name``, as the user gave it) unless its
    ``schema_version`` is ``expected``. A newer version of the same schema gets its own message,
    naming both versions, so a file written by a newer EvalArc is never read as an older one."""
    found = document.get("schema_version")
    if found == expected:
        return
    mine = split_id(expected)
    theirs = split_id(found) if isinstance(found, str) else None
    if mine is not None and theirs is not None and theirs[0] == mine[0] and theirs[1] > mine[1]:
        raise error(
            f"{name} is {found}, newer than the {expected} this EvalArc reads; "
            "read it with a newer EvalArc"
        )
    shown = repr(found) if isinstance(found, str) and len(found) <= 80 else "another schema"
    raise error(f"{name} is not an {expected} document (its schema_version is {shown})")
