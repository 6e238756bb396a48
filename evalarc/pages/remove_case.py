"""The audit page's "remove this case" view: which declared faults lose coverage without a case.

For each case of an audit, the audit is computed again with that case's runs (under every seed)
left out of every control's recorded evaluation, by :func:`evalarc.review.audit.compute_audit`,
the function that computed the audit itself. Nothing is re-run: each case runs from a fresh
state, so leaving one out does not change how the others went. What changes is read off the two
results: the faults that would no longer be detected, and the faults whose detection margin
would shrink.

Before any removal the same function is run on the recorded outcomes with nothing left out; if
that does not reproduce the audit's own rows, the view says so and shows nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalarc.review.audit import AuditContext, FaultRun, compute_audit

COMPUTE_FUNCTION = "evalarc.review.audit.compute_audit"


@dataclass(frozen=True)
class RemoveCaseRow:
    case_id: str
    detects: str
    """How many faults this case detects now, and their names."""
    lost: list[str]
    """Faults detected now that would go undetected without this case."""
    now_single: list[str]
    """Faults that would then rest on a single case (margin 1, more before)."""
    detected_after: str
    """``k/n`` declared faults detected without this case."""
    weakest_after: str
    tone: str
    verdict: str
    """``loses coverage``, ``leaves a fault on one case`` or ``no fault lost``."""


@dataclass(frozen=True)
class RemoveCaseView:
    available: bool
    statement: str
    """How the numbers were computed (or why they were not)."""
    rows: list[RemoveCaseRow]
    essential: int
    """Cases whose removal leaves some fault undetected."""


def case_ids(audit: Mapping[str, Any]) -> list[str]:
    """Every case id of the audit, in the order the reference ran them (then any others)."""
    seen: dict[str, None] = {}
    evaluations = [audit["reference"], *(row["evaluation"] for row in audit["mutants"])]
    for evaluation in evaluations:
        for case in evaluation["cases"]:
            seen.setdefault(str(case["case_id"]), None)
    return list(seen)


def _without(evaluation: Mapping[str, Any], removed: frozenset[str]) -> dict[str, Any]:
    return {
        **evaluation,
        "cases": [case for case in evaluation["cases"] if str(case["case_id"]) not in removed],
    }


def recompute_without(audit: Mapping[str, Any], removed: Sequence[str]) -> dict[str, Any]:
    """The audit computed by ``compute_audit`` from its recorded per-case outcomes, with every
    run of the cases ``removed`` left out."""
    leave_out = frozenset(removed)
    faults = [
        FaultRun(
            str(row["name"]), str(row["target_dimension"]), _without(row["evaluation"], leave_out)
        )
        for row in audit["mutants"]
    ]
    context = AuditContext(
        task=audit["task"],
        language=str(audit["language"]),
        seeds=list(audit["seeds"]),
        without_cases=sorted({*audit["without_cases"], *leave_out}),
        created_at=str(audit["created_at"]),
        evalarc_version=str(audit["evalarc_version"]),
    )
    return compute_audit(_without(audit["reference"], leave_out), faults, context)


def _summary(audit: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (row["name"], row["killed"], row["detection_margin"], list(row["failing_cases"]))
        for row in audit["mutants"]
    ]


def _margin(value: object) -> str:
    return "unavailable" if value is None else str(value)


def build_remove_case_view(audit: Mapping[str, Any]) -> RemoveCaseView:
    """The "remove this case" view of an ``evalarc.audit.v2`` report."""
    if not audit["valid"]:
        return RemoveCaseView(
            False,
            "Not computed: this audit is invalid (a run failed for environmental reasons), so "
            "its margins are unavailable and so is the effect of removing a case.",
            [],
            0,
        )
    same = recompute_without(audit, [])
    if _summary(same) != _summary(audit) or same["detection"] != audit["detection"]:
        return RemoveCaseView(
            False,
            f"Not computed: {COMPUTE_FUNCTION} over the recorded per-case outcomes does not "
            "reproduce this audit's rows, so removals computed from them would not be "
            "trustworthy.",
            [],
            0,
        )
    total = int(audit["total"])
    before = {str(row["name"]): row for row in audit["mutants"]}
    rows: list[RemoveCaseRow] = []
    for case_id in case_ids(audit):
        after = recompute_without(audit, [case_id])
        lost: list[str] = []
        now_single: list[str] = []
        for row in after["mutants"]:
            name = str(row["name"])
            old = before[name]
            if old["killed"] and not row["killed"]:
                lost.append(name)
            elif row["detection_margin"] == 1 and old["detection_margin"] > 1:
                now_single.append(name)
        detects = [name for name, row in before.items() if case_id in row["failing_cases"]]
        if lost:
            tone, verdict = "bad", "loses coverage"
        elif now_single:
            tone, verdict = "warn", "leaves a fault on one case"
        else:
            tone, verdict = "ok", "no fault lost"
        rows.append(
            RemoveCaseRow(
                case_id=case_id,
                detects=f"{len(detects)}: " + ", ".join(detects) if detects else "none",
                lost=lost,
                now_single=now_single,
                detected_after=f"{after['killed']}/{total}",
                weakest_after=_margin(after["detection"]["weakest_margin"]),
                tone=tone,
                verdict=verdict,
            )
        )
    statement = (
        f"Computed by {COMPUTE_FUNCTION}, the function that computed this audit, over the "
        "recorded per-case outcomes of every control with that case's runs (under every seed) "
        "left out. Nothing was re-run: each case starts from a fresh state, so leaving one out "
        "does not change the others. The same function over the recorded outcomes with nothing "
        "left out reproduces this audit's rows. To confirm a removal by running it, use "
        "evalarc audit --without-case CASE."
    )
    essential = sum(1 for row in rows if row.lost)
    return RemoveCaseView(True, statement, rows, essential)
