"""Read promptfoo ``--output`` JSON into the shared model.

One row of ``results.results`` is one test execution, so it becomes one attempt of one case.
Repeats (``--repeat``) share description and vars and therefore collapse into attempts of the
same case; the row order in the file is kept as the attempt order, ``testIdx`` is never used to
pair rows.
"""

from __future__ import annotations

import gc
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalarc.canonical import (
    _parse_float,
    _reject_constant,
    _reject_duplicates,
    is_finite_number,
    sha256_text,
)
from evalarc.errors import InputError
from evalarc.formats.jsonstream import CapExceeded, TextWindow, array_items, object_members
from evalarc.formats.model import (
    Attempt,
    Graders,
    Headline,
    Material,
    MatrixKey,
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


MAX_ROWS = 200_000
"""A file with more result rows is refused: every row is kept as an attempt (about 1 KB each), so
the cap bounds memory and work. A real promptfoo run of 92,000 rows is 150 MB of JSON."""

_ROW_MARKERS = ("success", "gradingResult", "error", "failureReason")
"""A result row carries at least one of these; a row with none is of an unknown shape."""

_STRICT_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=_parse_float,
    object_pairs_hook=_reject_duplicates,
)
"""Strict JSON inside every value: NaN, overflowing floats and duplicate keys are refused."""


def read_promptfoo(path: Path, source: Source, threshold: float) -> Run:
    """Read the promptfoo output file at ``path`` into a Run, one result row at a time.

    Raises InputError naming the file (as given) when it is not strict JSON (NaN, duplicate
    keys, truncation), lacks ``results.results[]``, passes a cap, holds a row of an unknown
    shape, or carries no verdict at all.
    """
    name = str(path)
    builder = _RunBuilder(name, threshold)
    # Hundreds of thousands of small acyclic objects: the cyclic collector would rescan them
    # again and again while they are built (a third of the reading time of a 92,000-row file).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return builder.finish(_read_rows(path, name, builder.add_row), source)
    finally:
        if collecting:
            gc.enable()


def _read_rows(path: Path, name: str, on_row: Callable[[int, object], None]) -> _Header:
    try:
        with path.open("rb") as handle:
            return _walk_document(TextWindow(handle, _STRICT_DECODER), name, on_row)
    except CapExceeded as error:
        raise InputError(f"{name}: {error}") from None
    except RecursionError:
        raise InputError(f"{name} is nested too deeply to read") from None
    except ValueError as error:  # includes UnicodeDecodeError and JsonSyntaxError
        detail = str(error)[:_ERROR_DETAIL_CHARS] or type(error).__name__
        raise InputError(f"{name} is not JSON: {detail}") from None
    except OSError as error:
        raise InputError(f"{name} cannot be read: {error.strerror or error}") from None


def each_row(path: Path, on_row: Callable[[int, dict[str, Any]], None]) -> None:
    """Hand every row of ``results.results[]`` to ``on_row`` with its position, one at a time
    as it is parsed, under the reader's rules and caps (strict JSON, at most MAX_ROWS rows, each
    an object): for readers of the same file that keep more of a row than the model does.
    Raises InputError naming the file for what :func:`read_promptfoo` refuses in the text."""
    name = str(path)

    def take(index: int, row: object) -> None:
        if index >= MAX_ROWS:
            raise InputError(f"{name} has more than {MAX_ROWS:,} result rows (the cap on one file)")
        if not isinstance(row, dict):
            raise InputError(f"{name}: results.results[{index}] is not an object")
        on_row(index, row)

    _read_rows(path, name, take)


def build_promptfoo_run(document: object, source: Source, threshold: float) -> Run:
    """Turn an already parsed promptfoo document into a Run (pure; no file access)."""
    name = source.name
    results = _as_dict(document).get("results")
    rows = results.get("results") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise InputError(f"{name} is not a promptfoo output: expected results.results[]")
    builder = _RunBuilder(name, threshold)
    for index, row in enumerate(rows):
        builder.add_row(index, row)
    results = _as_dict(results)
    header = _Header(
        stats=results.get("stats"),
        version=results.get("version"),
        description=_as_dict(_as_dict(document).get("config")).get("description"),
    )
    return builder.finish(header, source)


# --- the document walk -------------------------------------------------------------------


@dataclass(slots=True)
class _Header:
    """The few fields outside the rows that EvalArc uses."""

    stats: object = None
    version: object = None
    description: object = None


