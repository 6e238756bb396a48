"""Read promptfoo ``--output`` JSON into the shared model.

One row of ``results.results`` is one test execution, so it becomes one attempt of one case.
Repeats (``--repeat``) share description and vars and therefore collapse into attempts of the
same case; the row order in the file is kept as the attempt order, ``testIdx`` is never used to
pair rows.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc.canonical import is_finite_number, sha256_text, strict_loads
from evalarc.errors import InputError
from evalarc.formats.model import (
    Attempt,
    Graders,
    Headline,
    Material,
    Run,
    SampleMeta,
    Source,
    cut_evidence,
)

HEADLINE_NAME = "promptfoo pass rate"
PROVIDER_ERROR_CHECK = "provider error"
SUCCESS_CHECK = "success"

MODEL_GRADED_TYPES = frozenset(
    {
        "llm-rubric",
        "model-graded-closedqa",
        "model-graded-factuality",
        "factuality",
        "g-eval",
        "answer-relevance",
        "context-faithfulness",
        "context-recall",
        "context-relevance",
        "select-best",
    }
)
"""Assertion types whose verdict comes from a grader model."""

CODE_ASSERTION_TYPES = frozenset({"javascript", "python", "webhook", "ruby"})
"""Assertion types whose value is code, not an expected answer (never leak material)."""

TRUNCATING_STOP_REASONS = frozenset({"max_tokens", "length", "model_length", "max_output_tokens"})

CHECK_VALUE_CHARS = 60
"""How much of an assertion value goes into a check name built from ``type: value``."""
OUTPUT_TEXT_CHARS = 20_000
MATERIAL_TEXT_CHARS = 4096
_ERROR_DETAIL_CHARS = 200


def read_promptfoo(path: Path, source: Source, threshold: float) -> Run:
    """Read the promptfoo output file at ``path`` into a Run.

    Raises InputError naming the file when it is not strict JSON (NaN, duplicate keys,
    truncation) or lacks ``results.results[]``.
    """
    try:
        document = strict_loads(path.read_bytes())
    except (ValueError, RecursionError) as error:
        detail = str(error)[:_ERROR_DETAIL_CHARS] or type(error).__name__
        raise InputError(f"{path.name} is not JSON: {detail}") from None
    except OSError as error:
        raise InputError(f"{path.name} cannot be read: {error.strerror or error}") from None
    try:
        return build_promptfoo_run(document, source, threshold)
    except RecursionError:
        raise InputError(f"{path.name} is nested too deeply to read") from None


def build_promptfoo_run(document: object, source: Source, threshold: float) -> Run:
    """Turn an already parsed promptfoo document into a Run (pure; no file access)."""
    rows = _result_rows(document, source.name)
    labels = case_labels(rows)
    cases: dict[str, dict[str, list[Attempt]]] = {}
    samples: dict[str, list[SampleMeta]] = {}
    material: dict[str, dict[Material, None]] = {}  # insertion-ordered sets
    for row, label in zip(rows, labels, strict=True):
        meta = row_sample(row)
        checks = cases.setdefault(label, {})
        for check in row_checks(row):
            attempt = Attempt(
                passed=check.passed,
                value=check.value,
                evidence=check.evidence,
                output_sha256=meta.output_sha256,
            )
            checks.setdefault(check.name, []).append(attempt)
            meta.verdicts[check.name] = check.passed
        samples.setdefault(label, []).append(meta)
        known = material.setdefault(label, {})
        for item in row_material(row):
            known[item] = None

    results = _as_dict(_as_dict(document).get("results"))
    config = _as_dict(_as_dict(document).get("config"))
    description = config.get("description")
    identity: dict[str, Any] = {
        "description": description if isinstance(description, str) else None,
        "providers": sorted({provider_name(row.get("provider")) for row in rows}),
        "version": results.get("version"),
    }
    return Run(
        format="promptfoo",
        source=source,
        threshold=threshold,
        cases=cases,
        identity=identity,
        headline=pass_rate_headline(results.get("stats")),
        incomplete=False,
        material={label: list(items) for label, items in material.items() if items},
        samples=samples,
        graders=promptfoo_graders(rows),
    )


def _result_rows(document: object, name: str) -> list[dict[str, Any]]:
    results = _as_dict(document).get("results")
    rows = results.get("results") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise InputError(f"{name} is not a promptfoo output: expected results.results[]")
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(f"{name}: results.results[{index}] is not an object")
    return rows


# --- case labels -------------------------------------------------------------------------


def provider_name(provider: object) -> str:
    """How a row names its provider: the string itself, else its label, else its id."""
    if isinstance(provider, str) and provider:
        return provider
    if isinstance(provider, dict):
        for key in ("label", "id"):
            value = provider.get(key)
            if isinstance(value, str) and value:
                return value
    return "provider"


def _row_vars(row: dict[str, Any]) -> dict[str, Any]:
    test_case = _as_dict(row.get("testCase"))
    for candidate in (test_case.get("vars"), row.get("vars")):
        if isinstance(candidate, dict):
            return candidate
    return {}


def _vars_json(variables: dict[str, Any]) -> str:
    return json.dumps(variables, sort_keys=True, ensure_ascii=False)


def _base_label(row: dict[str, Any], position: int, variables: dict[str, Any]) -> str:
    description = _as_dict(row.get("testCase")).get("description")
    if isinstance(description, str) and description:
        return description
    if variables:
        return _vars_json(variables)
    test_index = row.get("testIdx")
    if isinstance(test_index, int) and not isinstance(test_index, bool):
        return f"test {test_index}"
    return f"test {position}"


def _prompt_key(row: dict[str, Any]) -> str:
    index = row.get("promptIdx")
    if isinstance(index, int) and not isinstance(index, bool):
        return str(index)
    return json.dumps(index, sort_keys=True, ensure_ascii=False)


def case_labels(rows: list[dict[str, Any]]) -> list[str]:
    """One case label per row, so that repeats of one test share a label.

    The description (else the vars as JSON, else ``test <testIdx>``) names the test; the vars
    are appended when one description covers several distinct vars; provider and prompt index
    are appended only when the file has more than one of them.
    """
    vars_texts = [_vars_json(_row_vars(row)) for row in rows]
    bases = [_base_label(row, position, _row_vars(row)) for position, row in enumerate(rows)]
    vars_per_base: dict[str, set[str]] = defaultdict(set)
    for base, vars_text in zip(bases, vars_texts, strict=True):
        vars_per_base[base].add(vars_text)
    providers = [provider_name(row.get("provider")) for row in rows]
    prompts = [_prompt_key(row) for row in rows]
    several_providers = len(set(providers)) > 1
    several_prompts = len(set(prompts)) > 1

    labels: list[str] = []
    for base, vars_text, provider, prompt in zip(
        bases, vars_texts, providers, prompts, strict=True
    ):
        label = base
        if len(vars_per_base[base]) > 1 and base != vars_text:
            label = f"{label} {vars_text}"
        if several_providers:
            label = f"{label} · {provider}"
        if several_prompts:
            label = f"{label} · prompt {prompt}"
        labels.append(label)
    return labels


# --- checks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowCheck:
    """One graded check of one row, before the row's output digest is attached."""

    name: str
    passed: bool | None
    value: Any = None
    evidence: str | None = None


