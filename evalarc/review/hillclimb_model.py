"""The hillclimb review (``evalarc.hillclimb-review.v1``, hillclimb.json) as typed values: one
frozen dataclass per part, fields in schema order, and the one place the schema is written and
read.

``to_json()`` gives exactly the object ``evalarc hillclimb-review`` (and ``hillclimb-run``)
writes, key order included and optional keys left out where the writer leaves them out;
``from_json(value, name)`` reads one back, refusing a newer schema version (naming the file and
both versions) and any malformed field with one line naming the file and the field. Numbers are
kept as read, so ``to_json(from_json(x)) == x``.

Parts shared with other reports are theirs: the pooled counts of a partition
(:class:`evalarc.review.diff_model.Pool`) and the harness leakage scan
(:class:`evalarc.review.diff_model.Leakage`) are the diff report's, the sampling-noise part is
eval-health's :class:`evalarc.review.health_model.Noise`.

Pure: no file is read or written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalarc import schemas
from evalarc.canonical import JSONValue
from evalarc.formats.model import Source
from evalarc.review.diff_model import Leakage, Pool
from evalarc.review.health_model import TRIAGE_CATEGORIES, Noise
from evalarc.review.model_json import Fields, report_fields

HILLCLIMB_SCHEMA = schemas.HILLCLIMB_REVIEW
OBJECTIVES = ("quality", "cost")
DECISIONS = ("keep", "rollback_regression", "rollback_overfit", "rollback_no_gain")


def _interval_json(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Pooled pass counts with their 95% Wilson interval (the baseline's partitions)."""

    passed: int
    assessed: int
    attempts: int
    pass_rate: float | None
    interval_95: tuple[float, float] | None

    def to_json(self) -> dict[str, JSONValue]:
        pool = Pool(self.passed, self.assessed, self.attempts, self.pass_rate)
        return {**pool.to_json(), "interval_95": _interval_json(self.interval_95)}

    @classmethod
    def read(cls, part: Fields) -> Snapshot:
        part.only("passed", "assessed", "attempts", "pass_rate", "interval_95")
        return cls(
            part.count("passed"),
            part.count("assessed"),
            part.count("attempts"),
            part.opt_number("pass_rate"),
            part.interval("interval_95"),
        )


@dataclass(frozen=True, slots=True)
class Side:
    """One partition (tuning or held out) of a result compared with an earlier one."""

    baseline: Pool
    current: Pool
    delta: float | None
    within_sampling_noise: bool
    blocking_changes: int

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "baseline": self.baseline.to_json(),
            "current": self.current.to_json(),
            "delta": self.delta,
            "within_sampling_noise": self.within_sampling_noise,
            "blocking_changes": self.blocking_changes,
        }

    @classmethod
    def read(cls, part: Fields) -> Side:
        part.only("baseline", "current", "delta", "within_sampling_noise", "blocking_changes")
        return cls(
            Pool.read(part.obj("baseline")),
            Pool.read(part.obj("current")),
            part.opt_number("delta"),
            part.flag("within_sampling_noise"),
            part.count("blocking_changes"),
        )


@dataclass(frozen=True, slots=True)
class Cost:
    """Mean usage of the later result over the earlier one on the chosen metric."""

    metric: str
    baseline_mean: float
    current_mean: float
    ratio: float

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "metric": self.metric,
            "baseline_mean": self.baseline_mean,
            "current_mean": self.current_mean,
            "ratio": self.ratio,
        }

    @classmethod
    def read(cls, part: Fields) -> Cost:
        part.only("metric", "baseline_mean", "current_mean", "ratio")
        return cls(
            part.text("metric"),
            part.number("baseline_mean"),
            part.number("current_mean"),
            part.number("ratio"),
        )


def _opt_cost(part: Fields, key: str) -> Cost | None:
    found = part.opt_obj(key)
    return None if found is None else Cost.read(found)