def _walk_document(window: TextWindow, name: str, on_row: Callable[[int, object], None]) -> _Header:
    """Walk the top-level object, handing each ``results.results[]`` row to ``on_row`` as soon
    as it is parsed; everything else is skipped except the header fields."""
    header = _Header()
    saw_rows = False
    if window.kind() is not dict:
        window.skip()
        window.finish()
        raise InputError(f"{name} is not a promptfoo output: expected results.results[]")
    for key in object_members(window):
        if key == "results" and window.kind() is dict:
            for inner in object_members(window):
                if inner == "results" and window.kind() is list:
                    saw_rows = True
                    for index in array_items(window):
                        on_row(index, window.value())
                elif inner in ("stats", "version"):
                    setattr(header, inner, window.value())
                else:
                    window.skip(2)
        elif key == "config" and window.kind() is dict:
            for inner in object_members(window):
                if inner == "description":
                    header.description = window.value()
                else:
                    window.skip(2)
        else:
            window.skip(1)
    window.finish()
    if not saw_rows:
        raise InputError(f"{name} is not a promptfoo output: expected results.results[]")
    return header


# --- rows and the run --------------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    """What EvalArc keeps of one result row once it is parsed."""

    key: MatrixKey
    checks: list[RowCheck] | None
    """None for a provider error (its checks are the ones the test declares)."""
    error: str | None
    declared: list[str]
    meta: SampleMeta
    material: list[Material]


class _RunBuilder:
    """Accumulates rows one at a time (pure of I/O); :meth:`finish` names the cases."""

    def __init__(self, name: str, threshold: float) -> None:
        self.name = name
        self.threshold = threshold
        self.rows: list[_Row] = []
        self.graders = _GraderTally()
        self._names: dict[str, str] = {}

    def _intern(self, text: str) -> str:
        return self._names.setdefault(text, text)

    def add_row(self, index: int, row: object) -> None:
        if index >= MAX_ROWS:
            raise InputError(
                f"{self.name} has more than {MAX_ROWS:,} result rows (the cap on one file)"
            )
        if not isinstance(row, dict):
            raise InputError(f"{self.name}: results.results[{index}] is not an object")
        if not any(marker in row for marker in _ROW_MARKERS):
            raise InputError(
                f"{self.name}: results.results[{index}] is a row of an unknown shape (none of "
                f"{', '.join(_ROW_MARKERS)}); rows are never skipped"
            )
        self.graders.add(row)
        plain = row_key(row, index)
        key = MatrixKey(
            test=self._intern(plain.test),
            vars=self._intern(plain.vars),
            provider=self._intern(plain.provider),
            prompt=self._intern(plain.prompt),
        )
        error = _is_provider_error(row)
        checks = None if error else row_checks(row)
        self.rows.append(
            _Row(
                key=key,
                checks=checks,
                error=cut_evidence(row.get("error")) if error else None,
                declared=[self._intern(name) for name in declared_checks(row)] if error else [],
                meta=row_sample(row),
                material=row_material(row),
            )
        )

    def finish(self, header: _Header, source: Source) -> Run:
        ids = matrix_ids(row.key for row in self.rows)
        known: dict[str, dict[str, None]] = {}
        for row in self.rows:
            if row.checks is not None:
                names = known.setdefault(ids[row.key], {})
                for check in row.checks:
                    names[self._intern(check.name)] = None
        cases: dict[str, dict[str, list[Attempt]]] = {}
        samples: dict[str, list[SampleMeta]] = {}
        material: dict[str, dict[Material, None]] = {}  # insertion-ordered sets
        assessed = False
        for row in self.rows:
            label = ids[row.key]
            meta = row.meta
            checks = cases.setdefault(label, {})
            if row.checks is None:
                # A provider error: unassessed on every check the test declares (as the other
                # attempts of this case name them), with the error text as evidence.
                declared = list(known.get(label) or row.declared or [SUCCESS_CHECK])
                attempt = Attempt(passed=None, evidence=row.error, output_sha256=None)
                for name in declared:
                    checks.setdefault(name, []).append(attempt)
                    meta.verdicts[name] = None
            else:
                for check in row.checks:
                    name = self._intern(check.name)
                    checks.setdefault(name, []).append(
                        Attempt(
                            passed=check.passed,
                            value=check.value,
                            evidence=check.evidence,
                            output_sha256=meta.output_sha256,
                        )
                    )
                    meta.verdicts[name] = check.passed
                    assessed = assessed or check.passed is not None
            samples.setdefault(label, []).append(meta)
            known_material = material.setdefault(label, {})
            for item in row.material:
                known_material[item] = None
        if not assessed:
            raise InputError(
                f"{self.name}: nothing in it could be assessed (no result row carries a pass or "
                "fail verdict)"
            )
        description = header.description
        identity: dict[str, Any] = {
            "description": description if isinstance(description, str) else None,
            "providers": sorted({row.key.provider for row in self.rows}),
            "version": _plain_scalar(header.version),
        }
        return Run(
            format="promptfoo",
            source=source,
            threshold=self.threshold,
            cases=cases,
            identity=identity,
            headline=pass_rate_headline(header.stats),
            incomplete=False,
            material={label: list(items) for label, items in material.items() if items},
            samples=samples,
            graders=self.graders.result(),
            matrix={ids[row.key]: row.key for row in self.rows},
        )


