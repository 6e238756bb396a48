"""Replay a hill-climbing session and judge what it kept (``evalarc hillclimb-review``).

A tuner tries one change after another against the tuning cases. Each step is compared with the
last result that was KEPT (not with the baseline): it is kept only when it helps without hurting
the held-out cases, and rolled back as a regression, as overfitting (tuning rose, held-out did
not) or for lack of gain. Runs of rollbacks are "stalls", triaged so a reader can tell noise and
pipeline faults from real ceilings. The final kept result is compared with the baseline and a
merge recommendation follows.

Pure: this module reads only the in-memory model (runs, a split, harness bytes already read) and
returns the typed report (:class:`evalarc.review.hillclimb_model.HillclimbReport`). The decision
rule (:func:`compare_step`) is shared with ``hillclimb-run``.

Sampling noise and failure triage are eval-health's (:mod:`evalarc.review.health`); here the
triage is limited to tuning cases and judged against kept versions only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalarc import schemas
from evalarc.canonical import JSONValue
from evalarc.errors import IncomparableError, UsageError, VerificationError
from evalarc.formats.harness import HarnessFile
from evalarc.formats.model import Attempt, Run
from evalarc.formats.split import CaseSplit
from evalarc.review.diff import check_comparable
from evalarc.review.diff_model import BLOCKING_KINDS, Leakage, Pool
from evalarc.review.health import (
    TRIAGE_NEXT_STEPS,
    PooledTallies,
    failure_triage,
    noise_review,
)
from evalarc.review.health_model import TRIAGE_CATEGORIES
from evalarc.review.hillclimb_model import (
    HILLCLIMB_SCHEMA,
    OBJECTIVES,
    Baseline,
    BlockingChange,
    Cost,
    Final,
    HillclimbReport,
    NoisePair,
    RunEntry,
    Side,
    Snapshot,
    SplitPart,
    Stall,
    Step,
    TriageRow,
    TuningFailure,
)
from evalarc.review.leakage import MIN_LEAK_CHARS, scan_leakage
from evalarc.review.pairing import compare_checks, same_output_different_verdict, tally
from evalarc.review.split import partition, review_generalization
from evalarc.review.stats import rounded_interval
from evalarc.review.usage import COST_METRIC_CHOICES, compare_usage, cost_gate

TUNING_FAILURES_SCHEMA = schemas.TUNING_FAILURES
MAX_STEPS = 50
RECOMMENDATIONS: dict[str, str] = {
    "no_change_kept": "No step was kept, so there is nothing to merge.",
    "do_not_merge_leakage": (
        "Held-out case text appears in the harness, so the held-out cases no longer measure "
        "generalization; remove it and evaluate again before merging."
    ),
    "do_not_merge_regression": (
        "The kept result lost ground against the baseline (a held-out check lost passes or "
        "coverage, or a partition's pass rate fell); do not merge it."
    ),
    "do_not_merge_cost": (
        "The kept result is not cheaper than the baseline within the allowed cost ratio; do not "
        "merge it for cost."
    ),
    "merge_cost": (
        "The kept result is cheaper than the baseline with no held-out or tuning loss; merge it."
    ),
    "do_not_merge_within_noise": (
        "The held-out gain over the baseline is within sampling noise; record more cases or "
        "attempts before merging."
    ),
    "merge": (
        "The held-out cases improved beyond sampling noise with no regression; merge the kept "
        "result."
    ),
}
MERGE_RECOMMENDATIONS = frozenset({"merge", "merge_cost"})

_FIXABLE_CAUSES = frozenset({"pipeline", "truncated", "grader_inconsistent"})

HILLCLIMB_SCOPE = (
    "Each step was compared with the last kept result from the outcomes recorded in the result "
    "files; EvalArc did not rerun or authenticate the grading. Keep rules use raw pass-rate "
    "changes, so a kept step can still be noise; the merge recommendation for quality requires "
    "a held-out gain beyond the 95% Wilson intervals. The held-out split only helps if the "
    "held-out cases were kept from whoever tuned."
)


@dataclass(frozen=True)
class HillclimbOptions:
    """Every option that changes a hillclimb review; recorded in params.json, replayed by verify."""

    objective: str = "quality"
    cost_metric: str = "auto"
    max_cost_ratio: float = 1.0
    stall_after: int = 2
    min_effect: float | None = None
    min_steps: int = 1
    """1 for ``hillclimb-review``; 0 for ``hillclimb-run``, which may evaluate no step at all."""
    leak_min_chars: int = 12

    def validate(self) -> None:
        """Refuse out-of-range options before any input is read (UsageError)."""
        if self.objective not in OBJECTIVES:
            raise UsageError(f"unknown --objective {self.objective!r}; use quality or cost")
        if self.cost_metric not in COST_METRIC_CHOICES:
            raise UsageError(
                f"unknown --cost-metric {self.cost_metric!r}; use auto, cost, tokens or duration"
            )
        if (
            isinstance(self.max_cost_ratio, bool)
            or not isinstance(self.max_cost_ratio, int | float)
            or not math.isfinite(self.max_cost_ratio)
            or self.max_cost_ratio <= 0
        ):
            raise UsageError("--max-cost-ratio must be a positive number")
        if isinstance(self.stall_after, bool) or not isinstance(self.stall_after, int):
            raise UsageError("--stall-after must be an integer")
        if self.stall_after < 1:
            raise UsageError("--stall-after must be at least 1")
        if self.min_effect is not None and (
            isinstance(self.min_effect, bool)
            or not isinstance(self.min_effect, int | float)
            or not 0 < self.min_effect < 1
        ):
            raise UsageError("--min-effect must be between 0 and 1 (exclusive)")
        if self.min_steps not in (0, 1):
            raise UsageError("min_steps must be 0 or 1")
        if (
            isinstance(self.leak_min_chars, bool)
            or not isinstance(self.leak_min_chars, int)
            or self.leak_min_chars < MIN_LEAK_CHARS
        ):
            raise UsageError(f"--leak-min-chars must be at least {MIN_LEAK_CHARS}")

    def to_params(self) -> dict[str, JSONValue]:
        """The options as params.json records them (``labels``, inputs and files sit between
        ``leak_min_chars`` and ``min_steps`` there; the caller places them)."""
        return {
            "objective": self.objective,
            "cost_metric": self.cost_metric,
            "max_cost_ratio": self.max_cost_ratio,
            "stall_after": self.stall_after,
            "min_effect": self.min_effect,
            "leak_min_chars": self.leak_min_chars,
            "min_steps": self.min_steps,
        }

    @classmethod
    def from_params(cls, params: Mapping[str, Any], name: str) -> HillclimbOptions:
        """The options recorded in ``params`` (read from the file ``name``), type-checked and
        validated; every refusal is one line naming the file."""
        min_effect = params.get("min_effect")
        options = cls(
            objective=_param_text(params, "objective", name),
            cost_metric=_param_text(params, "cost_metric", name),
            max_cost_ratio=_param_number(params, "max_cost_ratio", name),
            stall_after=_param_integer(params, "stall_after", name),
            min_effect=None if min_effect is None else _param_number(params, "min_effect", name),
            min_steps=_param_integer(params, "min_steps", name),
            leak_min_chars=_param_integer(params, "leak_min_chars", name, 12),
        )
        try:
            options.validate()
        except UsageError as error:
            raise VerificationError(f"{name} records an invalid option: {error}") from None
        return options


def _param_number(params: Mapping[str, Any], key: str, name: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VerificationError(f"{name} has no numeric {key}")
    return value


def _param_integer(
    params: Mapping[str, Any], key: str, name: str, default: int | None = None
) -> int:
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise VerificationError(f"{name} has no integer {key}")
    return value


def _param_text(params: Mapping[str, Any], key: str, name: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise VerificationError(f"{name} has no text {key}")
    return value


# -- triage over kept versions (eval-health's rules) -------------------------------------------


def _inconsistent_checks(run: Run, history: Sequence[Run]) -> set[tuple[str, str]]:
    """(case, check) pairs of ``run`` where one recorded output was graded both pass and fail
    somewhere in ``history``."""
    found: set[tuple[str, str]] = set()
    for case_id, checks in run.cases.items():
        for check in checks:
            pooled: list[Attempt] = []
            for version in history:
                pooled.extend(version.cases.get(case_id, {}).get(check, ()))
            if same_output_different_verdict(pooled) > 0:
                found.add((case_id, check))
    return found


def triage_cases(run: Run, case_ids: Sequence[str], history: Sequence[Run]) -> list[TriageRow]:
    """eval-health's failure triage of ``run``, limited to ``case_ids``, judged against the kept
    versions in ``history`` (``run`` included). One kept version cannot tell a ceiling from a
    bad start, so ``never_passes`` becomes ``consistent_failure`` until there are two."""
    wanted = set(case_ids)
    versions = list(history)
    if not any(version is run for version in versions):
        versions.append(run)
    rows = failure_triage(run, PooledTallies(versions), _inconsistent_checks(run, versions))
    result: list[TriageRow] = []
    for row in rows:
        if row.case_id not in wanted:
            continue
        category = row.category
        if category == "never_passes" and len(versions) < 2:
            category = "consistent_failure"
        result.append(TriageRow(row.case_id, category, row.checks, TRIAGE_NEXT_STEPS[category]))
    return result


def category_counts(rows: Sequence[TriageRow]) -> dict[str, int]:
    counts = dict.fromkeys(TRIAGE_CATEGORIES, 0)
    for row in rows:
        counts[row.category] += 1
    return {category: count for category, count in counts.items() if count}


# -- one step -----------------------------------------------------------------------------------


def pooled_snapshot(run: Run, case_ids: Sequence[str]) -> Snapshot:
    """Pooled pass counts of ``case_ids`` over every check and attempt, with a Wilson interval."""
    passed = assessed = attempts = 0
    for case_id in case_ids:
        for check_attempts in run.cases.get(case_id, {}).values():
            side = tally(check_attempts)
            passed += side.passed
            assessed += side.assessed
            attempts += side.attempts
    interval = rounded_interval(passed, assessed)
    return Snapshot(
        passed=passed,
        assessed=assessed,
        attempts=attempts,
        pass_rate=passed / assessed if assessed else None,
        interval_95=None if interval is None else (interval[0], interval[1]),
    )


def cost_probe(earlier: Run, later: Run, metric: str) -> Cost | None:
    """Mean-usage ratio of ``later`` over ``earlier`` on the chosen metric; None when the runs
    do not record it for every attempt (the probe never fails a review by itself)."""
    usage = compare_usage(earlier, later)
    try:
        gate = cost_gate(usage, metric, 1.0)
    except UsageError:
        return None
    return Cost(
        metric=gate["metric"],
        baseline_mean=gate["baseline_mean"],
        current_mean=gate["current_mean"],
        ratio=gate["ratio"],
    )


def _pool(part: Mapping[str, Any]) -> Pool:
    return Pool(part["passed"], part["assessed"], part["attempts"], part["pass_rate"])


def _side(part: Mapping[str, Any]) -> Side:
    return Side(
        baseline=_pool(part["baseline"]),
        current=_pool(part["current"]),
        delta=part["delta"],
        within_sampling_noise=part["within_sampling_noise"],
        blocking_changes=part["blocking_changes"],
    )


@dataclass(frozen=True)
class StepComparison:
    """One result compared with the last kept result, and the decision."""

    decision: str
    reason: str
    tuning: Side
    held_out: Side
    cost: Cost | None
    held_out_blocking: tuple[BlockingChange, ...]
    same_output_different_verdict: int

    @property
    def kept(self) -> bool:
        return self.decision == "keep"


# -- how the review's numbers read (terminal, summary.md and the page alike) -------------------


def points(delta: float | None) -> str:
    """A pass-rate change in signed percentage points, one decimal (``+20.8 pp``)."""
    return "n/a" if delta is None else f"{delta * 100:+.1f} pp"


_pp = points


def percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.1f}%"


def ratio_text(cost: Cost | None) -> str:
    return "—" if cost is None else f"{cost.ratio:.3f}"


def fraction(side: Pool | Snapshot) -> str:
    return f"{side.passed}/{side.assessed}"


def interval_text(side: Pool | Snapshot) -> str:
    interval = rounded_interval(side.passed, side.assessed)
    return "—" if interval is None else f"{interval[0]:.3f}–{interval[1]:.3f}"


def category_text(categories: Mapping[str, int]) -> str:
    if not categories:
        return "none"
    return ", ".join(f"{name.replace('_', ' ')} {count}" for name, count in categories.items())


def _positive(delta: float | None) -> bool:
    return delta is not None and delta > 0


def _negative(delta: float | None) -> bool:
    return delta is not None and delta < 0


def decide(
    objective: str,
    tuning_delta: float | None,
    held_out_delta: float | None,
    held_out_blocking: int,
    cost: Cost | None,
    label: str,
) -> tuple[str, str]:
    """The decision for one step and a one-line reason (first matching rule wins).

    Regression and overfitting are checked before cost, so a cheaper step that loses held-out
    ground or only fits the tuning cases is never kept. Keep rules use raw deltas.
    """
    problems: list[str] = []
    if held_out_blocking > 0:
        problems.append(f"{held_out_blocking} held-out check(s) lost passes or coverage")
    if _negative(held_out_delta):
        problems.append(f"the held-out pass rate fell ({_pp(held_out_delta)})")
    if _negative(tuning_delta):
        problems.append(f"the tuning pass rate fell ({_pp(tuning_delta)})")
    if problems:
        return "rollback_regression", "; ".join(problems)
    if _positive(tuning_delta) and not _positive(held_out_delta):
        return "rollback_overfit", (
            f"the tuning pass rate rose ({_pp(tuning_delta)}) but the held-out pass rate did not "
            f"({_pp(held_out_delta)})"
        )
    both_rose = _positive(tuning_delta) and _positive(held_out_delta)
    if objective == "cost":
        if cost is None:
            raise UsageError(
                f"--objective cost needs recorded cost or tokens for every attempt; {label} "
                "cannot be compared on cost (pass --cost-metric duration to use recorded time)"
            )
        ratio = float(cost.ratio)
        if ratio < 1:
            return "keep", f"{cost.metric} fell to {ratio:.3f}x with no pass-rate loss"
        if both_rose and ratio <= 1:
            return "keep", (
                f"both pass rates rose (tuning {_pp(tuning_delta)}, held out "
                f"{_pp(held_out_delta)}) at unchanged {cost.metric}"
            )
        return "rollback_no_gain", (
            f"{cost.metric} did not fall ({ratio:.3f}x) and the pass rates did not both rise"
        )
    if both_rose:
        return "keep", (
            f"both pass rates rose (tuning {_pp(tuning_delta)}, held out {_pp(held_out_delta)})"
        )
    return "rollback_no_gain", (
        f"the pass rates did not both rise (tuning {_pp(tuning_delta)}, held out "
        f"{_pp(held_out_delta)})"
    )


def compare_step(
    kept: Run, current: Run, split: CaseSplit, options: HillclimbOptions, label: str
) -> StepComparison:
    """Compare ``current`` with the last kept result: diff, split review, cost probe, decision."""
    rows, _ = compare_checks(kept, current)
    review = review_generalization(rows, kept, current, split)
    held = set(review["split"]["held_out_cases"])
    tuning = _side(review["partitions"]["tuning"])
    held_out = _side(review["partitions"]["held_out"])
    held_blocking = tuple(
        BlockingChange(row["case_id"], row["check"], row["kind"])
        for row in rows
        if row["kind"] in BLOCKING_KINDS and row["case_id"] in held
    )
    cost = cost_probe(kept, current, options.cost_metric)
    decision, reason = decide(
        options.objective,
        tuning.delta,
        held_out.delta,
        len(held_blocking),
        cost,
        label,
    )
    return StepComparison(
        decision=decision,
        reason=reason,
        tuning=tuning,
        held_out=held_out,
        cost=cost,
        held_out_blocking=held_blocking,
        same_output_different_verdict=sum(
            1 for row in rows if "same_output_different_verdict" in row
        ),
    )


# -- stalls, tuning failures ------------------------------------------------------------------


def stall_entry(
    after_step: int,
    kept_label: str,
    kept_run: Run,
    kept_history: Sequence[Run],
    tuning_ids: Sequence[str],
    tuning_noise: float,
    *,
    with_rows: bool = True,
) -> Stall:
    """Why the climb stopped finding gains: triage of the last kept result's failing tuning
    cases (history = kept versions only), headroom left and whether noise swallows it."""
    rows = triage_cases(kept_run, tuning_ids, kept_history)
    counts = category_counts(rows)
    rate = pooled_snapshot(kept_run, tuning_ids).pass_rate
    headroom = None if rate is None else 1 - rate
    below = headroom is not None and headroom < tuning_noise
    if _FIXABLE_CAUSES & counts.keys():
        advice = (
            "Fix the pipeline, truncation or grader causes in the triage first; until then a "
            "step's pass rate does not measure the change."
        )
    elif below:
        advice = (
            "Stop tuning: the tuning headroom left is smaller than the change the baseline's "
            "attempts can resolve. Add cases or repetitions before trying more steps."
        )
    else:
        advice = (
            "The last steps found no gain. Read the triage before the next proposal, or add "
            "cases or repetitions so smaller gains become visible."
        )
    return Stall(
        after_step=after_step,
        kept=kept_label,
        remaining_tuning_failures=len(rows),
        categories=counts,
        triage=tuple(rows) if with_rows else None,
        tuning_headroom=headroom,
        headroom_below_noise=below,
        advice=advice,
    )


def tuning_failures(run: Run, tuning_ids: Sequence[str]) -> list[TuningFailure]:
    """Every tuning (case, check) of ``run`` with a non-passing attempt, with its evidence.
    Held-out cases never appear, so the list can be handed to whoever proposes the next step."""
    failures: list[TuningFailure] = []
    for case_id in tuning_ids:
        checks = run.cases.get(case_id, {})
        for check in sorted(checks):
            attempts = checks[check]
            failed = sum(1 for attempt in attempts if attempt.passed is not True)
            if failed == 0:
                continue
            evidence = sorted(
                {
                    attempt.evidence
                    for attempt in attempts
                    if attempt.passed is not True and attempt.evidence
                }
            )
            failures.append(TuningFailure(case_id, check, failed, len(attempts), tuple(evidence)))
    return failures


# -- the whole review ---------------------------------------------------------------------------


def check_runs(runs: Sequence[Run], labels: Sequence[str], min_steps: int) -> None:
    """Refuse inputs a replay cannot compare: step count, formats, tasks, case sets."""
    if len(labels) != len(runs):
        raise UsageError("every result needs exactly one label")
    steps = len(runs) - 1
    if not min_steps <= steps <= MAX_STEPS:
        low = "no" if min_steps == 0 else str(min_steps)
        raise UsageError(
            f"hillclimb review needs a baseline and {low} to {MAX_STEPS} steps; got {steps}"
        )
    baseline = runs[0]
    cases = baseline.cases.keys()
    for run, label in zip(runs[1:], labels[1:], strict=True):
        check_comparable(baseline, run)
        if run.cases.keys() != cases:
            raise IncomparableError(
                f"{label} and {labels[0]} do not record the same cases; every result of a "
                "hill climb must cover the same cases"
            )


def _notes(noise: NoisePair, min_effect: float | None) -> list[str]:
    notes: list[str] = []
    if min_effect is None:
        return notes
    for entry, name in ((noise.tuning, "tuning"), (noise.held_out, "held-out")):
        if entry.resolvable_change > min_effect:
            needed = entry.attempts_for_min_effect
            tail = f"; about {needed} attempts would resolve it" if needed is not None else ""
            notes.append(
                f"The baseline's {entry.assessed_attempts} {name} attempts resolve only "
                f"changes of about {entry.resolvable_change * 100:.1f}%, more than the "
                f"{min_effect * 100:.1f}% effect you care about{tail}."
            )
    return notes


def recommend(
    objective: str,
    kept_any: bool,
    leakage: Leakage | None,
    final: Final,
    max_cost_ratio: float,
) -> str:
    """The merge recommendation for the final kept result (first matching rule)."""
    if not kept_any:
        return "no_change_kept"
    if leakage is not None and leakage.held_out_hits > 0:
        return "do_not_merge_leakage"
    held_delta = final.held_out.delta
    if (
        final.held_out_blocking_changes > 0
        or _negative(held_delta)
        or _negative(final.tuning.delta)
    ):
        return "do_not_merge_regression"
    if objective == "cost":
        cost = final.cost
        if cost is None or cost.ratio > max_cost_ratio or cost.ratio >= 1:
            return "do_not_merge_cost"
        return "merge_cost"
    if not _positive(held_delta) or final.held_out.within_sampling_noise:
        return "do_not_merge_within_noise"
    return "merge"


def compute_hillclimb(
    runs: Sequence[Run],
    labels: Sequence[str],
    split: CaseSplit,
    options: HillclimbOptions,
    *,
    harness: Sequence[HarnessFile] | None = None,
    created_at: str,
) -> HillclimbReport:
    """The complete hillclimb review: ``runs[0]`` is the baseline, the rest are the steps
    in the order they were tried. Deterministic apart from ``created_at``; verify calls this."""
    options.validate()
    check_runs(runs, labels, options.min_steps)
    baseline = runs[0]
    held_out_ids, tuning_ids = partition(split, baseline.cases.keys())

    base_tuning = pooled_snapshot(baseline, tuning_ids)
    base_held = pooled_snapshot(baseline, held_out_ids)
    noise = NoisePair(
        tuning=noise_review(base_tuning.passed, base_tuning.assessed, options.min_effect),
        held_out=noise_review(base_held.passed, base_held.assessed, options.min_effect),
    )

    kept_index = 0
    kept_history: list[Run] = [baseline]
    streak = 0
    steps: list[Step] = []
    stalls: list[Stall] = []
    for index in range(1, len(runs)):
        current = runs[index]
        step = compare_step(runs[kept_index], current, split, options, labels[index])
        compared_with = labels[kept_index]
        stalled = False
        if step.kept:
            kept_index = index
            kept_history.append(current)
            streak = 0
        else:
            streak += 1
            if streak == options.stall_after:
                stalled = True
                stalls.append(
                    stall_entry(
                        index,
                        labels[kept_index],
                        runs[kept_index],
                        kept_history,
                        tuning_ids,
                        noise.tuning.resolvable_change,
                    )
                )
        steps.append(
            Step(
                index=index,
                label=labels[index],
                source=current.source,
                compared_with=compared_with,
                decision=step.decision,
                reason=step.reason,
                tuning=step.tuning,
                held_out=step.held_out,
                cost=step.cost,
                held_out_blocking_changes=step.held_out_blocking,
                changes_with_same_output_different_verdict=step.same_output_different_verdict,
                kept=step.kept,
                stalled=stalled,
            )
        )

    final_run = runs[kept_index]
    final_rows, _ = compare_checks(baseline, final_run)
    final_review = review_generalization(final_rows, baseline, final_run, split)
    held_interval = base_held.interval_95
    final = Final(
        label=labels[kept_index],
        index=kept_index,
        tuning=_side(final_review["partitions"]["tuning"]),
        held_out=_side(final_review["partitions"]["held_out"]),
        baseline_held_out_interval_95=held_interval,
        held_out_blocking_changes=final_review["partitions"]["held_out"]["blocking_changes"],
        cost=cost_probe(baseline, final_run, options.cost_metric),
    )
    leakage = (
        None
        if harness is None
        else Leakage.from_scan(
            scan_leakage(runs, harness, options.leak_min_chars, frozenset(held_out_ids))
        )
    )
    recommendation = recommend(
        options.objective, kept_index > 0, leakage, final, options.max_cost_ratio
    )
    return HillclimbReport(
        schema_version=HILLCLIMB_SCHEMA,
        created_at=created_at,
        objective=options.objective,
        format=baseline.format,
        split=SplitPart(
            source=split.source,
            entries=tuple(split.held_out),
            held_out_cases=tuple(held_out_ids),
            tuning_cases=len(tuning_ids),
        ),
        runs=tuple(RunEntry(label, run.source) for label, run in zip(labels, runs, strict=True)),
        baseline=Baseline(labels[0], base_tuning, base_held),
        noise=noise,
        min_effect=options.min_effect,
        notes=tuple(_notes(noise, options.min_effect)),
        steps=tuple(steps),
        stalls=tuple(stalls),
        final=final,
        leakage=leakage,
        max_cost_ratio=options.max_cost_ratio,
        recommendation=recommendation,
        recommendation_text=RECOMMENDATIONS[recommendation],
        merge_recommended=recommendation in MERGE_RECOMMENDATIONS,
        tuning_failures=tuple(tuning_failures(final_run, tuning_ids)),
        scope=HILLCLIMB_SCOPE,
    )


def tuning_failures_document(report: HillclimbReport) -> dict[str, JSONValue]:
    """tuning-failures.json: the final kept result's tuning failures, safe to hand to a tuner
    (held-out cases are excluded by construction)."""
    held = set(report.split.held_out_cases)
    return {
        "schema_version": TUNING_FAILURES_SCHEMA,
        "kept": report.final.label,
        "held_out_excluded": True,
        "failures": [row.to_json() for row in report.tuning_failures if row.case_id not in held],
    }