def _is_provider_error(row: dict[str, Any]) -> bool:
    reason = row.get("failureReason")
    if is_finite_number(reason) and reason == 2:
        return True
    error = row.get("error")
    return error is not None and error != "" and row.get("gradingResult") is None


def _short_value(value: str | int | float) -> str:
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    if len(text) > CHECK_VALUE_CHARS:
        return text[:CHECK_VALUE_CHARS] + "…"
    return text


def component_check_name(component: object) -> str:
    """Name a component result: its metric, else ``type: value``, else its type."""
    assertion = _as_dict(_as_dict(component).get("assertion"))
    metric = assertion.get("metric")
    if isinstance(metric, str) and metric:
        return metric
    kind = assertion.get("type")
    kind_text = kind if isinstance(kind, str) and kind else "assertion"
    value = assertion.get("value")
    shown = value if isinstance(value, str) else _finite(value)
    if shown is not None:
        return f"{kind_text}: {_short_value(shown)}"
    return kind_text


def unique_names(names: list[str]) -> list[str]:
    """Suffix repeated names with `` #2``, `` #3``, ... so every check in a row is distinct."""
    used: set[str] = set()
    result: list[str] = []
    for name in names:
        candidate = name
        ordinal = 1
        while candidate in used:
            ordinal += 1
            candidate = f"{name} #{ordinal}"
        used.add(candidate)
        result.append(candidate)
    return result


