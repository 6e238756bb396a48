"""Compare two result files check by check and decide the quality gate (``evalarc diff``).

Every (case, check) pair in either run gets a tally per side; one classification rule list turns
the two tallies into a change kind. The gate fails on any blocking kind and on any run that did
not finish. This module is pure: it reads only the in-memory model and returns plain JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evalarc import schemas
from evalarc.errors import IncomparableError, InputError, UsageError
from evalarc.formats.harness import HarnessFile
from evalarc.formats.model import Attempt, Run
from evalarc.formats.promptfoo import align_matrix, matrix_sides
from evalarc.formats.split import CaseSplit
from evalarc.review.cluster import change_groups
from evalarc.review.leakage import MIN_LEAK_CHARS, scan_leakage
from evalarc.review.split import review_generalization
from evalarc.review.stats import intervals_overlap, rounded_interval, wilson_interval
from evalarc.review.usage import COST_METRIC_CHOICES, compare_usage, cost_gate

DIFF_SCHEMA = schemas.RESULTS_DIFF

BLOCKING_KINDS = ("regressed", "less_reliable", "unassessed", "less_covered", "removed")
"""Change kinds that fail the gate, in reporting order."""

NON_BLOCKING_KINDS = ("improved", "added")
KIND_ORDER: tuple[str, ...] = BLOCKING_KINDS + NON_BLOCKING_KINDS
_KIND_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}

INTERPRETATION = (
    "This diff compares the outcomes recorded in the two result files. EvalArc did not rerun "
    "or authenticate any grading, so each verdict is only as trustworthy as the tool that "
    "recorded it."
)
SAMPLING_NOISE_NOTE = (
    "within_sampling_noise is true when at least one side varies between attempts and the 95% "
    "Wilson score intervals of the two pass rates overlap; it describes the evidence and never "
    "relaxes the gate."
)


@dataclass(frozen=True)
class DiffOptions:
    """Every option that changes a diff report; recorded in params.json and replayed by verify."""

    threshold: float = 1.0
    leak_min_chars: int = 12
    require_generalization: bool = False
    max_cost_ratio: float | None = None
    cost_metric: str = "auto"

    def validate(self) -> None:
        """Refuse out-of-range options before any input is read (UsageError)."""
        if isinstance(self.threshold, bool) or not math.isfinite(self.threshold):
            raise UsageError("--threshold must be a finite number")
        if isinstance(self.leak_min_chars, bool) or self.leak_min_chars < MIN_LEAK_CHARS:
            raise UsageError(f"--leak-min-chars must be at least {MIN_LEAK_CHARS}")
        if self.max_cost_ratio is not None and (
            isinstance(self.max_cost_ratio, bool)
            or not math.isfinite(self.max_cost_ratio)
            or self.max_cost_ratio <= 0
        ):
            raise UsageError("--max-cost-ratio must be a positive number")
        if self.cost_metric not in COST_METRIC_CHOICES:
            raise UsageError(
                f"unknown --cost-metric {self.cost_metric!r}; use auto, cost, tokens or duration"
            )


@dataclass(frozen=True, slots=True)
class Tally:
    """One side of one (case, check): passes, assessed attempts and all attempts."""

    passed: int
    assessed: int
    attempts: int
    covered: int | None = None
    """Assessed runs when some attempts are reruns of a failed attempt (JUnit rerun plugins):
    a test retried until it passed was covered once, not once per try. None: every attempt is
    its own run, so coverage is ``assessed``."""

    @property
    def coverage(self) -> int:
        return self.assessed if self.covered is None else self.covered

    def to_json(self) -> dict[str, int]:
        return {"passed": self.passed, "assessed": self.assessed, "attempts": self.attempts}


def tally(attempts: Sequence[Attempt]) -> Tally:
    """Count passes and assessed attempts (``passed is None`` is unassessed)."""
    passed = 0
    assessed = 0
    runs = 0
    run_assessed = False
    reruns = False
    for attempt in attempts:
        if attempt.rerun:
            reruns = True
        else:
            runs += run_assessed
            run_assessed = False
        if attempt.passed is None:
            continue
        assessed += 1
        run_assessed = True
        if attempt.passed:
            passed += 1
    runs += run_assessed
    covered = runs if reruns else None
    return Tally(passed=passed, assessed=assessed, attempts=len(attempts), covered=covered)


def _rate_below(lower: Tally, upper: Tally) -> bool:
    """Exact ``rate(lower) < rate(upper)`` where a rate is passed/assessed, 0 when nothing was
    assessed (cross-multiplied so large counts cannot round two different rates together)."""
    lower_den = lower.assessed or 1
    upper_den = upper.assessed or 1
    return lower.passed * upper_den < upper.passed * lower_den


def classify(baseline: Tally | None, current: Tally | None) -> str | None:
    """The change kind of one (case, check), or None when it is unchanged.

    The first matching rule wins; the order is part of the contract (spec 2.3).
    """
    if baseline is None:
        return "added"
    if current is None:
        return "removed"
    if baseline.passed >= 1 and current.assessed == 0:
        return "unassessed"
    if _rate_below(current, baseline):
        return "regressed" if current.passed == 0 else "less_reliable"
    if current.coverage < baseline.coverage:
        return "less_covered"
    if _rate_below(baseline, current):
        return "improved"
    return None


def within_sampling_noise(baseline: Tally | None, current: Tally | None) -> bool | None:
    """The descriptive noise flag of a change row; None when it does not apply.

    It needs both sides and more than one assessed attempt on at least one of them. A clean
    swing (no side varies between attempts) is never noise; otherwise the Wilson intervals decide.
    """
    if baseline is None or current is None:
        return None
    if baseline.assessed <= 1 and current.assessed <= 1:
        return None
    varies = 0 < baseline.passed < baseline.assessed or 0 < current.passed < current.assessed
    if not varies:
        return False
    return intervals_overlap(
        wilson_interval(baseline.passed, baseline.assessed),
        wilson_interval(current.passed, current.assessed),
    )


def same_output_different_verdict(*sides: Sequence[Attempt]) -> int:
    """How many recorded outputs (by SHA-256) were graded both pass and fail across ``sides``."""
    verdicts: dict[str, set[bool]] = {}
    for attempts in sides:
        for attempt in attempts:
            if attempt.output_sha256 is None or attempt.passed is None:
                continue
            verdicts.setdefault(attempt.output_sha256, set()).add(attempt.passed)
    return sum(1 for seen in verdicts.values() if len(seen) == 2)


def attempt_detail(attempts: Sequence[Attempt]) -> list[dict[str, Any]]:
    """The attempts a reader should look at: every non-passing one, else the first attempt."""
    failing = [attempt.to_json() for attempt in attempts if attempt.passed is not True]
    if failing:
        return failing
    return [attempts[0].to_json()] if attempts else []


def _change_row(
    case_id: str,
    check: str,
    kind: str,
    baseline: Sequence[Attempt] | None,
    current: Sequence[Attempt] | None,
    baseline_tally: Tally | None,
    current_tally: Tally | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "case_id": case_id,
        "check": check,
        "kind": kind,
        "baseline": baseline_tally.to_json() if baseline_tally else None,
    }
    if baseline:
        row["baseline_detail"] = attempt_detail(baseline)
    row["current"] = current_tally.to_json() if current_tally else None
    if current:
        row["current_detail"] = attempt_detail(current)
    noise = within_sampling_noise(baseline_tally, current_tally)
    if noise is not None:
        row["within_sampling_noise"] = noise
    disagreements = same_output_different_verdict(baseline or (), current or ())
    if disagreements > 0:
        row["same_output_different_verdict"] = disagreements
    return row


_DIGITS = re.compile(r"([0-9]+)")


def natural_key(text: str) -> tuple[tuple[Any, ...], str]:
    """Sort key that orders runs of digits by value (``case-2`` before ``case-10``); the text
    itself breaks ties (``01`` and ``1``) so the order is total and stable."""
    parts = _DIGITS.split(text)
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts)), text


def natural_sorted(items: Iterable[str]) -> list[str]:
    listed = list(items)
    if len(listed) < 2:
        return listed
    if not any(_DIGITS.search(item) for item in listed):
        return sorted(listed)  # no digits: the natural order is the plain order
    return sorted(listed, key=natural_key)


def compare_checks(baseline: Run, current: Run) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Pair every (case, check) of both runs; return the listed change rows (sorted by kind
    order, then case and check in natural order) and the tally of every kind plus ``unchanged``."""
    counts = dict.fromkeys((*KIND_ORDER, "unchanged"), 0)
    rows: list[dict[str, Any]] = []
    empty: dict[str, list[Attempt]] = {}
    for case_id in natural_sorted(baseline.cases.keys() | current.cases.keys()):
        base_checks = baseline.cases.get(case_id, empty)
        cur_checks = current.cases.get(case_id, empty)
        for check in natural_sorted(base_checks.keys() | cur_checks.keys()):
            base_attempts = base_checks.get(check)
            cur_attempts = cur_checks.get(check)
            base_tally = tally(base_attempts) if base_attempts is not None else None
            cur_tally = tally(cur_attempts) if cur_attempts is not None else None
            kind = classify(base_tally, cur_tally)
            if kind is None:
                counts["unchanged"] += 1
                continue
            counts[kind] += 1
            rows.append(
                _change_row(
                    case_id, check, kind, base_attempts, cur_attempts, base_tally, cur_tally
                )
            )
    # Pairs were visited in (case, check) order, so a stable sort by kind rank is enough.
    rows.sort(key=lambda row: _KIND_RANK[row["kind"]])
    return rows, counts


