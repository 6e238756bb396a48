"""Score over elapsed time: the left-step score-area utility (``evalarc trajectory``).

A caller hands a list of checkpoints, each an elapsed time (from the caller's own monotonic
clock) and the complete ``evalarc.evaluation.v2`` object evaluated at that time. For a budget
B the utility is ``(1/B) * integral_0^B score(t) dt`` over a left-step curve: the score is zero
until the first checkpoint, each observed score holds until the next checkpoint, and the last
one holds until B. Regressions keep their lower score (no best-so-far) and nothing is
interpolated.

Only comparable observations may share a curve: schema version, task, grader fingerprint, cases
fingerprint, the whole runtime object, the seeds and the dimension weights must be identical
across checkpoints (the reference compared neither seeds nor weights; seed 000 says changing
seeds or scoring rules breaks comparability, and the weights are checked directly because the
grader fingerprint is only a claim inside the file). An empty list is refused (the reference
returned area 0, which reads like a measured zero).

Pure: the caller reads the file; this module validates the parsed document and returns the
typed report (:class:`evalarc.review.trajectory_model.TrajectoryReport`). The area is summed
exactly (``fractions.Fraction`` over the given numbers) and rounded once, so the command and
``verify`` agree bit for bit and hand-checked cases come out exact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import Any

from evalarc import __version__, schemas
from evalarc.canonical import JSONValue, canonical_json, is_finite_number
from evalarc.errors import IncomparableError, InputError, UsageError, VerificationError
from evalarc.formats.model import Source
from evalarc.review.trajectory_model import (
    CheckpointRow,
    Regression,
    TrajectoryIdentity,
    TrajectoryReport,
)

TRAJECTORY_SCHEMA = schemas.TRAJECTORY
"""The report's schema (:mod:`evalarc.review.trajectory_model` reads and writes it)."""
EVALUATION_SCHEMA = schemas.EVALUATION
"""The only evaluation schema a checkpoint may carry (``evalarc.packs.EVALUATION_SCHEMA``)."""
CLOCK_SOURCE = "caller-reported"
INTERPRETATION = (
    "An observed score-area statistic: each checkpoint's evaluated score is held from its "
    "caller-reported elapsed time until the next checkpoint (zero before the first, the last "
    "held until the budget), integrated and divided by the budget. It is not a METR time "
    "horizon, which needs human task-duration calibration and success probabilities across a "
    "suitable task distribution. A last score held until the budget does not show that the "
    "agent kept running or that its artifact stayed valid, and EvalArc does not authenticate "
    "the elapsed times."
)

IDENTITY_FIELDS = (
    "schema_version",
    "task",
    "grader_sha256",
    "cases_sha256",
    "runtime",
    "seeds",
    "weights",
)
"""What must be identical across checkpoints for their scores to share one curve; ``weights``
is the dimension -> weight map read from the evaluation's ``dimensions``."""

TIME_RULE = "checkpoint times must increase and stay within the budget"
SCORE_RULE = "checkpoint scores must be finite and between zero and one"
VALID_RULE = "checkpoint must have a valid evaluated score"
COMPARABLE_RULE = (
    "checkpoints must use the same task, grader, cases, runtime, seeds, and scoring weights"
)

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One validated observation."""

    elapsed_seconds: int | float
    """Caller-reported seconds since the caller's start clock (0 <= t <= budget)."""
    score: int | float
    """The evaluation's weighted score in [0, 1]."""
    resolved: bool
    """The evaluation's full-resolution flag."""
    candidate_sha256: str | None
    """The evaluated snapshot's fingerprint, when the evaluation names one."""


@dataclass(frozen=True, slots=True)
class Trajectory:
    """Validated checkpoints (at least one, strictly increasing) and their shared identity."""

    budget_seconds: float
    checkpoints: tuple[Checkpoint, ...]
    identity: TrajectoryIdentity
    """The comparability fields (:data:`IDENTITY_FIELDS`) every checkpoint shares."""


def check_budget(budget_seconds: object) -> float:
    """The budget as a float; refuse anything but a finite number greater than zero."""
    budget = (
        None
        if isinstance(budget_seconds, bool) or not isinstance(budget_seconds, int | float)
        else _float_or_none(budget_seconds)
    )
    if budget is None or not math.isfinite(budget) or budget <= 0:
        raise UsageError(
            f"budget_seconds must be finite and positive, not {_number_text(budget_seconds)}"
        )
    return budget


@dataclass(frozen=True, slots=True)
class TrajectoryOptions:
    """Every option that changes a trajectory report: the budget. Recorded in params.json and
    replayed by ``verify``."""

    budget_seconds: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "budget_seconds", check_budget(self.budget_seconds))

    def to_params(self) -> dict[str, JSONValue]:
        return {"budget_seconds": self.budget_seconds}

    @classmethod
    def from_params(cls, params: Mapping[str, Any], name: str) -> TrajectoryOptions:
        """The options recorded in ``params`` (the params.json read from ``name``)."""
        recorded: Any = params.get("budget_seconds")  # checked by check_budget
        try:
            return cls(recorded)
        except UsageError as error:
            raise VerificationError(f"{name}: {error.message}") from None


