"""Can these saved results support decisions? (``evalarc eval-health``)

Before anyone tunes a system against an evaluation, the evaluation itself should be checked: is
it saturated, are some checks failing whatever the system does, do checks flip between attempts,
is the grader consistent, is the sample large enough to see the change being chased, and where
did the cases come from. :func:`compute_health` answers those questions from 1 to 20 result
files of the same evaluation, all loaded into the shared model, and returns the complete
``health.json`` object. It is pure: no I/O, no clock (``created_at`` is passed in), so the command
and ``evalarc verify`` get identical results from identical inputs. The report is typed
(:class:`evalarc.review.health_model.HealthReport`); its ``to_json()`` is health.json.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalarc.canonical import JSONValue, strict_loads
from evalarc.errors import IncomparableError, UsageError, VerificationError
from evalarc.formats.manifest import CASE_SOURCES, REAL_SOURCES, CaseManifest, CaseRule
from evalarc.formats.model import Attempt, Run
from evalarc.review.health_model import (
    HEALTH_SCHEMA,
    INFO,
    WARNING,
    CapabilityStep,
    FindingItem,
    Graders,
    HealthReport,
    Noise,
    Plan,
    Provenance,
    RunSummary,
    Size,
    TriageEntry,
)
from evalarc.review.health_model import Finding as RecordedFinding
from evalarc.review.manifest import assign_rules
from evalarc.review.pairing import Tally, tally
from evalarc.review.stats import WILSON_Z, intervals_overlap, rounded_interval, wilson_interval
from evalarc.review.usage import finite_total

MAX_INPUTS = 20
MAX_PLAN = 1_000_000_000
"""The most attempts per case or configurations a planned run may name (more is a typo, and a
count beyond float range cannot be multiplied into a cost)."""
DEFAULT_SATURATION = 0.95
FLAKY_WARNING_SHARE = 0.10
"""Flaky checks are a warning when more than this share of repeated checks flip."""
JUDGE_MIN_OUTPUTS = 10
JUDGE_MAX_DISTINCT = 10
MAX_FINDING_ITEMS = 1000
"""Items kept per finding in health.json; ``items_total`` gives the full count when cut."""

FINDING_IDS: tuple[str, ...] = (
    "saturated",
    "always_failing",
    "flaky_checks",
    "unassessed_attempts",
    "single_attempt",
    "noise_exceeds_min_effect",
    "inconsistent_grading",
    "truncated_outputs",
    "self_graded",
    "model_judge_replaceable",
    "config_not_applied",
    "capability_inversion",
    "provenance_undeclared",
    "no_real_cases",
    "mostly_synthetic",
    "adversarial_sampling",
    "traffic_only",
)
"""Every finding id, in the order findings are reported."""

TRIAGE_NEXT_STEPS: dict[str, str] = {
    "pipeline": "Fix the harness or grader error first; the attempt never reached a verdict.",
    "truncated": "Raise the output token limit; the answer was cut off before it was graded.",
    "grader_inconsistent": "Pin the grader: the same output received both verdicts.",
    "regressed": "Inspect what broke: this case passed in another result file.",
    "never_passes": (
        "Read the task and the grader for ambiguity; nothing recorded ever passed this case."
    ),
    "variable": "Add attempts: the case passes only sometimes, so one run cannot tell.",
    "consistent_failure": "Find and fix the root cause; the case fails the same way each time.",
}

THINKING_EFFORTS_OFF = frozenset({"none", "minimal"})
SCOPE = (
    "Findings describe the outcomes recorded in the result files. EvalArc did not rerun or "
    "authenticate any grading; sampling noise uses 95% Wilson intervals and the normal "
    "approximation, and case provenance is only what the manifest declares."
)
PROVENANCE_SCOPE = (
    "Sources are as declared by the case manifest; EvalArc cannot check where a case really "
    "came from."
)


@dataclass(frozen=True)
class HealthOptions:
    """Every option that changes a health report; recorded in params.json and replayed."""

    threshold: float = 1.0
    saturation: float = DEFAULT_SATURATION
    min_effect: float | None = None
    ordered: bool = False
    plan_attempts: int | None = None
    plan_configs: int | None = None

    def validate(self, inputs: int | None = None) -> None:
        """Refuse out-of-range options (UsageError); ``inputs`` = number of result files."""
        if isinstance(self.threshold, bool) or not math.isfinite(self.threshold):
            raise UsageError("--threshold must be a finite number")
        if (
            isinstance(self.saturation, bool)
            or not math.isfinite(self.saturation)
            or not 0 < self.saturation <= 1
        ):
            raise UsageError("--saturation must be greater than 0 and at most 1")
        if self.min_effect is not None and (
            isinstance(self.min_effect, bool)
            or not math.isfinite(self.min_effect)
            or not 0 < self.min_effect < 1
        ):
            raise UsageError("--min-effect must be between 0 and 1 (exclusive)")
        for flag, value in (
            ("--plan-attempts", self.plan_attempts),
            ("--plan-configs", self.plan_configs),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PLAN
            ):
                raise UsageError(f"{flag} must be a whole number from 1 to {MAX_PLAN:,}")
        if inputs is not None:
            if not 1 <= inputs <= MAX_INPUTS:
                raise UsageError(f"eval-health reads 1 to {MAX_INPUTS} result files, not {inputs}")
            if self.ordered and inputs < 2:
                raise UsageError("--ordered needs at least two result files")

    def to_params(self) -> dict[str, JSONValue]:
        """The options as params.json records them."""
        return {
            "threshold": self.threshold,
            "saturation": self.saturation,
            "min_effect": self.min_effect,
            "ordered": self.ordered,
            "plan_attempts": self.plan_attempts,
            "plan_configs": self.plan_configs,
        }

    @classmethod
    def from_params(cls, params: Mapping[str, Any], name: str) -> HealthOptions:
        """The options recorded in ``params`` (read from the file ``name``), type-checked;
        ranges are checked by :meth:`validate` when the report is recomputed."""
        threshold = _optional_number(params, "threshold", name)
        saturation = _optional_number(params, "saturation", name)
        if threshold is None or saturation is None:
            raise VerificationError(f"{name} must record threshold and saturation")
        ordered = params.get("ordered")
        if not isinstance(ordered, bool):
            raise VerificationError(f"{name} has a non-boolean ordered")
        return cls(
            threshold=threshold,
            saturation=saturation,
            min_effect=_optional_number(params, "min_effect", name),
            ordered=ordered,
            plan_attempts=_optional_count(params, "plan_attempts", name),
            plan_configs=_optional_count(params, "plan_configs", name),
        )


def _optional_number(params: Mapping[str, Any], key: str, name: str) -> float | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VerificationError(f"{name} has a non-numeric {key}")
    try:
        float(value)
    except OverflowError:  # an integer written with hundreds of digits
        raise VerificationError(f"{name} has a {key} beyond any number") from None
    return value


def _optional_count(params: Mapping[str, Any], key: str, name: str) -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise VerificationError(f"{name} has a non-integer {key}")
    return value


# -- findings ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One finding of ``health.json``; ``id`` is one of FINDING_IDS."""

    id: str
    severity: str
    """``warning`` (counts against ``healthy``) or ``info``."""
    message: str
    value: float | int | None = None
    """The finding's measure: a share (flaky, unassessed, synthetic), a pass rate (saturated),
    a resolvable change, the lowest delta (inversion) or a count of what it lists."""
    items: list[FindingItem] = field(default_factory=list)

    def recorded(self) -> RecordedFinding:
        """The finding as health.json records it: at most MAX_FINDING_ITEMS items, with the
        full count when the list was cut."""
        return RecordedFinding(
            id=self.id,
            severity=self.severity,
            message=self.message,
            value=self.value,
            items=tuple(self.items[:MAX_FINDING_ITEMS]),
            items_total=len(self.items) if len(self.items) > MAX_FINDING_ITEMS else None,
        )