def run_summary(run: Run) -> dict[str, Any]:
    """The per-side block of diff.json: where the run came from and its pooled pass rate."""
    passed = 0
    assessed = 0
    checks = 0
    for case_checks in run.cases.values():
        checks += len(case_checks)
        for attempts in case_checks.values():
            side = tally(attempts)
            passed += side.passed
            assessed += side.assessed
    return {
        "source": run.source.to_json(),
        "identity": _plain(run.identity),
        "incomplete": run.incomplete,
        "headline": run.headline.to_json() if run.headline is not None else None,
        "cases": len(run.cases),
        "checks": checks,
        "check_pass_rate": {
            "name": "passed check attempts",
            "value": passed / assessed if assessed else None,
            "passed": passed,
            "assessed": assessed,
            "interval_95": rounded_interval(passed, assessed),
        },
    }


def _plain(value: Any) -> Any:
    """A JSON-plain deep copy (tuples become lists), so the report survives a round trip."""
    return json.loads(json.dumps(value, allow_nan=False))


def check_comparable(baseline: Run, current: Run) -> None:
    """Refuse two runs that cannot be paired: other formats, or other Inspect tasks."""
    if baseline.format != current.format:
        raise IncomparableError(
            f"inputs use different formats: {baseline.format} and {current.format}"
        )
    base_task = baseline.identity.get("task")
    cur_task = current.identity.get("task")
    if base_task is not None and cur_task is not None and base_task != cur_task:
        raise IncomparableError(f"inputs are not comparable: task {base_task!r} != {cur_task!r}")
    # A reader may name identity fields that must match (EvalArc evaluations: fingerprints,
    # seeds, runtime, weights); the first that differs is named.
    for field in baseline.identity.get("must_match", ()):
        if baseline.identity.get(field) != current.identity.get(field):
            raise IncomparableError(f"inputs are not comparable: their {field} differs")