def _float_or_none(value: int | float) -> float | None:
    try:
        return float(value)
    except OverflowError:  # an integer beyond any float
        return None


def _number_text(value: object) -> str:
    return repr(value)[:40]


def _refuse(name: str, index: int, rule: str, detail: str) -> InputError:
    return InputError(f"{name}: checkpoint {index}: {rule} ({detail})")


def _check_valid(name: str, index: int, evaluation: Mapping[str, Any]) -> None:
    valid = evaluation.get("valid")
    status = evaluation.get("status")
    if valid is not True:
        detail = "valid is missing" if "valid" not in evaluation else f"valid is {valid!r}"
        raise _refuse(name, index, VALID_RULE, detail[:80])
    if status == "environment_error":
        raise _refuse(name, index, VALID_RULE, "status is environment_error")
    if evaluation.get("score") is None:
        raise _refuse(name, index, VALID_RULE, "score is null")


def _check_time(
    name: str, index: int, checkpoint: Mapping[str, Any], budget: float, previous: float | None
) -> int | float:
    if "elapsed_seconds" not in checkpoint:
        raise _refuse(name, index, TIME_RULE, "elapsed_seconds is missing")
    elapsed = checkpoint["elapsed_seconds"]
    if not is_finite_number(elapsed):
        raise _refuse(name, index, TIME_RULE, f"elapsed_seconds {_number_text(elapsed)}")
    assert isinstance(elapsed, int | float)
    if elapsed < 0:
        raise _refuse(name, index, TIME_RULE, f"{_number_text(elapsed)} s is negative")
    if elapsed > budget:
        raise _refuse(
            name,
            index,
            TIME_RULE,
            f"{_number_text(elapsed)} s exceeds the budget {format_seconds(budget)} s",
        )
    if previous is not None and not elapsed > previous:
        raise _refuse(
            name,
            index,
            TIME_RULE,
            f"{_number_text(elapsed)} s is not after the previous {_number_text(previous)} s",
        )
    return elapsed


def _check_score(name: str, index: int, score: object) -> int | float:
    if not is_finite_number(score):
        raise _refuse(name, index, SCORE_RULE, f"score {_number_text(score)}")
    assert isinstance(score, int | float)
    if not 0 <= score <= 1:
        raise _refuse(name, index, SCORE_RULE, f"score {_number_text(score)}")
    return score


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def _identity(name: str, index: int, evaluation: Mapping[str, Any]) -> TrajectoryIdentity:
    """The comparability fields of one evaluation, each checked for shape."""

    def refuse(detail: str) -> InputError:
        return InputError(f"{name}: checkpoint {index}: evaluation {detail}")

    task = evaluation.get("task")
    if not (
        isinstance(task, dict)
        and isinstance(task.get("id"), str)
        and isinstance(task.get("version"), str)
    ):
        raise refuse("task must be an object with a string id and version")
    for field in ("grader_sha256", "cases_sha256"):
        if not _is_sha256(evaluation.get(field)):
            raise refuse(f"{field} must be 64 lowercase hexadecimal digits")
    runtime = evaluation.get("runtime")
    if not isinstance(runtime, dict) or not runtime:
        raise refuse("runtime must be the complete runtime object")
    seeds = evaluation.get("seeds")
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(seed, int) and not isinstance(seed, bool) for seed in seeds)
        or len(set(seeds)) != len(seeds)
    ):
        raise refuse("seeds must be a non-empty list of distinct integers")
    dimensions = evaluation.get("dimensions")
    if (
        not isinstance(dimensions, dict)
        or not dimensions
        or not all(
            isinstance(entry, dict) and is_finite_number(entry.get("weight"))
            for entry in dimensions.values()
        )
    ):
        raise refuse("dimensions must map each dimension to an object with a numeric weight")
    return TrajectoryIdentity(
        schema_version=evaluation["schema_version"],
        task=task,
        grader_sha256=evaluation["grader_sha256"],
        cases_sha256=evaluation["cases_sha256"],
        runtime=runtime,
        seeds=tuple(seeds),
        weights={name: entry["weight"] for name, entry in dimensions.items()},
    )


def _differences(mine: TrajectoryIdentity, theirs: TrajectoryIdentity) -> list[str]:
    """The identity fields that differ, with the differing keys of task and runtime."""
    first, other = mine.to_json(), theirs.to_json()
    found: list[str] = []
    for field in IDENTITY_FIELDS:
        left, right = first[field], other[field]
        if canonical_json(left) == canonical_json(right):
            continue
        if isinstance(left, dict) and isinstance(right, dict):
            keys = sorted(
                key
                for key in set(left) | set(right)
                if key not in left
                or key not in right
                or canonical_json(left[key]) != canonical_json(right[key])
            )
            found.append(f"{field} ({', '.join(key[:40] for key in keys[:5])})")
        else:
            found.append(field)
    return found