def _plain_scalar(value: object) -> object:
    """The version as written when it is a string or a finite number, else None."""
    if isinstance(value, str):
        return value
    return _finite(value)


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


def prompt_label(row: dict[str, Any]) -> str:
    """How a row names its prompt: its label (promptfoo defaults it to the raw text), else its
    id, else its index. The index is never preferred: it shifts when another prompt or provider
    is added to the matrix."""
    prompt = _as_dict(row.get("prompt"))
    for key in ("label", "id"):
        value = prompt.get(key)
        if isinstance(value, str) and value:
            return _short_value(value)
    index = row.get("promptIdx")
    if isinstance(index, int) and not isinstance(index, bool):
        return str(index)
    return json.dumps(index, sort_keys=True, ensure_ascii=False)


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


def matrix_ids(keys: Iterable[MatrixKey]) -> dict[MatrixKey, str]:
    """One case id per (test, vars, provider, prompt), so that repeats of one test share it.

    The description (else the vars as JSON, else ``test <testIdx>``) names the test; the vars
    are appended when one description covers several distinct vars; `` · provider`` and
    `` · prompt <label>`` are appended when the keys hold more than one of them. ``evalarc diff``
    calls this over the keys of BOTH files, so a test keeps its id whatever else either matrix
    holds; one file alone keeps the ids of a single-provider, single-prompt run unsuffixed.
    """
    unique = list(dict.fromkeys(keys))
    vars_per_test: dict[str, set[str]] = defaultdict(set)
    for key in unique:
        vars_per_test[key.test].add(key.vars)
    several_providers = len({key.provider for key in unique}) > 1
    several_prompts = len({key.prompt for key in unique}) > 1
    ids: dict[MatrixKey, str] = {}
    used: set[str] = set()
    for key in unique:
        label = key.test
        if len(vars_per_test[key.test]) > 1 and key.test != key.vars:
            label = f"{label} {key.vars}"
        if several_providers:
            label = f"{label} · {key.provider}"
        if several_prompts:
            label = f"{label} · prompt {key.prompt}"
        candidate, ordinal = label, 1
        while candidate in used:  # two keys that print alike are never pooled
            ordinal += 1
            candidate = f"{label} #{ordinal}"
        used.add(candidate)
        ids[key] = candidate
    return ids


def row_key(row: dict[str, Any], position: int) -> MatrixKey:
    """The matrix key of the row at ``position`` of ``results.results[]``."""
    variables = _row_vars(row)
    return MatrixKey(
        test=_base_label(row, position, variables),
        vars=_vars_json(variables),
        provider=provider_name(row.get("provider")),
        prompt=prompt_label(row),
    )


def case_labels(rows: list[dict[str, Any]]) -> list[str]:
    """One case label per row (see :func:`matrix_ids`)."""
    keys = [row_key(row, index) for index, row in enumerate(rows)]
    ids = matrix_ids(keys)
    return [ids[key] for key in keys]


def compared_across(baseline: Run, current: Run) -> tuple[str, ...]:
    """The matrix fields ("provider", "prompt") that each promptfoo run holds exactly one value
    of: the one of each side is compared with the other (a changed prompt, an upgraded model),
    so that field does not take part in pairing."""
    fields: list[str] = []
    for field_name in ("provider", "prompt"):
        base = {getattr(key, field_name) for key in baseline.matrix.values()}
        cur = {getattr(key, field_name) for key in current.matrix.values()}
        if len(base) == 1 and len(cur) == 1:
            fields.append(field_name)
    return tuple(fields)