def require_assessed(run: Run) -> None:
    """Refuse a run in which nothing was assessed: a gate over zero evidence must never pass."""
    for checks in run.cases.values():
        for attempts in checks.values():
            if any(attempt.passed is not None for attempt in attempts):
                return
    raise InputError(
        f"{run.source.name}: nothing in it could be assessed (no check passed or failed)"
    )


def prepare_runs(baseline: Run, current: Run) -> tuple[Run, Run]:
    """The two runs as :func:`compute_diff` pairs them (promptfoo ids over both matrices), for
    writers that look cases up by the ids in the report."""
    return align_matrix(baseline, current)


def _counts_json(counts: dict[str, int]) -> dict[str, int]:
    """The ``counts`` object; ``less_covered`` appears only when it happened, so equal-coverage
    comparisons keep the counts object of earlier releases."""
    result: dict[str, int] = {}
    for kind in (*KIND_ORDER, "unchanged"):
        if kind == "less_covered" and counts[kind] == 0:
            continue
        result[kind] = counts[kind]
    return result


def compute_diff(
    baseline: Run,
    current: Run,
    options: DiffOptions,
    *,
    split: CaseSplit | None = None,
    harness: Sequence[HarnessFile] | None = None,
    created_at: str,
) -> dict[str, Any]:
    """The complete diff.json object for two runs, keys in schema order.

    ``harness=None`` means no leakage scan was asked for; an empty sequence is a scan of zero
    files. Deterministic apart from ``created_at``; verify calls this same function.
    """
    options.validate()
    if options.require_generalization and split is None:
        raise UsageError("--require-generalization requires --held-out")
    check_comparable(baseline, current)
    baseline, current = align_matrix(baseline, current)
    for run in (baseline, current):
        require_assessed(run)

    rows, counts = compare_checks(baseline, current)
    blocking = sum(1 for row in rows if row["kind"] in BLOCKING_KINDS)
    blocking_noise = sum(
        1 for row in rows if row["kind"] in BLOCKING_KINDS and row.get("within_sampling_noise")
    )
    disagreeing = sum(1 for row in rows if "same_output_different_verdict" in row)
    baseline_incomplete = bool(baseline.incomplete)
    current_incomplete = bool(current.incomplete)

    report: dict[str, Any] = {
        "schema_version": DIFF_SCHEMA,
        "created_at": created_at,
        "format": baseline.format,
        "baseline": run_summary(baseline),
        "current": run_summary(current),
        "counts": _counts_json(counts),
        "numeric_pass_threshold": current.threshold,
        "blocking_changes": blocking,
        "blocking_changes_within_sampling_noise": blocking_noise,
        "changes_with_same_output_different_verdict": disagreeing,
    }
    if baseline_incomplete:
        report["baseline_incomplete"] = True
    report["current_incomplete"] = current_incomplete
    report["gate_passed"] = blocking == 0 and not current_incomplete and not baseline_incomplete
    report["changes"] = rows
    report["groups"] = change_groups(rows, baseline, current, BLOCKING_KINDS)
    report["interpretation"] = INTERPRETATION
    report["sampling_noise_note"] = SAMPLING_NOISE_NOTE
    matrix = matrix_sides(baseline, current)
    if matrix is not None:
        report["matrix"] = matrix
    report["usage"] = compare_usage(baseline, current)

    held_out: frozenset[str] | None = None
    if split is not None:
        generalization = review_generalization(rows, baseline, current, split)
        held_out = frozenset(generalization["split"]["held_out_cases"])
        report["generalization"] = generalization
    if harness is not None:
        report["leakage"] = scan_leakage(
            (baseline, current), harness, options.leak_min_chars, held_out
        )
    if options.require_generalization:
        leak_free = "leakage" not in report or report["leakage"]["held_out_hits"] == 0
        report["generalization_required"] = True
        report["generalization_passed"] = (
            report["generalization"]["state"] == "generalizes" and leak_free
        )
    if options.max_cost_ratio is not None:
        report["cost_gate"] = cost_gate(
            report["usage"], options.cost_metric, options.max_cost_ratio
        )
    return report


def overall_passed(report: dict[str, Any]) -> bool:
    """The exit-code decision: the quality gate AND any required generalization AND any cost
    gate. (summary.md's heading and the Action's gate-passed use the quality gate alone.)"""
    if not report.get("gate_passed", False):
        return False
    if not report.get("generalization_passed", True):
        return False
    cost = report.get("cost_gate")
    return not (isinstance(cost, dict) and not cost.get("passed", False))