def _components(row: dict[str, Any]) -> list[Any]:
    components = _as_dict(row.get("gradingResult")).get("componentResults")
    return components if isinstance(components, list) else []


def row_checks(row: dict[str, Any]) -> list[RowCheck]:
    """The checks one row contributes: a provider error, the row's success, or one per
    assertion component."""
    if _is_provider_error(row):
        return [RowCheck(PROVIDER_ERROR_CHECK, None, evidence=cut_evidence(row.get("error")))]
    components = _components(row)
    if not components:
        success = row.get("success")
        reason = _as_dict(row.get("gradingResult")).get("reason")
        passed = success if isinstance(success, bool) else None
        return [RowCheck(SUCCESS_CHECK, passed, evidence=cut_evidence(reason))]
    names = unique_names([component_check_name(component) for component in components])
    checks: list[RowCheck] = []
    for name, component in zip(names, components, strict=True):
        fields = _as_dict(component)
        verdict = fields.get("pass")
        checks.append(
            RowCheck(
                name=name,
                passed=verdict if isinstance(verdict, bool) else None,
                value=fields.get("score"),
                evidence=cut_evidence(fields.get("reason")),
            )
        )
    return checks


# --- material, usage, outputs ------------------------------------------------------------


def _assertions(row: dict[str, Any]) -> list[dict[str, Any]]:
    declared = _as_dict(row.get("testCase")).get("assert")
    if isinstance(declared, list):
        return [item for item in declared if isinstance(item, dict)]
    found = [_as_dict(component).get("assertion") for component in _components(row)]
    return [item for item in found if isinstance(item, dict)]


def _material_texts(value: object) -> list[str]:
    """The non-blank strings in ``value`` (a string or a list of them), each cut to size."""
    candidates = value if isinstance(value, list) else [value]
    texts: list[str] = []
    for candidate in candidates:
        if isinstance(candidate, str):
            text = candidate[:MATERIAL_TEXT_CHARS]
            if text and not text.isspace():
                texts.append(text)
    return texts


def row_material(row: dict[str, Any]) -> list[Material]:
    """Case text a harness must not contain: var values as input, assertion values as
    expected answers (negative and code assertions excluded)."""
    found: dict[Material, None] = {}  # an insertion-ordered set
    for value in _row_vars(row).values():
        if isinstance(value, str):
            for text in _material_texts(value):
                found[Material("input", text)] = None
    for assertion in _assertions(row):
        kind = assertion.get("type")
        kind_text = kind if isinstance(kind, str) else ""
        if kind_text.startswith("not-") or kind_text in CODE_ASSERTION_TYPES:
            continue
        for text in _material_texts(assertion.get("value")):
            found[Material("expected", text)] = None
    return list(found)


