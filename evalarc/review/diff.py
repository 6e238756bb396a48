"""Compare two result files check by check and decide the quality gate (``evalarc diff``).

Every (case, check) pair in either run gets a tally per side; one classification rule list turns
the two tallies into a change kind. The gate fails on any blocking kind and on any run that did
not finish. This module is pure: it reads only the in-memory model and returns the typed report
(:class:`evalarc.review.diff_model.DiffReport`, whose ``to_json()`` is diff.json).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalarc.canonical import JSONValue
from evalarc.errors import IncomparableError, InputError, UsageError, VerificationError
from evalarc.formats.harness import HarnessFile
from evalarc.formats.junit_producers import JUnitCases, ambiguous_group
from evalarc.formats.model import Run
from evalarc.formats.promptfoo import align_matrix, matrix_sides
from evalarc.formats.split import CaseSplit
from evalarc.review.cluster import change_groups
from evalarc.review.diff_model import BLOCKING_KINDS as BLOCKING_KINDS
from evalarc.review.diff_model import DIFF_SCHEMA as DIFF_SCHEMA
from evalarc.review.diff_model import KIND_ORDER as KIND_ORDER
from evalarc.review.diff_model import NON_BLOCKING_KINDS as NON_BLOCKING_KINDS
from evalarc.review.diff_model import (
    ChangeCounts,
    ChangeRow,
    CostGate,
    DiffReport,
    Generalization,
    Leakage,
    Matrix,
    PassRate,
    RunSummary,
    Usage,
)
from evalarc.review.leakage import MIN_LEAK_CHARS, scan_leakage
from evalarc.review.pairing import pair_checks, tally
from evalarc.review.split import review_generalization
from evalarc.review.stats import rounded_interval
from evalarc.review.usage import COST_METRIC_CHOICES, compare_usage, cost_gate

REPORT_FILE = "diff.json"

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

    def to_params(self) -> dict[str, JSONValue]:
        """The options as params.json records them (in this order)."""
        return {
            "threshold": self.threshold,
            "leak_min_chars": self.leak_min_chars,
            "require_generalization": self.require_generalization,
            "max_cost_ratio": self.max_cost_ratio,
            "cost_metric": self.cost_metric,
        }

    @staticmethod
    def from_params(params: Mapping[str, object], name: str) -> DiffOptions:
        """The options recorded in ``params`` (read from the file ``name``), validated: a missing
        or malformed option is refused in one line naming the file (VerificationError), an
        out-of-range one like the command line's (UsageError)."""
        threshold = _param_number(params, "threshold", name)
        leak_min_chars = _param_number(params, "leak_min_chars", name)
        if not isinstance(leak_min_chars, int):
            if not leak_min_chars.is_integer():
                raise VerificationError(f"{name} has a leak_min_chars that is not a whole number")
            leak_min_chars = int(leak_min_chars)
        require_generalization = params.get("require_generalization")
        if not isinstance(require_generalization, bool):
            raise VerificationError(f"{name} has no true or false require_generalization")
        cost_metric = params.get("cost_metric")
        if not isinstance(cost_metric, str):
            raise VerificationError(f"{name} has no cost_metric")
        options = DiffOptions(
            threshold=threshold,
            leak_min_chars=leak_min_chars,
            require_generalization=require_generalization,
            max_cost_ratio=None
            if params.get("max_cost_ratio") is None
            else _param_number(params, "max_cost_ratio", name),
            cost_metric=cost_metric,
        )
        options.validate()
        return options


