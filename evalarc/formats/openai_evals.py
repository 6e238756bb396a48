"""Read an OpenAI Evals record log (``oaieval ... --record_path log.jsonl``) into the shared model.

evals' ``LocalRecorder`` writes one JSON object per line: ``{"spec": ...}`` first, then one line
per event (``run_id``, ``event_id``, ``sample_id``, ``type``, ``data``), then
``{"final_report": ..., "run_id": ...}`` when the run finished. A case is a ``sample_id``; its one
check, ``match``, is the ``correct`` of its ``match`` event (what evals' ``get_accuracy`` counts).

Fail closed: a sample with two ``match`` events, a grader event of a kind EvalArc does not read
(model-graded ``metrics``), events of another run, a ``correct`` that is not a bool, or a
``final_report`` accuracy that differs from the matches' own mean is refused with the file and
both figures. A log without ``final_report`` is an unfinished run (the gate fails on it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalarc.errors import InputError
from evalarc.formats.figures import agrees
from evalarc.formats.jsonlines import json_lines
from evalarc.formats.model import (
    Attempt,
    Headline,
    Material,
    Run,
    SampleMeta,
    Source,
    cut_evidence,
)

MATCH_CHECK = "match"
HEADLINE_NAME = "oaieval accuracy"
OUTPUT_TEXT_CHARS = 20_000
WHAT = "OpenAI Evals record log"

_INFORMATIONAL = frozenset(
    {"sampling", "function_call", "cond_logp", "embedding", "extra", "raw_sample", "pick_option"}
)
"""Event types that carry what the model did, not a verdict: kept as evidence or skipped."""


def is_record_log_line(first: dict[str, Any]) -> bool:
    """The marker of a record log: its first line is ``{"spec": {...}}`` with an eval name."""
    spec = first.get("spec")
    return isinstance(spec, dict) and "eval_name" in spec and "run_id" in spec


def read_openai_evals(path: Path, source: Source, threshold: float) -> Run:
    name = str(path)
    spec: dict[str, Any] | None = None
    final: dict[str, Any] | None = None
    matches: dict[str, tuple[bool, Any, Any]] = {}
    errors: dict[str, str] = {}
    sampled: dict[str, str] = {}
    prompts: dict[str, str] = {}
    order: list[str] = []
    for number, line in json_lines(path, what=WHAT):
        if spec is None:
            if not is_record_log_line(line):
                raise InputError(
                    f"{name} is not an {WHAT}: line {number} is not its "
                    '{"spec": {...}} line (oaieval writes it first)'
                )
            spec = line["spec"]
            continue
        if "spec" in line:
            raise InputError(f"{name}: line {number} is a second spec (two logs in one file?)")
        if "final_report" in line:
            if final is not None:
                raise InputError(f"{name}: line {number} is a second final_report")
            if not isinstance(line["final_report"], dict):
                raise InputError(f"{name}: line {number}: final_report is not an object")
            _same_run(name, number, line, spec)
            final = line["final_report"]
            continue
        kind, sample_id, data = _event(name, number, line, spec)
        if sample_id not in matches and sample_id not in sampled and sample_id not in errors:
            order.append(sample_id)
        if kind == "match":
            if sample_id in matches:
                raise InputError(
                    f"{name}: sample {sample_id} has two match events (line {number}); "
                    "EvalArc does not pool them"
                )
            correct = data.get("correct")
            if not isinstance(correct, bool):
                raise InputError(
                    f"{name}: line {number}: match.correct is {correct!r}, not true or false"
                )
            matches[sample_id] = (correct, data.get("expected"), data.get("picked"))
        elif kind == "sampling":
            text = data.get("sampled")
            sampled[sample_id] = _text(text)
            prompts.setdefault(sample_id, _text(data.get("prompt")))
        elif kind == "error":
            errors[sample_id] = f"{data.get('type')}: {data.get('message')}"
        elif kind not in _INFORMATIONAL:
            raise InputError(
                f"{name}: line {number}: a {kind!r} event; EvalArc reads match-graded record "
                "logs only (model-graded metrics events are not read)"
            )
    if spec is None:
        raise InputError(f"{name} is empty, not an {WHAT}")
    if not matches:
        raise InputError(f"{name} holds no match events (the grader result EvalArc reads)")
    cases: dict[str, dict[str, list[Attempt]]] = {}
    samples: dict[str, list[SampleMeta]] = {}
    material: dict[str, list[Material]] = {}
    for sample_id in order:
        if sample_id in matches:
            correct, expected, picked = matches[sample_id]
            evidence = f"expected {_text(expected)!r}, picked {_text(picked)!r}"
            attempt = Attempt(passed=correct, value=correct, evidence=cut_evidence(evidence))
        else:
            reason = errors.get(sample_id, "no match event recorded for this sample")
            attempt = Attempt(passed=None, evidence=cut_evidence(f"unassessed: {reason}"))
        cases[sample_id] = {MATCH_CHECK: [attempt]}
        output = sampled.get(sample_id)
        samples[sample_id] = [
            SampleMeta(
                output_text=output[:OUTPUT_TEXT_CHARS] if output is not None else None,
                verdicts={MATCH_CHECK: attempt.passed},
            )
        ]
        if sample_id in prompts:
            material[sample_id] = [Material("input", prompts[sample_id])]
        if sample_id in matches and matches[sample_id][1] is not None:
            material.setdefault(sample_id, []).append(
                Material("expected", _text(matches[sample_id][1]))
            )
    accuracy = sum(correct for correct, _, _ in matches.values()) / len(matches)
    if final is not None and "accuracy" in final:
        _reconcile(name, final["accuracy"], accuracy, len(matches))
    return Run(
        format="openai_evals",
        source=source,
        threshold=threshold,
        cases=cases,
        identity={
            "eval_name": spec.get("eval_name"),
            "base_eval": spec.get("base_eval"),
            "split": spec.get("split"),
            "completion_fns": spec.get("completion_fns"),
            "run_id": spec.get("run_id"),
        },
        headline=Headline(HEADLINE_NAME, accuracy),
        incomplete=final is None,
        material=material,
        samples=samples,
    )


def _event(
    name: str, number: int, line: dict[str, Any], spec: dict[str, Any]
) -> tuple[str, str, dict[str, Any]]:
    kind = line.get("type")
    sample_id = line.get("sample_id")
    data = line.get("data")
    if not isinstance(kind, str) or "event_id" not in line:
        raise InputError(f"{name}: line {number} is neither an event nor a final_report")
    _same_run(name, number, line, spec)
    if not isinstance(sample_id, str) or not sample_id:
        raise InputError(f"{name}: line {number}: a {kind} event without a sample_id")
    if not isinstance(data, dict):
        raise InputError(f"{name}: line {number}: a {kind} event whose data is not an object")
    return kind, sample_id, data


def _same_run(name: str, number: int, line: dict[str, Any], spec: dict[str, Any]) -> None:
    if line.get("run_id") != spec.get("run_id"):
        raise InputError(
            f"{name}: line {number} belongs to run {line.get('run_id')!r}, "
            f"not {spec.get('run_id')!r} of its spec (two logs in one file?)"
        )


def _reconcile(name: str, reported: object, recomputed: float, count: int) -> None:
    if not agrees(reported, recomputed):
        raise InputError(
            f"{name}: final_report accuracy {reported!r} disagrees with its {count} match "
            f"events, whose mean is {recomputed!r}"
        )


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)