def parse_checkpoints(document: JSONValue, budget_seconds: float, *, name: str) -> Trajectory:
    """Validate a parsed checkpoints document; every error names ``name`` (the file) and the
    1-based checkpoint, and states the rule it broke."""
    budget = check_budget(budget_seconds)
    if not isinstance(document, list):
        raise InputError(f"{name}: checkpoints must be an array")
    if not document:
        raise InputError(f"{name}: checkpoints must not be empty (nothing was observed)")
    checkpoints: list[Checkpoint] = []
    identity: TrajectoryIdentity | None = None
    previous: float | None = None
    for index, entry in enumerate(document, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("evaluation"), dict):
            raise InputError(
                f"{name}: checkpoint {index}: each checkpoint must contain an evaluation object"
            )
        evaluation: dict[str, Any] = entry["evaluation"]
        schema = evaluation.get("schema_version")
        if schema != EVALUATION_SCHEMA:
            raise InputError(
                f"{name}: checkpoint {index}: evaluation schema_version {str(schema)[:60]!r} is "
                f"not {EVALUATION_SCHEMA!r}, the one this EvalArc reads"
            )
        _check_valid(name, index, evaluation)
        elapsed = _check_time(name, index, entry, budget, previous)
        score = _check_score(name, index, evaluation["score"])
        resolved = evaluation.get("resolved")
        if not isinstance(resolved, bool):
            shown = "missing" if "resolved" not in evaluation else repr(resolved)[:40]
            raise InputError(
                f"{name}: checkpoint {index}: checkpoint resolution must be Boolean "
                f"(resolved is {shown})"
            )
        candidate = evaluation.get("candidate_sha256")
        if candidate is not None and not _is_sha256(candidate):
            raise InputError(
                f"{name}: checkpoint {index}: evaluation candidate_sha256 must be 64 lowercase "
                "hexadecimal digits"
            )
        current = _identity(name, index, evaluation)
        if identity is None:
            identity = current
        else:
            differing = _differences(identity, current)
            if differing:
                raise IncomparableError(
                    f"{name}: checkpoint {index}: {COMPARABLE_RULE} (it differs from checkpoint "
                    f"1 in {'; '.join(differing)})"
                )
        checkpoints.append(Checkpoint(elapsed, score, resolved, candidate))
        previous = elapsed
    assert identity is not None
    return Trajectory(budget, tuple(checkpoints), identity)


# --------------------------------------------------------------------------- the metric


def held_until(checkpoints: Sequence[Checkpoint], budget_seconds: float) -> list[int | float]:
    """When each checkpoint's score stops applying: the next checkpoint's time, or the budget."""
    ends: list[int | float] = [point.elapsed_seconds for point in checkpoints[1:]]
    return [*ends, budget_seconds]


def score_area(checkpoints: Sequence[Checkpoint], budget_seconds: float) -> Fraction:
    """``integral_0^B score(t) dt`` of the left-step curve, exactly (score x seconds)."""
    total = Fraction(0)
    for point, end in zip(checkpoints, held_until(checkpoints, budget_seconds), strict=True):
        total += Fraction(point.score) * (Fraction(end) - Fraction(point.elapsed_seconds))
    return total


def compute_trajectory(trajectory: Trajectory, source: Source) -> TrajectoryReport:
    """The ``evalarc.trajectory.v1`` report of validated checkpoints read from ``source``."""
    budget = trajectory.budget_seconds
    points = trajectory.checkpoints
    area = score_area(points, budget)
    rows = tuple(
        CheckpointRow(
            elapsed_seconds=point.elapsed_seconds,
            score=point.score,
            resolved=point.resolved,
            held_until_seconds=end,
            score_area=float(
                Fraction(point.score) * (Fraction(end) - Fraction(point.elapsed_seconds))
            ),
            candidate_sha256=point.candidate_sha256,
        )
        for point, end in zip(points, held_until(points, budget), strict=True)
    )
    regressions = tuple(
        Regression(point.elapsed_seconds, before.score, point.score)
        for before, point in pairwise(points)
        if point.score < before.score
    )
    first_resolved = next((point.elapsed_seconds for point in points if point.resolved), None)
    return TrajectoryReport(
        schema_version=TRAJECTORY_SCHEMA,
        evalarc_version=__version__,
        source=source,
        budget_seconds=budget,
        normalized_score_area=float(area / Fraction(budget)),
        score_area=float(area),
        final_score=points[-1].score,
        final_resolved=points[-1].resolved,
        first_resolved_seconds=first_resolved,
        regressions=regressions,
        checkpoint_count=len(points),
        clock_source=CLOCK_SOURCE,
        interpretation=INTERPRETATION,
        identity=trajectory.identity,
        checkpoints=rows,
    )


def trajectory_from_document(
    document: JSONValue, budget_seconds: float, source: Source
) -> TrajectoryReport:
    """Validate and compute in one call: what the command and ``verify`` both run."""
    return compute_trajectory(parse_checkpoints(document, budget_seconds, name=source.name), source)


# --------------------------------------------------------------------------- text


def format_seconds(value: float) -> str:
    """``1800`` for whole seconds, otherwise up to three decimals (``12.5``, ``0.125``)."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) >= 1e-3 else f"{value:.3g}"