def align_matrix(baseline: Run, current: Run) -> tuple[Run, Run]:
    """Both promptfoo runs with case ids computed over the keys of both files (see
    :func:`matrix_ids`); other runs are returned as they are. Idempotent.

    A field of which each run holds exactly one value (:func:`compared_across`) is left out of
    the pairing key, so a prompt or model that changed between the runs pairs every test with
    itself; otherwise cases pair on the same test, provider and prompt."""
    if not baseline.matrix or not current.matrix:
        return baseline, current
    across = compared_across(baseline, current)

    def pairing(key: MatrixKey) -> MatrixKey:
        return replace(
            key,
            provider="" if "provider" in across else key.provider,
            prompt="" if "prompt" in across else key.prompt,
        )

    ids = matrix_ids(pairing(key) for key in [*baseline.matrix.values(), *current.matrix.values()])
    return _rekey(baseline, ids, pairing), _rekey(current, ids, pairing)


def _rekey(run: Run, ids: dict[MatrixKey, str], pairing: Callable[[MatrixKey], MatrixKey]) -> Run:
    renamed = {old: ids[pairing(key)] for old, key in run.matrix.items()}
    if all(old == new for old, new in renamed.items()):
        return run
    return replace(
        run,
        cases={renamed[old]: checks for old, checks in run.cases.items()},
        samples={renamed[old]: metas for old, metas in run.samples.items()},
        material={renamed[old]: items for old, items in run.material.items()},
        matrix={renamed[old]: key for old, key in run.matrix.items()},
    )


def matrix_sides(baseline: Run, current: Run) -> dict[str, Any] | None:
    """Which providers and prompts each promptfoo run holds, and which only one side has."""
    if not baseline.matrix or not current.matrix:
        return None
    result: dict[str, Any] = {}
    across = compared_across(baseline, current)
    for field_name in ("provider", "prompt"):
        base = sorted({getattr(key, field_name) for key in baseline.matrix.values()})
        cur = sorted({getattr(key, field_name) for key in current.matrix.values()})
        if field_name in across:
            # One on each side, compared with each other: nothing is only on one side.
            only_base: list[str] = []
            only_cur: list[str] = []
        else:
            only_base = sorted(set(base) - set(cur))
            only_cur = sorted(set(cur) - set(base))
        result[f"{field_name}s"] = {
            "baseline": base,
            "current": cur,
            "baseline_only": only_base,
            "current_only": only_cur,
            "compared_across": field_name in across,
        }
    return result


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
    """The checks one row that is not a provider error contributes: the row's success, or one
    per assertion component."""
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


def declared_checks(row: dict[str, Any]) -> list[str]:
    """The check names the test of ``row`` declares (``testCase.assert``), named as their
    component results would be; empty when it declares none."""
    declared = _as_dict(row.get("testCase")).get("assert")
    if not isinstance(declared, list):
        return []
    names = [component_check_name({"assertion": item}) for item in declared]
    return unique_names(names)


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


@dataclass(slots=True)
class _GraderTally:
    """Which providers were tested, which graded, and whether any provider graded itself,
    gathered one row at a time."""

    subjects: set[str] = field(default_factory=set)
    subject_aliases: set[str] = field(default_factory=set)
    graders: set[str] = field(default_factory=set)
    model_graded: set[str] = field(default_factory=set)

    def add(self, row: dict[str, Any]) -> None:
        provider = row.get("provider")
        self.subjects.add(provider_name(provider))
        self.subject_aliases.add(provider_name(provider))
        if isinstance(provider, dict):
            self.subject_aliases.update(
                value
                for value in (provider.get("id"), provider.get("label"))
                if isinstance(value, str) and value
            )
        options = _as_dict(_as_dict(row.get("testCase")).get("options"))
        grader = _grader_name(options.get("provider"))
        if grader is not None:
            self.graders.add(grader)
        if _is_provider_error(row):
            return
        components = _components(row)
        names = unique_names([component_check_name(component) for component in components])
        for name, component in zip(names, components, strict=True):
            assertion = _as_dict(_as_dict(component).get("assertion"))
            grader = _grader_name(assertion.get("provider"))
            if grader is not None:
                self.graders.add(grader)
            if assertion.get("type") in MODEL_GRADED_TYPES:
                self.model_graded.add(name)

    def result(self) -> Graders:
        return Graders(
            subject_models=sorted(self.subjects),
            grader_models=sorted(self.graders),
            self_graded=sorted(self.graders & self.subject_aliases),
            model_graded_checks=sorted(self.model_graded),
        )


def promptfoo_graders(rows: list[dict[str, Any]]) -> Graders:
    """Which providers were tested, which graded, and whether any provider graded itself."""
    tally = _GraderTally()
    for row in rows:
        tally.add(row)
    return tally.result()


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
