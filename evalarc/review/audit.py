"""Grader audits as pure compute: which declared faults the checks catch, and how narrowly.

An audit evaluates a pack's known-good reference (the positive control) and every declared
faulty variant (the negative controls) under one runtime and one set of seeds; this module turns
those evaluation reports into the ``evalarc.audit.v2`` object. It reads nothing and runs nothing,
so the command that writes an audit and ``verify`` recompute it with the same function.

The rules:

* A fault is *detected* (``killed``) only when its evaluation is valid and some case fails the
  fault's target dimension; failures in other dimensions do not count.
* ``detection_margin`` is the number of distinct case ids failing the target dimension (the same
  case under two seeds is one detector, so adding seeds cannot inflate a margin); 0 for a valid
  survivor, null for an invalid run.
* The audit is valid only when every run is valid; an invalid audit has a null mutation score,
  and an invalid run never counts as a detection.
* ``weakest_margin`` is the smallest margin over the valid negative controls, survivors counting
  0; ``single_case_detections`` names the detected faults whose margin is 1, and
  ``sole_detector_cases`` the cases that alone detect one of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalarc import schemas

AUDIT_SCHEMA = schemas.AUDIT
REFERENCE_CONTROL = "reference"
"""The control name of the positive control (events, folder names)."""


@dataclass(frozen=True, slots=True)
class FaultRun:
    """One negative control's evaluation, with the dimension its detection must show in."""

    name: str
    target_dimension: str
    evaluation: Mapping[str, Any]
    """The complete ``evalarc.evaluation.v2`` report of the faulty variant."""


@dataclass(frozen=True, slots=True)
class AuditContext:
    """What the audit was run on: recorded beside the results, never computed from them."""

    task: Mapping[str, Any]
    language: str
    seeds: Sequence[int]
    without_cases: Sequence[str]
    created_at: str
    evalarc_version: str


def target_failures(evaluation: Mapping[str, Any], target_dimension: str) -> list[str]:
    """Case ids (one per failing case run, seeds repeating ids) whose check in
    ``target_dimension`` is false. Unassessed (null) checks are not failures."""
    failures: list[str] = []
    for case in evaluation["cases"]:
        checks: Mapping[str, Any] = case["checks"]
        if checks.get(target_dimension) is False:
            failures.append(str(case["case_id"]))
    return failures


def mutant_row(run: FaultRun) -> dict[str, Any]:
    """The audit row of one negative control (schema order)."""
    evaluation = run.evaluation
    valid = evaluation["valid"] is True
    failing_cases = sorted(set(target_failures(evaluation, run.target_dimension)))
    killed = valid and bool(failing_cases)
    return {
        "name": run.name,
        "target_dimension": run.target_dimension,
        "killed": killed,
        "detection_margin": len(failing_cases) if valid else None,
        "valid": valid,
        "score": evaluation["score"],
        "failing_cases": failing_cases,
        "candidate_sha256": evaluation["candidate_sha256"],
        "evaluation": evaluation,
    }


def detection_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Weakest margin (survivors count 0, invalid runs are left out), the faults one case
    catches, and those cases."""
    margins = [row["detection_margin"] for row in rows if row["valid"]]
    single = sorted(
        str(row["name"]) for row in rows if row["killed"] and row["detection_margin"] == 1
    )
    sole_cases = sorted(
        {
            str(row["failing_cases"][0])
            for row in rows
            if row["killed"] and row["detection_margin"] == 1
        }
    )
    return {
        "weakest_margin": min(margins) if margins else None,
        "single_case_detections": single,
        "sole_detector_cases": sole_cases,
    }


def interpretation(total: int) -> str:
    """What an audit's numbers do and do not say (the denominator is the declared faults)."""
    return (
        f"The mutation score counts how many of this pack's {total} declared fault models the "
        "checks detect in their target dimension. It is not a bound on reward hacking, not a "
        "sample of all possible defects and not a ranking of any model. A detection margin is "
        "the number of distinct cases that catch a fault: with a margin of 1, changing or "
        "removing that single case lets the fault pass unnoticed."
    )


def compute_audit(
    reference: Mapping[str, Any], faults: Sequence[FaultRun], context: AuditContext
) -> dict[str, Any]:
    """The complete ``evalarc.audit.v2`` object (keys in schema order)."""
    rows = [mutant_row(run) for run in faults]
    reference_valid = reference["valid"] is True
    valid = reference_valid and all(row["valid"] for row in rows)
    killed = sum(1 for row in rows if row["killed"])
    total = len(rows)
    reference_passed = reference_valid and reference["resolved"] is True
    mutation_score: float | None = None
    if valid:
        mutation_score = killed / total if total else None
    return {
        "schema_version": AUDIT_SCHEMA,
        "created_at": context.created_at,
        "evalarc_version": context.evalarc_version,
        "task": dict(context.task),
        "language": context.language,
        "seeds": list(context.seeds),
        "without_cases": sorted(context.without_cases),
        "valid": valid,
        "reference_passed": reference_passed,
        "reference": reference,
        "mutants": rows,
        "mutation_score": mutation_score,
        "killed": killed,
        "total": total,
        "detection": detection_summary(rows),
        "passed": valid and reference_passed and killed == total,
        "interpretation": interpretation(total),
    }


def audit_status(audit: Mapping[str, Any]) -> str:
    """``PASS``, ``FAIL`` or ``INVALID``."""
    if not audit["valid"]:
        return "INVALID"
    return "PASS" if audit["passed"] else "FAIL"


def reference_status(audit: Mapping[str, Any]) -> str:
    """``PASS``, ``FAIL`` or ``UNASSESSED`` (the reference run itself was invalid)."""
    if audit["reference"]["valid"] is not True:
        return "UNASSESSED"
    return "PASS" if audit["reference_passed"] else "FAIL"