@dataclass(frozen=True, slots=True)
class BlockingChange:
    """A held-out check that lost passes or coverage in a step."""

    case_id: str
    check: str
    kind: str

    def to_json(self) -> dict[str, JSONValue]:
        return {"case_id": self.case_id, "check": self.check, "kind": self.kind}

    @classmethod
    def read(cls, part: Fields) -> BlockingChange:
        part.only("case_id", "check", "kind")
        return cls(part.text("case_id"), part.text("check"), part.text("kind"))


@dataclass(frozen=True, slots=True)
class Step:
    """One result tried, compared with the last kept result, and the decision."""

    index: int
    label: str
    source: Source
    compared_with: str
    decision: str
    """One of :data:`DECISIONS`."""
    reason: str
    tuning: Side
    held_out: Side
    cost: Cost | None
    held_out_blocking_changes: tuple[BlockingChange, ...]
    changes_with_same_output_different_verdict: int
    kept: bool
    stalled: bool = False
    """Written (as true) only on the step that completed a run of rollbacks."""

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {
            "index": self.index,
            "label": self.label,
            "source": self.source.to_json(),
            "compared_with": self.compared_with,
            "decision": self.decision,
            "reason": self.reason,
            "tuning": self.tuning.to_json(),
            "held_out": self.held_out.to_json(),
            "cost": None if self.cost is None else self.cost.to_json(),
            "held_out_blocking_changes": [
                change.to_json() for change in self.held_out_blocking_changes
            ],
            "changes_with_same_output_different_verdict": (
                self.changes_with_same_output_different_verdict
            ),
            "kept": self.kept,
        }
        if self.stalled:
            data["stalled"] = True
        return data

    @classmethod
    def read(cls, part: Fields) -> Step:
        part.only(
            "index",
            "label",
            "source",
            "compared_with",
            "decision",
            "reason",
            "tuning",
            "held_out",
            "cost",
            "held_out_blocking_changes",
            "changes_with_same_output_different_verdict",
            "kept",
            "stalled",
        )
        return cls(
            index=part.count("index"),
            label=part.text("label"),
            source=part.source(),
            compared_with=part.text("compared_with"),
            decision=part.choice("decision", DECISIONS),
            reason=part.text("reason"),
            tuning=Side.read(part.obj("tuning")),
            held_out=Side.read(part.obj("held_out")),
            cost=_opt_cost(part, "cost"),
            held_out_blocking_changes=part.objects(
                "held_out_blocking_changes", BlockingChange.read
            ),
            changes_with_same_output_different_verdict=part.count(
                "changes_with_same_output_different_verdict"
            ),
            kept=part.flag("kept"),
            stalled=part.true_if_present("stalled"),
        )


@dataclass(frozen=True, slots=True)
class TriageRow:
    """One failing tuning case of a kept result, its category and the next step."""

    case_id: str
    category: str
    checks: tuple[str, ...]
    next_step: str

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "case_id": self.case_id,
            "category": self.category,
            "checks": list(self.checks),
            "next_step": self.next_step,
        }

    @classmethod
    def read(cls, part: Fields) -> TriageRow:
        part.only("case_id", "category", "checks", "next_step")
        return cls(
            part.text("case_id"),
            part.choice("category", TRIAGE_CATEGORIES),
            part.texts("checks"),
            part.text("next_step"),
        )


@dataclass(frozen=True, slots=True)
class Stall:
    """Why the climb stopped finding gains after a run of rollbacks."""

    after_step: int
    kept: str
    remaining_tuning_failures: int
    categories: Mapping[str, int]
    """Triage category -> failing tuning cases, in category order; zeros left out."""
    triage: tuple[TriageRow, ...] | None
    """The rows themselves (left out of ``hillclimb-run``'s loop log)."""
    tuning_headroom: float | None
    headroom_below_noise: bool
    advice: str

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {
            "after_step": self.after_step,
            "kept": self.kept,
            "remaining_tuning_failures": self.remaining_tuning_failures,
            "categories": dict(self.categories),
        }
        if self.triage is not None:
            data["triage"] = [row.to_json() for row in self.triage]
        data["tuning_headroom"] = self.tuning_headroom
        data["headroom_below_noise"] = self.headroom_below_noise
        data["advice"] = self.advice
        return data

    @classmethod
    def read(cls, part: Fields) -> Stall:
        part.only(
            "after_step",
            "kept",
            "remaining_tuning_failures",
            "categories",
            "triage",
            "tuning_headroom",
            "headroom_below_noise",
            "advice",
        )
        return cls(
            after_step=part.count("after_step"),
            kept=part.text("kept"),
            remaining_tuning_failures=part.count("remaining_tuning_failures"),
            categories=part.counts("categories"),
            triage=part.objects("triage", TriageRow.read) if part.has("triage") else None,
            tuning_headroom=part.opt_number("tuning_headroom"),
            headroom_below_noise=part.flag("headroom_below_noise"),
            advice=part.text("advice"),
        )


