"""EvalArc's own evaluations (``evaluation.json`` or its report folder) as a diff format.

Each (seed, case) becomes one case of the shared model, named ``<seed>/<case id>``; each
dimension check of that case becomes one check with one attempt (true pass, false fail, null
unassessed). Two evaluations can only be compared when they graded the same thing the same way,
so the run's identity lists the fields that must match: task ``id@version``, grader and cases
fingerprints, seeds, runtime and weights (:func:`incomparable_field` names the first that does
not).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalarc import schemas
from evalarc.canonical import canonical_json, strict_loads
from evalarc.errors import InputError
from evalarc.formats.model import Attempt, Headline, Run, SampleMeta, Source, cut_evidence

SCHEMA = schemas.EVALUATION
SCHEMA_PREFIX = "evalarc.evaluation."
REPORT_FILE = "evaluation.json"
COMPARABLE_FIELDS: tuple[str, ...] = (
    "task",
    "grader_sha256",
    "cases_sha256",
    "seeds",
    "runtime",
    "weights",
)
"""Identity fields two evaluations must share to be compared, in the order they are checked."""


def resolve_evaluation_path(path: Path) -> Path:
    """An evaluation report folder stands for its ``evaluation.json``; other paths (including a
    folder without one, which the loader then refuses as a directory) are kept."""
    if path.is_dir() and not path.is_symlink() and (path / REPORT_FILE).is_file():
        return path / REPORT_FILE
    return path


def is_evaluation(value: object) -> bool:
    """True for a JSON object that declares an EvalArc evaluation schema (any version)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("schema_version"), str)
        and value["schema_version"].startswith(SCHEMA_PREFIX)
    )


def read_evaluation(path: Path, source: Source, threshold: float) -> Run:
    """Read ``path`` (an ``evalarc.evaluation.v2`` report) into the shared model.

    InputError names the file for anything unusable: not JSON, another or a newer schema, or
    fields that do not have the evaluation's shape.
    """
    try:
        value = strict_loads(path.read_bytes())
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as error:
        raise InputError(f"{path.name} is not a readable JSON evaluation: {error}") from None
    return evaluation_run(value, source, threshold, path.name)


def evaluation_run(value: object, source: Source, threshold: float, name: str) -> Run:
    """The shared model of an evaluation object (``name`` is used in error messages)."""
    if not isinstance(value, dict):
        raise InputError(f"{name} is not a JSON object")
    schema = value.get("schema_version")
    if schema != SCHEMA:
        if is_evaluation(value):
            raise InputError(f"{name} uses {schema}; this EvalArc reads {SCHEMA}")
        raise InputError(f"{name} is not an EvalArc evaluation (schema {schema!r})")
    reader = _Fields(value, name)
    task = reader.mapping("task")
    task_ref = (
        f"{_text(task.get('id'), name, 'task.id')}@"
        f"{_text(task.get('version'), name, 'task.version')}"
    )
    dimensions = reader.mapping("dimensions")
    weights: dict[str, float] = {}
    for dimension, group in dimensions.items():
        weight = _finite_float(group.get("weight") if isinstance(group, dict) else None)
        if weight is None:
            raise InputError(f"{name}: dimension {dimension!r} has no finite weight")
        weights[str(dimension)] = weight
    seeds = reader.field("seeds")
    if not isinstance(seeds, list) or not all(
        isinstance(seed, int) and not isinstance(seed, bool) for seed in seeds
    ):
        raise InputError(f"{name}: seeds must be a list of integers")
    cases: dict[str, dict[str, list[Attempt]]] = {}
    samples: dict[str, list[SampleMeta]] = {}
    for position, case in enumerate(reader.list("cases")):
        label, checks, meta = _case(case, position, name)
        if label in cases:
            raise InputError(f"{name}: case {label} appears twice")
        cases[label] = checks
        samples[label] = [meta]
    score = value.get("score")
    if score is not None and _finite_float(score) is None:
        raise InputError(f"{name}: score must be a finite number or null")
    identity: dict[str, Any] = {
        "task": task_ref,
        "grader_sha256": reader.text("grader_sha256"),
        "cases_sha256": reader.text("cases_sha256"),
        "seeds": list(seeds),
        "runtime": reader.mapping("runtime"),
        "weights": weights,
        "candidate_sha256": reader.text("candidate_sha256"),
        "valid": value.get("valid") is True,
        "resolved": value.get("resolved") is True,
        "must_match": list(COMPARABLE_FIELDS),
    }
    return Run(
        format="evaluation",
        source=source,
        threshold=threshold,
        cases=cases,
        identity=identity,
        headline=Headline("weighted score", float(score) if score is not None else None),
        # An environment failure leaves the evaluation invalid: it did not assess everything.
        incomplete=value.get("valid") is not True,
        samples=samples,
    )


def _case(
    case: object, position: int, name: str
) -> tuple[str, dict[str, list[Attempt]], SampleMeta]:
    if not isinstance(case, dict):
        raise InputError(f"{name}: case {position} is not an object")
    seed = case.get("seed")
    case_id = case.get("case_id")
    checks = case.get("checks")
    if (
        isinstance(seed, bool)
        or not isinstance(seed, int)
        or not isinstance(case_id, str)
        or not case_id
        or not isinstance(checks, dict)
    ):
        raise InputError(f"{name}: case {position} needs seed, case_id and checks")
    error = case.get("error")
    attempts: dict[str, list[Attempt]] = {}
    for dimension, verdict in checks.items():
        if verdict is not None and not isinstance(verdict, bool):
            raise InputError(
                f"{name}: case {seed}/{case_id} check {dimension!r} is not a boolean or null"
            )
        evidence = cut_evidence(error) if verdict is not True else None
        attempts[str(dimension)] = [Attempt(passed=verdict, value=verdict, evidence=evidence)]
    meta = SampleMeta()
    duration = _finite_float(case.get("duration_seconds"))
    if duration is not None and duration >= 0:
        meta.usage["duration_seconds"] = duration
    meta.verdicts = {str(k): v for k, v in checks.items()}
    return f"{seed}/{case_id}", attempts, meta


def incomparable_field(baseline: Run, current: Run) -> str | None:
    """The first identity field two evaluation runs do not share, or None when comparable."""
    for field in COMPARABLE_FIELDS:
        if canonical_json(baseline.identity.get(field)) != canonical_json(
            current.identity.get(field)
        ):
            return field
    return None


def _finite_float(value: object) -> float | None:
    """``value`` as a finite float, or None for bools, non-numbers and integers beyond any
    float (strict JSON has no NaN or Infinity, but it does have 1 followed by 400 zeros)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _text(value: object, name: str, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{name}: {field} must be a non-empty string")
    return value


class _Fields:
    def __init__(self, value: Mapping[str, Any], name: str) -> None:
        self._value = value
        self._name = name

    def field(self, key: str) -> Any:
        if key not in self._value:
            raise InputError(f"{self._name}: {key} is missing")
        return self._value[key]

    def text(self, key: str) -> str:
        return _text(self.field(key), self._name, key)

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.field(key)
        if not isinstance(value, dict):
            raise InputError(f"{self._name}: {key} must be an object")
        return value

    def list(self, key: str) -> list[Any]:
        value = self.field(key)
        if not isinstance(value, list):
            raise InputError(f"{self._name}: {key} must be a list")
        return value