def _finite(value: object) -> float | None:
    """The number itself when it is a finite int/float (never a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return value if math.isfinite(value) else None
    except OverflowError:  # an integer beyond any float (JSON allows 1e400 written as digits)
        return None


def _usage_number(value: object) -> float | None:
    number = _finite(value)
    return number if number is not None and number >= 0 else None


_TOKEN_FIELDS = (
    ("total", "total_tokens"),
    ("prompt", "input_tokens"),
    ("completion", "output_tokens"),
    ("cached", "cached_input_tokens"),
)


def row_usage(row: dict[str, Any]) -> dict[str, float]:
    """Cost, tokens and latency of one row; only finite non-negative numbers count."""
    usage: dict[str, float] = {}
    cost = _usage_number(row.get("cost"))
    if cost is not None:
        usage["cost_usd"] = cost
    tokens = _as_dict(row.get("tokenUsage"))
    for source_key, metric in _TOKEN_FIELDS:
        amount = _usage_number(tokens.get(source_key))
        if amount is not None:
            usage[metric] = amount
    reasoning = _usage_number(_as_dict(tokens.get("completionDetails")).get("reasoning"))
    if reasoning is not None:
        usage["reasoning_tokens"] = reasoning
    latency = _usage_number(row.get("latencyMs"))
    if latency is not None:
        usage["duration_seconds"] = latency / 1000
    return usage


def row_sample(row: dict[str, Any]) -> SampleMeta:
    """Per-attempt facts of one row: usage, the output digest and text, the stop reason."""
    response = _as_dict(row.get("response"))
    meta = SampleMeta(usage=row_usage(row))
    output = response.get("output")
    if isinstance(output, str):
        meta.output_sha256 = sha256_text(output)
        meta.output_text = output[:OUTPUT_TEXT_CHARS]
    for key in ("finishReason", "finish_reason"):
        reason = response.get(key)
        if isinstance(reason, str) and reason:
            meta.stop_reason = reason
            break
    meta.truncated = meta.stop_reason in TRUNCATING_STOP_REASONS
    return meta


# --- headline and graders ----------------------------------------------------------------


def pass_rate_headline(stats: object) -> Headline | None:
    """promptfoo's own pass rate: successes / (successes + failures + errors)."""
    if not isinstance(stats, dict):
        return None
    counts = [_finite(stats.get(key)) or 0.0 for key in ("successes", "failures", "errors")]
    total = sum(counts)
    value = counts[0] / total if total > 0 else None
    return Headline(name=HEADLINE_NAME, value=value)


def _grader_name(provider: object) -> str | None:
    if isinstance(provider, str):
        return provider or None
    if isinstance(provider, dict):
        for key in ("id", "label"):
            value = provider.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def promptfoo_graders(rows: list[dict[str, Any]]) -> Graders:
    """Which providers were tested, which graded, and whether any provider graded itself."""
    subjects: set[str] = set()
    subject_aliases: set[str] = set()
    graders: set[str] = set()
    model_graded: set[str] = set()
    for row in rows:
        provider = row.get("provider")
        subjects.add(provider_name(provider))
        subject_aliases.add(provider_name(provider))
        if isinstance(provider, dict):
            subject_aliases.update(
                value
                for value in (provider.get("id"), provider.get("label"))
                if isinstance(value, str) and value
            )
        options = _as_dict(_as_dict(row.get("testCase")).get("options"))
        grader = _grader_name(options.get("provider"))
        if grader is not None:
            graders.add(grader)
        if _is_provider_error(row):
            continue
        components = _components(row)
        names = unique_names([component_check_name(component) for component in components])
        for name, component in zip(names, components, strict=True):
            assertion = _as_dict(_as_dict(component).get("assertion"))
            grader = _grader_name(assertion.get("provider"))
            if grader is not None:
                graders.add(grader)
            if assertion.get("type") in MODEL_GRADED_TYPES:
                model_graded.add(name)
    return Graders(
        subject_models=sorted(subjects),
        grader_models=sorted(graders),
        self_graded=sorted(graders & subject_aliases),
        model_graded_checks=sorted(model_graded),
    )


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