@dataclass(frozen=True, slots=True)
class Final:
    """The final kept result compared with the baseline."""

    label: str
    index: int
    tuning: Side
    held_out: Side
    baseline_held_out_interval_95: tuple[float, float] | None
    held_out_blocking_changes: int
    cost: Cost | None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "label": self.label,
            "index": self.index,
            "tuning": self.tuning.to_json(),
            "held_out": self.held_out.to_json(),
            "baseline_held_out_interval_95": _interval_json(self.baseline_held_out_interval_95),
            "held_out_blocking_changes": self.held_out_blocking_changes,
            "cost": None if self.cost is None else self.cost.to_json(),
        }

    @classmethod
    def read(cls, part: Fields) -> Final:
        part.only(
            "label",
            "index",
            "tuning",
            "held_out",
            "baseline_held_out_interval_95",
            "held_out_blocking_changes",
            "cost",
        )
        return cls(
            label=part.text("label"),
            index=part.count("index"),
            tuning=Side.read(part.obj("tuning")),
            held_out=Side.read(part.obj("held_out")),
            baseline_held_out_interval_95=part.interval("baseline_held_out_interval_95"),
            held_out_blocking_changes=part.count("held_out_blocking_changes"),
            cost=_opt_cost(part, "cost"),
        )


@dataclass(frozen=True, slots=True)
class TuningFailure:
    """A tuning (case, check) of the final kept result with a non-passing attempt."""

    case_id: str
    check: str
    failed_attempts: int
    attempts: int
    evidence: tuple[str, ...]

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "case_id": self.case_id,
            "check": self.check,
            "failed_attempts": self.failed_attempts,
            "attempts": self.attempts,
            "evidence": list(self.evidence),
        }

    @classmethod
    def read(cls, part: Fields) -> TuningFailure:
        part.only("case_id", "check", "failed_attempts", "attempts", "evidence")
        return cls(
            part.text("case_id"),
            part.text("check"),
            part.count("failed_attempts"),
            part.count("attempts"),
            part.texts("evidence"),
        )


@dataclass(frozen=True, slots=True)
class SplitPart:
    """The held-out split the review used."""

    source: Source
    entries: tuple[str, ...]
    """The split file's held-out entries as written."""
    held_out_cases: tuple[str, ...]
    tuning_cases: int

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "source": self.source.to_json(),
            "entries": list(self.entries),
            "held_out_cases": list(self.held_out_cases),
            "tuning_cases": self.tuning_cases,
        }

    @classmethod
    def read(cls, part: Fields) -> SplitPart:
        part.only("source", "entries", "held_out_cases", "tuning_cases")
        return cls(
            part.source(),
            part.texts("entries"),
            part.texts("held_out_cases"),
            part.count("tuning_cases"),
        )


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One result of the climb (the baseline first) and its file."""

    label: str
    source: Source

    def to_json(self) -> dict[str, JSONValue]:
        return {"label": self.label, "source": self.source.to_json()}

    @classmethod
    def read(cls, part: Fields) -> RunEntry:
        part.only("label", "source")
        return cls(part.text("label"), part.source())


@dataclass(frozen=True, slots=True)
class Baseline:
    label: str
    tuning: Snapshot
    held_out: Snapshot

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "label": self.label,
            "tuning": self.tuning.to_json(),
            "held_out": self.held_out.to_json(),
        }

    @classmethod
    def read(cls, part: Fields) -> Baseline:
        part.only("label", "tuning", "held_out")
        return cls(
            part.text("label"),
            Snapshot.read(part.obj("tuning")),
            Snapshot.read(part.obj("held_out")),
        )


@dataclass(frozen=True, slots=True)
class NoisePair:
    """The baseline's sampling noise per partition."""

    tuning: Noise
    held_out: Noise

    def to_json(self) -> dict[str, JSONValue]:
        return {"tuning": self.tuning.to_json(), "held_out": self.held_out.to_json()}

    @classmethod
    def read(cls, part: Fields) -> NoisePair:
        part.only("tuning", "held_out")
        return cls(Noise.read(part.obj("tuning")), Noise.read(part.obj("held_out")))


