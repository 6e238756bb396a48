"""The trajectory report (``evalarc.trajectory.v1``, trajectory.json) as typed values: one frozen
dataclass per part, fields in schema order, and the one place the schema is written and read.

``to_json()`` gives exactly the object ``evalarc trajectory`` writes (key order included);
``from_json(value, name)`` reads one back, refusing a newer schema version (naming the file and
both versions) and any malformed field with one line naming the file and the field. Numbers are
kept as read (an ``int`` elapsed time stays an ``int``), so ``to_json(from_json(x)) == x``.

Two parts of the comparability identity stay plain JSON objects
(:data:`evalarc.canonical.JSONValue`): ``task`` and ``runtime`` are the evaluations' own objects,
compared whole and shown whole; no reader takes them apart beyond a key or two.

Pure: no file is read or written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalarc import schemas
from evalarc.canonical import JSONValue
from evalarc.formats.model import Source
from evalarc.review.model_json import Fields, report_fields

TRAJECTORY_SCHEMA = schemas.TRAJECTORY


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One checkpoint of the curve: its score, how long it held and the area it adds."""

    elapsed_seconds: float
    score: float
    resolved: bool
    held_until_seconds: float
    """The next checkpoint's time, or the budget for the last one."""
    score_area: float
    """``score x (held_until - elapsed)``."""
    candidate_sha256: str | None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "elapsed_seconds": self.elapsed_seconds,
            "score": self.score,
            "resolved": self.resolved,
            "held_until_seconds": self.held_until_seconds,
            "score_area": self.score_area,
            "candidate_sha256": self.candidate_sha256,
        }

    @classmethod
    def read(cls, part: Fields) -> CheckpointRow:
        part.only(
            "elapsed_seconds",
            "score",
            "resolved",
            "held_until_seconds",
            "score_area",
            "candidate_sha256",
        )
        return cls(
            elapsed_seconds=part.number("elapsed_seconds"),
            score=part.number("score"),
            resolved=part.flag("resolved"),
            held_until_seconds=part.number("held_until_seconds"),
            score_area=part.number("score_area"),
            candidate_sha256=part.opt_text("candidate_sha256"),
        )


@dataclass(frozen=True, slots=True)
class Regression:
    """A checkpoint whose score fell below the one before it (JSON ``from``/``to``)."""

    elapsed_seconds: float
    before: float
    after: float

    def to_json(self) -> dict[str, JSONValue]:
        return {"elapsed_seconds": self.elapsed_seconds, "from": self.before, "to": self.after}

    @classmethod
    def read(cls, part: Fields) -> Regression:
        part.only("elapsed_seconds", "from", "to")
        return cls(part.number("elapsed_seconds"), part.number("from"), part.number("to"))


@dataclass(frozen=True, slots=True)
class TrajectoryIdentity:
    """What every checkpoint's evaluation shares, so their scores may share one curve."""

    schema_version: str
    """The evaluations' schema (``evalarc.evaluation.v2``)."""
    task: Mapping[str, JSONValue]
    """The evaluations' ``task`` object (``id``, ``version``, maybe ``split``), kept whole."""
    grader_sha256: str
    cases_sha256: str
    runtime: Mapping[str, JSONValue]
    """The evaluations' whole ``runtime`` object, kept whole."""
    seeds: tuple[int, ...]
    weights: Mapping[str, float]
    """Dimension -> weight, in the evaluations' order."""

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "schema_version": self.schema_version,
            "task": self.task,
            "grader_sha256": self.grader_sha256,
            "cases_sha256": self.cases_sha256,
            "runtime": self.runtime,
            "seeds": list(self.seeds),
            "weights": dict(self.weights),
        }

    @classmethod
    def read(cls, part: Fields) -> TrajectoryIdentity:
        part.only(
            "schema_version", "task", "grader_sha256", "cases_sha256", "runtime", "seeds", "weights"
        )
        return cls(
            schema_version=part.text("schema_version"),
            task=part.json_object("task"),
            grader_sha256=part.text("grader_sha256"),
            cases_sha256=part.text("cases_sha256"),
            runtime=part.json_object("runtime"),
            seeds=part.integers("seeds"),
            weights=part.numbers("weights"),
        )


@dataclass(frozen=True, slots=True)
class TrajectoryReport:
    """trajectory.json: the score-area statistic of validated checkpoints."""

    schema_version: str
    evalarc_version: str
    source: Source
    """The checkpoints file: base name and SHA-256 of its bytes."""
    budget_seconds: float
    normalized_score_area: float
    score_area: float
    final_score: float
    final_resolved: bool
    first_resolved_seconds: float | None
    regressions: tuple[Regression, ...]
    checkpoint_count: int
    clock_source: str
    interpretation: str
    identity: TrajectoryIdentity
    checkpoints: tuple[CheckpointRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "evalarc_version": self.evalarc_version,
            "source": self.source.to_json(),
            "budget_seconds": self.budget_seconds,
            "normalized_score_area": self.normalized_score_area,
            "score_area": self.score_area,
            "final_score": self.final_score,
            "final_resolved": self.final_resolved,
            "first_resolved_seconds": self.first_resolved_seconds,
            "regressions": [regression.to_json() for regression in self.regressions],
            "checkpoint_count": self.checkpoint_count,
            "clock_source": self.clock_source,
            "interpretation": self.interpretation,
            "identity": self.identity.to_json(),
            "checkpoints": [row.to_json() for row in self.checkpoints],
        }

    @classmethod
    def from_json(cls, value: object, name: str) -> TrajectoryReport:
        """Read trajectory.json (``name`` is the file as the user gave it)."""
        report = report_fields(value, TRAJECTORY_SCHEMA, name)
        report.only(
            "schema_version",
            "evalarc_version",
            "source",
            "budget_seconds",
            "normalized_score_area",
            "score_area",
            "final_score",
            "final_resolved",
            "first_resolved_seconds",
            "regressions",
            "checkpoint_count",
            "clock_source",
            "interpretation",
            "identity",
            "checkpoints",
        )
        checkpoints = report.objects("checkpoints", CheckpointRow.read)
        if not checkpoints:
            raise report.fail("checkpoints", "is empty")
        count = report.count("checkpoint_count")
        if count != len(checkpoints):
            raise report.fail("checkpoint_count", f"is {count}, not the {len(checkpoints)} listed")
        return cls(
            schema_version=report.text("schema_version"),
            evalarc_version=report.text("evalarc_version"),
            source=report.source(),
            budget_seconds=report.number("budget_seconds"),
            normalized_score_area=report.number("normalized_score_area"),
            score_area=report.number("score_area"),
            final_score=report.number("final_score"),
            final_resolved=report.flag("final_resolved"),
            first_resolved_seconds=report.opt_number("first_resolved_seconds"),
            regressions=report.objects("regressions", Regression.read),
            checkpoint_count=count,
            clock_source=report.text("clock_source"),
            interpretation=report.text("interpretation"),
            identity=TrajectoryIdentity.read(report.obj("identity")),
            checkpoints=checkpoints,
        )