def _param_number(params: Mapping[str, object], key: str, name: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VerificationError(f"{name} has no numeric {key}")
    try:
        float(value)
    except OverflowError:  # an integer written with hundreds of digits
        raise VerificationError(f"{name} has a {key} beyond any number") from None
    return value


def run_summary(run: Run) -> RunSummary:
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
    interval = rounded_interval(passed, assessed)
    identity = _plain(run.identity)
    assert isinstance(identity, dict)
    return RunSummary(
        source=run.source,
        identity=identity,
        incomplete=run.incomplete,
        headline=run.headline,
        cases=len(run.cases),
        checks=checks,
        check_pass_rate=PassRate(
            name="passed check attempts",
            value=passed / assessed if assessed else None,
            passed=passed,
            assessed=assessed,
            interval_95=(interval[0], interval[1]) if interval is not None else None,
        ),
    )


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


def _refuse_ambiguous_groups(baseline: Run, current: Run, rows: Sequence[ChangeRow]) -> None:
    """Fail closed where tests sharing one id are paired by order and that could hide a change
    no blocking row shows (see :func:`evalarc.formats.junit_producers.ambiguous_group`)."""
    if not any(
        isinstance(run.cases, JUnitCases) and run.cases.groups for run in (baseline, current)
    ):
        return
    blocked = {row.case_id for row in rows if row.kind in BLOCKING_KINDS}
    problem = ambiguous_group(baseline.cases, current.cases, blocked)
    if problem is not None:
        raise InputError(f"{current.source.name}: {problem}")


def diff_report(
    baseline: Run,
    current: Run,
    options: DiffOptions,
    *,
    split: CaseSplit | None = None,
    harness: Sequence[HarnessFile] | None = None,
    created_at: str,
) -> DiffReport:
    """The diff report of two runs (``to_json()`` is the complete diff.json object).

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

    pairing = pair_checks(baseline, current)
    rows = pairing.rows
    _refuse_ambiguous_groups(baseline, current, pairing.rows)
    baseline_incomplete = bool(baseline.incomplete)
    current_incomplete = bool(current.incomplete)
    matrix = matrix_sides(baseline, current)
    usage = compare_usage(baseline, current)

    generalization: Generalization | None = None
    held_out: frozenset[str] | None = None
    if split is not None:
        # The split review reads the rows as diff.json holds them (as hillclimb's steps do).
        row_json = [row.to_json() for row in rows]
        generalization = Generalization.from_json(
            review_generalization(row_json, baseline, current, split), REPORT_FILE
        )
        held_out = frozenset(generalization.split.held_out_cases)
    leakage: Leakage | None = None
    if harness is not None:
        leakage = Leakage.from_json(
            scan_leakage((baseline, current), harness, options.leak_min_chars, held_out),
            REPORT_FILE,
        )
    generalization_passed: bool | None = None
    if options.require_generalization:
        assert generalization is not None  # a split is required above
        leak_free = leakage is None or leakage.held_out_hits == 0
        generalization_passed = generalization.state == "generalizes" and leak_free
    cost: CostGate | None = None
    if options.max_cost_ratio is not None:
        cost = CostGate.from_json(
            cost_gate(usage, options.cost_metric, options.max_cost_ratio), REPORT_FILE
        )
    return DiffReport(
        schema_version=DIFF_SCHEMA,
        created_at=created_at,
        format=baseline.format,
        baseline=run_summary(baseline),
        current=run_summary(current),
        counts=ChangeCounts.from_counts(pairing.counts),
        numeric_pass_threshold=current.threshold,
        blocking_changes=pairing.blocking,
        blocking_changes_within_sampling_noise=pairing.blocking_within_sampling_noise,
        changes_with_same_output_different_verdict=pairing.same_output_different_verdict,
        baseline_incomplete=baseline_incomplete,
        current_incomplete=current_incomplete,
        gate_passed=pairing.blocking == 0 and not current_incomplete and not baseline_incomplete,
        changes=rows,
        groups=change_groups(rows, baseline, current),
        interpretation=INTERPRETATION,
        sampling_noise_note=SAMPLING_NOISE_NOTE,
        matrix=Matrix.from_json(matrix, REPORT_FILE) if matrix is not None else None,
        usage=Usage.from_json(usage, REPORT_FILE),
        generalization=generalization,
        leakage=leakage,
        generalization_passed=generalization_passed,
        cost_gate=cost,
    )


def compute_diff(
    baseline: Run,
    current: Run,
    options: DiffOptions,
    *,
    split: CaseSplit | None = None,
    harness: Sequence[HarnessFile] | None = None,
    created_at: str,
) -> dict[str, JSONValue]:
    """The complete diff.json object for two runs, keys in schema order: the JSON of
    :func:`diff_report`."""
    return diff_report(
        baseline, current, options, split=split, harness=harness, created_at=created_at
    ).to_json()


def overall_passed(report: DiffReport) -> bool:
    """The exit-code decision (see :attr:`DiffReport.passed`)."""
    return report.passed