@dataclass(frozen=True, slots=True)
class HillclimbReport:
    """hillclimb.json: a replayed hill climb, what it kept and the merge recommendation."""

    schema_version: str
    created_at: str
    objective: str
    format: str
    split: SplitPart
    runs: tuple[RunEntry, ...]
    baseline: Baseline
    noise: NoisePair
    min_effect: float | None
    notes: tuple[str, ...]
    steps: tuple[Step, ...]
    stalls: tuple[Stall, ...]
    final: Final
    leakage: Leakage | None
    max_cost_ratio: float
    recommendation: str
    recommendation_text: str
    merge_recommended: bool
    tuning_failures: tuple[TuningFailure, ...]
    scope: str

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "created_at": self.created_at,
            "objective": self.objective,
            "format": self.format,
            "split": self.split.to_json(),
            "runs": [run.to_json() for run in self.runs],
            "baseline": self.baseline.to_json(),
            "noise": self.noise.to_json(),
            "min_effect": self.min_effect,
            "notes": list(self.notes),
            "steps": [step.to_json() for step in self.steps],
            "stalls": [stall.to_json() for stall in self.stalls],
            "final": self.final.to_json(),
            "leakage": None if self.leakage is None else self.leakage.to_json(),
            "max_cost_ratio": self.max_cost_ratio,
            "recommendation": self.recommendation,
            "recommendation_text": self.recommendation_text,
            "merge_recommended": self.merge_recommended,
            "tuning_failures": [failure.to_json() for failure in self.tuning_failures],
            "scope": self.scope,
        }

    @classmethod
    def from_json(cls, value: object, name: str) -> HillclimbReport:
        """Read hillclimb.json (``name`` is the file as the user gave it)."""
        report = report_fields(value, HILLCLIMB_SCHEMA, name)
        report.only(
            "schema_version",
            "created_at",
            "objective",
            "format",
            "split",
            "runs",
            "baseline",
            "noise",
            "min_effect",
            "notes",
            "steps",
            "stalls",
            "final",
            "leakage",
            "max_cost_ratio",
            "recommendation",
            "recommendation_text",
            "merge_recommended",
            "tuning_failures",
            "scope",
        )
        runs = report.objects("runs", RunEntry.read)
        if not runs:
            raise report.fail("runs", "is empty")
        leakage = report.opt_obj("leakage")
        return cls(
            schema_version=report.text("schema_version"),
            created_at=report.text("created_at"),
            objective=report.choice("objective", OBJECTIVES),
            format=report.text("format"),
            split=SplitPart.read(report.obj("split")),
            runs=runs,
            baseline=Baseline.read(report.obj("baseline")),
            noise=NoisePair.read(report.obj("noise")),
            min_effect=report.opt_number("min_effect"),
            notes=report.texts("notes"),
            steps=report.objects("steps", Step.read),
            stalls=report.objects("stalls", Stall.read),
            final=Final.read(report.obj("final")),
            leakage=None if leakage is None else Leakage.read(leakage),
            max_cost_ratio=report.number("max_cost_ratio"),
            recommendation=report.text("recommendation"),
            recommendation_text=report.text("recommendation_text"),
            merge_recommended=report.flag("merge_recommended"),
            tuning_failures=report.objects("tuning_failures", TuningFailure.read),
            scope=report.text("scope"),
        )