def _item(case_id: str, check: str, counts: Tally, file: str | None = None) -> FindingItem:
    return FindingItem(
        case_id=case_id,
        check=check,
        passed=counts.passed,
        assessed=counts.assessed,
        attempts=counts.attempts,
        file=file,
    )


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


def _percent(share: float) -> str:
    return f"{share * 100:.1f}%"


def _listed(names: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# -- per-run facts ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _CheckRow:
    case_id: str
    check: str
    attempts: Sequence[Attempt]
    counts: Tally


@dataclass(frozen=True)
class _RunTable:
    """A run's (case, check) rows in sorted order, for the findings to walk: each walk tallies
    the rows as it goes (a run of half a million cases would hold 130 MB of rows)."""

    run: Run
    case_ids: list[str]
    """The run's case ids, sorted once."""

    @property
    def name(self) -> str:
        return self.run.source.name

    @property
    def rows(self) -> Iterator[_CheckRow]:
        cases = self.run.cases
        for case_id in self.case_ids:
            checks = cases[case_id]
            for check in sorted(checks):
                attempts = checks[check]
                yield _CheckRow(case_id, check, attempts, tally(attempts))


def _table(run: Run) -> _RunTable:
    return _RunTable(run, sorted(run.cases))


def _sum_usage(run: Run, metric: str) -> tuple[float | None, int]:
    """(total, reporting attempts) of one usage metric over every attempt row of a run."""
    total = 0.0
    reported = 0
    for case_id in sorted(run.samples):
        for meta in run.samples[case_id]:
            value = meta.usage.get(metric)
            if value is not None:
                total += value
                reported += 1
    return (finite_total(total, run, metric) if reported else None), reported


def _mean(total: float | None, reported: int) -> float | None:
    return total / reported if total is not None and reported else None


def _run_summary(table: _RunTable) -> RunSummary:
    run = table.run
    passed = assessed = attempts = checks = repeated = max_attempts = 0
    for row in table.rows:
        counts = row.counts
        checks += 1
        passed += counts.passed
        assessed += counts.assessed
        attempts += counts.attempts
        repeated += counts.assessed >= 2
        max_attempts = max(max_attempts, counts.attempts)
    duration, duration_reported = _sum_usage(run, "duration_seconds")
    cost, cost_reported = _sum_usage(run, "cost_usd")
    truncated = sum(meta.truncated for metas in run.samples.values() for meta in metas)
    interval = rounded_interval(passed, assessed)
    return RunSummary(
        source=run.source,
        identity=dict(run.identity),
        incomplete=run.incomplete,
        cases=len(run.cases),
        checks=checks,
        repeated_checks=repeated,
        max_attempts=max_attempts,
        passed=passed,
        assessed=assessed,
        attempts=attempts,
        pass_rate=passed / assessed if assessed else None,
        interval_95=None if interval is None else (interval[0], interval[1]),
        mean_duration_seconds=_mean(duration, duration_reported),
        mean_cost_usd=_mean(cost, cost_reported),
        total_duration_seconds=duration,
        total_cost_usd=cost,
        generate_config=dict(run.generate_config),
        truncated_attempts=truncated,
    )


# -- sampling noise ---------------------------------------------------------------------------


def _clamped_rate(passed: int, assessed: int) -> float:
    """The pass rate pulled inside [1/(n+1), n/(n+1)] so that 0% and 100% still have width."""
    if assessed <= 0:
        return 0.5
    low = 1.0 / (assessed + 1)
    high = assessed / (assessed + 1)
    return min(max(passed / assessed, low), high)


def resolvable_change(passed: int, assessed: int) -> float:
    """The smallest pass-rate change two runs of this size can tell apart at 95%:
    ``min(1, 2·z·sqrt(p(1−p)/n))`` with the clamped pass rate (1.0 when nothing was assessed)."""
    if assessed <= 0:
        return 1.0
    rate = _clamped_rate(passed, assessed)
    return min(1.0, 2.0 * WILSON_Z * math.sqrt(rate * (1.0 - rate) / assessed))


def attempts_for_effect(passed: int, assessed: int, min_effect: float) -> int:
    """Assessed attempts per run needed to resolve ``min_effect``: ``ceil((2z)²·p(1−p)/D²)``."""
    rate = _clamped_rate(passed, assessed)
    return math.ceil((2.0 * WILSON_Z) ** 2 * rate * (1.0 - rate) / (min_effect * min_effect))


def noise_review(passed: int, assessed: int, min_effect: float | None) -> Noise:
    """The ``noise`` part for one run's pooled counts."""
    return Noise(
        assessed_attempts=assessed,
        pass_rate=passed / assessed if assessed else None,
        resolvable_change=resolvable_change(passed, assessed),
        attempts_for_min_effect=None
        if min_effect is None
        else attempts_for_effect(passed, assessed, min_effect),
    )


# -- the individual findings ------------------------------------------------------------------


def _saturated(
    runs: Sequence[Run], summaries: list[RunSummary], saturation: float
) -> list[Finding]:
    rated = [
        (s.pass_rate, run.source.name)
        for run, s in zip(runs, summaries, strict=True)
        if s.pass_rate is not None
    ]
    if not rated:
        return []
    best_rate, best_name = max(rated, key=lambda pair: pair[0])
    if best_rate < saturation:
        return []
    return [
        Finding(
            "saturated",
            WARNING,
            f"{best_name} passes {_percent(best_rate)} of assessed attempts (saturation "
            f"{_percent(saturation)}): quality gains can no longer be measured here. Add harder "
            "cases, or compare cost with `evalarc diff --max-cost-ratio`.",
            value=best_rate,
        )
    ]


class PooledTallies(Mapping[tuple[str, str], Tally]):
    """Each (case, check) of any of ``runs`` with its tallies summed over every run, in sorted
    order, worked out when read: a lookup sums over the runs, an iteration merges their sorted
    pairs (a dict of every pair of two half-million-case runs held 85 MB)."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self._runs = runs

    def __getitem__(self, key: tuple[str, str]) -> Tally:
        case_id, check = key
        total: Tally | None = None
        for run in self._runs:
            checks = run.cases.get(case_id)
            attempts = checks.get(check) if checks is not None else None
            if attempts is None:
                continue
            counts = tally(attempts)
            if total is not None:
                counts = Tally(
                    total.passed + counts.passed,
                    total.assessed + counts.assessed,
                    total.attempts + counts.attempts,
                )
            total = counts
        if total is None:
            raise KeyError(key)
        return total

    def __iter__(self) -> Iterator[tuple[str, str]]:
        previous: tuple[str, str] | None = None
        for key in heapq.merge(*(_sorted_pairs(run) for run in self._runs)):
            if key != previous:
                yield key
                previous = key

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _sorted_pairs(run: Run) -> Iterator[tuple[str, str]]:
    cases = run.cases
    for case_id in sorted(cases):
        for check in sorted(cases[case_id]):
            yield case_id, check


def _always_failing(pooled: Mapping[tuple[str, str], Tally], files: int) -> list[Finding]:
    items = [
        _item(case_id, check, counts)
        for (case_id, check), counts in pooled.items()
        if counts.assessed >= 2 and counts.passed == 0
    ]
    if not items:
        return []
    where = "the result file" if files == 1 else f"all {files} result files"
    return [
        Finding(
            "always_failing",
            WARNING,
            f"{_plural(len(items), 'check')} never passed in {where} despite at least two "
            "assessed attempts: a broken case or grader cannot measure progress.",
            value=len(items),
            items=items,
        )
    ]


def _flaky(tables: Sequence[_RunTable], summaries: list[RunSummary]) -> list[Finding]:
    items = [
        _item(row.case_id, row.check, row.counts, table.name)
        for table in tables
        for row in table.rows
        if 0 < row.counts.passed < row.counts.assessed
    ]
    repeated = sum(s.repeated_checks for s in summaries)
    if not items or repeated == 0:
        return []
    share = len(items) / repeated
    severity = WARNING if share > FLAKY_WARNING_SHARE else INFO
    return [
        Finding(
            "flaky_checks",
            severity,
            f"{len(items)} of {_plural(repeated, 'repeated check')} ({_percent(share)}) both "
            "passed and failed within one result file; a single run of such checks is a coin "
            "toss.",
            value=share,
            items=items,
        )
    ]


def _unassessed(tables: Sequence[_RunTable]) -> list[Finding]:
    items: list[FindingItem] = []
    unassessed = total = 0
    for table in tables:
        for row in table.rows:
            total += row.counts.attempts
            missing = row.counts.attempts - row.counts.assessed
            if missing:
                unassessed += missing
                items.append(_item(row.case_id, row.check, row.counts, table.name))
    if not unassessed:
        return []
    share = unassessed / total
    return [
        Finding(
            "unassessed_attempts",
            WARNING,
            f"{unassessed} of {_plural(total, 'attempt')} ({_percent(share)}) have no outcome "
            "(errors, skips or unknown scores); they count neither as pass nor as fail.",
            value=share,
            items=items,
        )
    ]


def _single_attempt(tables: Sequence[_RunTable]) -> list[Finding]:
    if any(row.counts.attempts > 1 for table in tables for row in table.rows):
        return []
    return [
        Finding(
            "single_attempt",
            INFO,
            "Every check was recorded at most once per file, so flaky checks cannot be told "
            "from stable ones; record several epochs or repeats.",
        )
    ]


def _noise_finding(run: Run, noise: Noise, min_effect: float | None) -> list[Finding]:
    if min_effect is None or noise.resolvable_change <= min_effect:
        return []
    rate = noise.pass_rate
    at = f" at {_percent(rate)}" if rate is not None else ""
    return [
        Finding(
            "noise_exceeds_min_effect",
            WARNING,
            f"{_plural(noise.assessed_attempts, 'assessed attempt')}{at} in {run.source.name} "
            f"can only resolve changes of about {_percent(noise.resolvable_change)}, more "
            f"than the {_percent(min_effect)} you want to detect; about "
            f"{noise.attempts_for_min_effect} assessed attempts per run are needed.",
            value=noise.resolvable_change,
        )
    ]


def _inconsistent_outputs(
    tables: Sequence[_RunTable],
) -> dict[tuple[str, str, str], tuple[list[tuple[str, bool]], set[str]]]:
    """(case, check, output digest) graded both pass and fail -> (verdicts, files).

    A first pass keeps only a two-bit mark per key (most outputs are graded once); verdicts are
    collected in a second pass for the few keys that saw both.
    """
    marks: dict[tuple[str, str, str], int] = {}
    for table in tables:
        for row in table.rows:
            for attempt in row.attempts:
                if attempt.output_sha256 is None or attempt.passed is None:
                    continue
                key = (row.case_id, row.check, attempt.output_sha256)
                marks[key] = marks.get(key, 0) | (1 if attempt.passed else 2)
    both = {key for key, mark in marks.items() if mark == 3}
    found: dict[tuple[str, str, str], tuple[list[tuple[str, bool]], set[str]]] = {}
    if not both:
        return found
    for table in tables:
        for row in table.rows:
            for attempt in row.attempts:
                if attempt.output_sha256 is None or attempt.passed is None:
                    continue
                key = (row.case_id, row.check, attempt.output_sha256)
                if key in both:
                    verdicts, files = found.setdefault(key, ([], set()))
                    verdicts.append((table.name, attempt.passed))
                    files.add(table.name)
    return dict(sorted(found.items()))


def _inconsistent_finding(
    inconsistent: dict[tuple[str, str, str], tuple[list[tuple[str, bool]], set[str]]],
) -> list[Finding]:
    if not inconsistent:
        return []
    items = []
    for (case_id, check, digest), (verdicts, files) in inconsistent.items():
        passes = sum(passed for _, passed in verdicts)
        items.append(
            FindingItem(
                case_id=case_id,
                check=check,
                passed=passes,
                assessed=len(verdicts),
                attempts=len(verdicts),
                file=next(iter(files)) if len(files) == 1 else None,
                detail=f"output sha256 {digest[:16]}",
            )
        )
    return [
        Finding(
            "inconsistent_grading",
            WARNING,
            f"{_plural(len(items), 'byte-identical output')} received both a pass and a fail "
            "from the same check: the grader is nondeterministic or changed between runs.",
            value=len(items),
            items=items,
        )
    ]


def _truncated(runs: Sequence[Run]) -> list[Finding]:
    items: list[FindingItem] = []
    truncated_attempts = 0
    for run in runs:
        for case_id in sorted(run.samples):
            per_check: dict[str, list[bool | None]] = {}
            stops: set[str] = set()
            for meta in run.samples[case_id]:
                if not meta.truncated:
                    continue
                truncated_attempts += 1
                stops.add(meta.stop_reason or meta.limit or "limit")
                for check, passed in meta.verdicts.items():
                    per_check.setdefault(check, []).append(passed)
            for check in sorted(per_check):
                verdicts = per_check[check]
                item = FindingItem(
                    case_id=case_id,
                    check=check,
                    passed=sum(1 for v in verdicts if v is True),
                    assessed=sum(1 for v in verdicts if v is not None),
                    attempts=len(verdicts),
                    file=run.source.name,
                    detail="stopped by " + ", ".join(sorted(stops)),
                )
                items.append(item)
    if not truncated_attempts:
        return []
    return [
        Finding(
            "truncated_outputs",
            WARNING,
            f"{_plural(truncated_attempts, 'attempt')} hit an output limit before finishing; "
            "their verdicts grade a cut-off answer.",
            value=truncated_attempts,
            items=items,
        )
    ]


def _union(runs: Sequence[Run], attribute: str) -> list[str]:
    names: set[str] = set()
    for run in runs:
        names.update(getattr(run.graders, attribute))
    return sorted(names)


def _self_graded(runs: Sequence[Run]) -> list[Finding]:
    models = _union(runs, "self_graded")
    if not models:
        return []
    message = f"The model under test also grades its own outputs ({_listed(models)})"
    defaults = _union(runs, "default_grader_checks")
    if defaults:
        message += (
            f"; {_listed(defaults)} name no grader model, so the subject model grades by default"
        )
    message += ". Use an independent grader model."
    return [Finding("self_graded", WARNING, message, value=len(models))]


def _normalised_output(text: str) -> str:
    return " ".join(text.split()).casefold()


def _is_json_container(text: str) -> bool:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        value = strict_loads(stripped)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict | list)


def _model_graded(check: str, graded_names: Sequence[str]) -> bool:
    return any(check == name or check.startswith(name + "/") for name in graded_names)


def _judge_replaceable(runs: Sequence[Run]) -> list[Finding]:
    graded_names = _union(runs, "model_graded_checks")
    if not graded_names:
        return []
    outputs: dict[str, list[str]] = {}
    for run in runs:
        for case_id in sorted(run.samples):
            for meta in run.samples[case_id]:
                if meta.output_text is None:
                    continue
                for check, passed in meta.verdicts.items():
                    if passed is not None and _model_graded(check, graded_names):
                        outputs.setdefault(check, []).append(meta.output_text)
    replaceable = []
    for check in sorted(outputs):
        texts = outputs[check]
        if len(texts) < JUDGE_MIN_OUTPUTS:
            continue
        distinct = {_normalised_output(text) for text in texts}
        if len(distinct) <= JUDGE_MAX_DISTINCT or all(_is_json_container(t) for t in texts):
            replaceable.append(check)
    if not replaceable:
        return []
    return [
        Finding(
            "model_judge_replaceable",
            INFO,
            f"{_plural(len(replaceable), 'model-graded check')} ({_listed(replaceable)}) grade "
            "outputs that are few distinct texts or JSON; an exact or schema check would be "
            "cheaper and deterministic.",
            value=len(replaceable),
        )
    ]


def _requests_thinking(config: dict[str, Any]) -> bool:
    effort = config.get("reasoning_effort")
    if isinstance(effort, str) and effort not in THINKING_EFFORTS_OFF:
        return True
    tokens = config.get("reasoning_tokens")
    return isinstance(tokens, int | float) and not isinstance(tokens, bool) and tokens > 0


def _config_not_applied(runs: Sequence[Run]) -> list[Finding]:
    files = []
    for run in runs:
        if run.format != "inspect" or not _requests_thinking(run.generate_config):
            continue
        recorded = [
            meta.usage["reasoning_tokens"]
            for case_id in sorted(run.samples)
            for meta in run.samples[case_id]
            if "reasoning_tokens" in meta.usage
        ]
        if recorded and all(value == 0 for value in recorded):
            files.append(run.source.name)
    if not files:
        return []
    return [
        Finding(
            "config_not_applied",
            WARNING,
            f"{_listed(files)} asked for reasoning (thinking) but every recorded reasoning token "
            "count is 0: the setting probably never reached the model.",
            value=len(files),
        )
    ]


@dataclass(frozen=True, slots=True)
class _OrderStep:
    """Two neighbouring files under ``--ordered``: the later one is declared stronger."""

    weaker: str
    stronger: str
    delta: float | None
    within_sampling_noise: bool
    inverted: bool
    """The stronger file's pass rate is below the weaker one's (compared exactly)."""

    def recorded(self) -> CapabilityStep:
        return CapabilityStep(self.weaker, self.stronger, self.delta, self.within_sampling_noise)


def _capability_order(
    runs: Sequence[Run], summaries: list[RunSummary], ordered: bool
) -> list[_OrderStep]:
    if not ordered:
        return []
    steps = []
    for index in range(1, len(runs)):
        weaker, stronger = summaries[index - 1], summaries[index]
        delta = (
            stronger.pass_rate - weaker.pass_rate
            if weaker.pass_rate is not None and stronger.pass_rate is not None
            else None
        )
        steps.append(
            _OrderStep(
                weaker=runs[index - 1].source.name,
                stronger=runs[index].source.name,
                delta=delta,
                within_sampling_noise=intervals_overlap(
                    wilson_interval(weaker.passed, weaker.assessed),
                    wilson_interval(stronger.passed, stronger.assessed),
                ),
                # Cross-multiplied so that two equal rates never compare unequal by rounding.
                inverted=delta is not None
                and stronger.passed * weaker.assessed < weaker.passed * stronger.assessed,
            )
        )
    return steps


def _inversion_finding(steps: list[_OrderStep]) -> list[Finding]:
    inverted = [step for step in steps if step.inverted and step.delta is not None]
    if not inverted:
        return []
    beyond_noise = [step for step in inverted if not step.within_sampling_noise]
    pairs = [f"{step.stronger} < {step.weaker}" for step in inverted]
    message = (
        f"{_plural(len(inverted), 'configuration')} declared stronger scored lower than the one "
        f"before it ({_listed(pairs, 3)})"
    )
    if beyond_noise:
        message += ": beyond sampling noise, so the evaluation may not measure the capability."
    else:
        message += ", within sampling noise."
    return [
        Finding(
            "capability_inversion",
            WARNING if beyond_noise else INFO,
            message,
            value=min(step.delta for step in inverted if step.delta is not None),
        )
    ]


# -- provenance -------------------------------------------------------------------------------


def review_provenance(manifest: CaseManifest, case_ids: Sequence[str]) -> Provenance:
    """The ``provenance`` block: what the manifest declares about the recorded cases."""
    assigned = assign_rules(manifest, case_ids)
    declared: dict[str, CaseRule] = {
        case: rule for case, rule in assigned.items() if rule is not None
    }
    counts = dict.fromkeys(CASE_SOURCES, 0)
    for rule in declared.values():
        counts[rule.source] += 1
    return Provenance(
        manifest=manifest.source,
        counts={source: count for source, count in counts.items() if count},
        declared=len(declared),
        undeclared=tuple(sorted(case for case, rule in assigned.items() if rule is None)),
        real=sum(1 for rule in declared.values() if rule.source in REAL_SOURCES),
        unexplained_model_failures=tuple(
            sorted(
                case
                for case, rule in declared.items()
                if rule.source == "model_failure" and rule.difficulty is None
            )
        ),
        scope=PROVENANCE_SCOPE,
    )


def _provenance_findings(provenance: Provenance | None) -> list[Finding]:
    if provenance is None:
        return []
    findings: list[Finding] = []
    name = provenance.manifest.name
    undeclared = provenance.undeclared
    declared = provenance.declared
    counts = provenance.counts
    if undeclared:
        findings.append(
            Finding(
                "provenance_undeclared",
                INFO,
                f"{_plural(len(undeclared), 'case')} match no rule of {name} "
                f"({_listed(undeclared)}); their origin is unknown.",
                value=len(undeclared),
            )
        )
    if declared and provenance.real == 0:
        findings.append(
            Finding(
                "no_real_cases",
                WARNING,
                "No declared case comes from production, bug reports, support tickets or user "
                "traffic: the evaluation may not reflect what users do.",
                value=0,
            )
        )
    synthetic = counts.get("synthetic", 0)
    if declared and synthetic * 2 > declared:
        findings.append(
            Finding(
                "mostly_synthetic",
                WARNING,
                f"{synthetic} of {_plural(declared, 'declared case')} are synthetic "
                f"({_percent(synthetic / declared)}); invented cases tend to be easier than real "
                "ones.",
                value=synthetic / declared,
            )
        )
    unexplained = provenance.unexplained_model_failures
    if unexplained:
        findings.append(
            Finding(
                "adversarial_sampling",
                WARNING,
                f"{_plural(len(unexplained), 'case')} added because a model failed "
                f"({_listed(unexplained)}) without a declared difficulty; cases mined from "
                "one model's failures bias comparisons against that model.",
                value=len(unexplained),
            )
        )
    if declared and counts.get("user_traffic", 0) == declared:
        findings.append(
            Finding(
                "traffic_only",
                INFO,
                "Every declared case is sampled user traffic; rare but important situations may "
                "be missing.",
            )
        )
    return findings


# -- failure triage ---------------------------------------------------------------------------


def failure_triage(
    last: Run,
    pooled: Mapping[tuple[str, str], Tally],
    inconsistent_checks: set[tuple[str, str]],
) -> list[TriageEntry]:
    """Sort every failing case of the last file into the first triage category that applies.

    A check is failing when it passed fewer times than it was attempted; a case is failing when
    any of its checks is.
    """
    truncated_cases = {
        case_id for case_id, metas in last.samples.items() if any(m.truncated for m in metas)
    }
    triage = []
    for case_id in sorted(last.cases):
        checks = last.cases[case_id]
        tallies = {check: tally(attempts) for check, attempts in sorted(checks.items())}
        failing = {
            check: counts for check, counts in tallies.items() if counts.passed < counts.attempts
        }
        if not failing:
            continue
        triage.append(
            TriageEntry(
                case_id=case_id,
                category=_triage_category(
                    case_id, failing, pooled, inconsistent_checks, truncated_cases
                ),
                checks=tuple(failing),
            )
        )
    return triage


def _triage_category(
    case_id: str,
    failing: dict[str, Tally],
    pooled: Mapping[tuple[str, str], Tally],
    inconsistent_checks: set[tuple[str, str]],
    truncated_cases: set[str],
) -> str:
    if any(counts.assessed < counts.attempts for counts in failing.values()):
        return "pipeline"
    if case_id in truncated_cases:
        return "truncated"
    if any((case_id, check) in inconsistent_checks for check in failing):
        return "grader_inconsistent"
    if all(counts.passed == 0 for counts in failing.values()):
        pooled_counts = [pooled[(case_id, check)] for check in failing]
        if any(counts.passed > 0 for counts in pooled_counts):
            return "regressed"
        if all(counts.assessed >= 2 for counts in pooled_counts):
            return "never_passes"
    if any(counts.passed > 0 for counts in failing.values()):
        return "variable"
    return "consistent_failure"


# -- size and plan ----------------------------------------------------------------------------


def size_review(runs: Sequence[Run]) -> Size:
    """How big the evaluation is per configuration, from the last file."""
    last = runs[-1]
    per_case = [
        max((len(attempts) for attempts in checks.values()), default=0)
        for checks in last.cases.values()
    ]
    duration, duration_reported = _sum_usage(last, "duration_seconds")
    cost, _ = _sum_usage(last, "cost_usd")
    return Size(
        configurations=len(runs),
        cases=len(last.cases),
        attempts_per_case=max(1, max(per_case, default=0)),
        case_attempts_per_configuration=sum(per_case),
        mean_seconds_per_attempt=_mean(duration, duration_reported),
        recorded_seconds_per_configuration=duration,
        recorded_cost_usd_per_configuration=cost,
    )


def plan_review(size: Size, options: HealthOptions) -> Plan:
    """What a planned run would take; the option not given keeps its recorded value."""
    attempts = options.plan_attempts or size.attempts_per_case
    configurations = options.plan_configs or size.configurations
    total = size.cases * attempts * configurations
    seconds = size.mean_seconds_per_attempt
    cost = size.recorded_cost_usd_per_configuration
    recorded_attempts = size.case_attempts_per_configuration
    return Plan(
        cases=size.cases,
        attempts_per_case=attempts,
        configurations=configurations,
        case_attempts=total,
        serial_seconds=seconds * total if seconds is not None else None,
        cost_usd=cost / recorded_attempts * total
        if cost is not None and recorded_attempts
        else None,
    )


# -- the report -------------------------------------------------------------------------------


def check_health_inputs(runs: Sequence[Run]) -> None:
    """Refuse files that are not runs of one evaluation: other formats, other Inspect tasks."""
    formats = sorted({run.format for run in runs})
    if len(formats) > 1:
        raise IncomparableError(f"inputs use different formats: {', '.join(formats)}")
    tasks = sorted({str(run.identity["task"]) for run in runs if run.identity.get("task")})
    if len(tasks) > 1:
        shown = ", ".join(repr(task[:60]) for task in tasks[:3])
        raise IncomparableError(f"inputs are not comparable: tasks {shown} differ")


def compute_health(
    runs: Sequence[Run],
    options: HealthOptions,
    *,
    manifest: CaseManifest | None = None,
    created_at: str,
) -> HealthReport:
    """The complete health report for 1-20 runs of one evaluation, keys in schema order.

    Deterministic apart from ``created_at``; ``evalarc verify`` calls this same function.
    """
    options.validate(len(runs))
    check_health_inputs(runs)
    tables = [_table(run) for run in runs]
    summaries = [_run_summary(table) for table in tables]
    last = runs[-1]
    last_summary = summaries[-1]
    noise = noise_review(last_summary.passed, last_summary.assessed, options.min_effect)
    pooled = PooledTallies(runs)
    inconsistent = _inconsistent_outputs(tables)
    steps = _capability_order(runs, summaries, options.ordered)
    provenance = None
    if manifest is not None:
        provenance = review_provenance(manifest, sorted({c for run in runs for c in run.cases}))
    size = size_review(runs)

    findings: list[Finding] = [
        *_saturated(runs, summaries, options.saturation),
        *_always_failing(pooled, len(runs)),
        *_flaky(tables, summaries),
        *_unassessed(tables),
        *_single_attempt(tables),
        *_noise_finding(last, noise, options.min_effect),
        *_inconsistent_finding(inconsistent),
        *_truncated(runs),
        *_self_graded(runs),
        *_judge_replaceable(runs),
        *_config_not_applied(runs),
        *_inversion_finding(steps),
        *_provenance_findings(provenance),
    ]
    warnings = sum(1 for finding in findings if finding.severity == WARNING)
    return HealthReport(
        schema_version=HEALTH_SCHEMA,
        created_at=created_at,
        format=runs[0].format,
        numeric_pass_threshold=runs[0].threshold,
        saturation=options.saturation,
        min_effect=options.min_effect,
        ordered=options.ordered,
        runs=tuple(summaries),
        noise=noise,
        capability_order=tuple(step.recorded() for step in steps),
        graders=Graders(
            subject_models=tuple(_union(runs, "subject_models")),
            grader_models=tuple(_union(runs, "grader_models")),
            self_graded=tuple(_union(runs, "self_graded")),
        ),
        recorded_outputs=sum(
            1
            for run in runs
            for metas in run.samples.values()
            for meta in metas
            if meta.output_sha256 is not None
        ),
        triage=tuple(
            failure_triage(last, pooled, {(case_id, check) for case_id, check, _ in inconsistent})
        ),
        size=size,
        plan=plan_review(size, options)
        if options.plan_attempts is not None or options.plan_configs is not None
        else None,
        provenance=provenance,
        findings=tuple(finding.recorded() for finding in findings),
        warnings=warnings,
        healthy=warnings == 0,
        scope=SCOPE,
    )
