"""What EvalArc keeps of one promptfoo result row, read in one pass over the row.

:class:`RowReader` turns a parsed row into a compact :class:`RowEntry` (its matrix key, its
checks as attempts, its sample facts and case material) without building intermediate objects.
Rows of one file repeat the same assertions, verdicts and names: the reader hands out one
shared string or object for each repeat (bounded caches), so a 92,000-row file keeps one copy.
Pure: no file access.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from evalarc.canonical import is_finite_number
from evalarc.formats.model import (
    Attempt,
    Graders,
    Material,
    MatrixKey,
    SampleMeta,
    cut_evidence,
)

SUCCESS_CHECK = "(test)"
"""The check that carries the row's own verdict (``success``), present in every row: promptfoo
decides a test by more than its assertions (a test-level ``threshold`` over their scores, an
``assertScoringFunction``, assert-set thresholds, guardrails), so a row that fails while every
assertion passes still has a failing check, and a test that lost its pass blocks however its
assertions are named. Parenthesised so that no assertion's name (``type: value``) can be it."""

ERROR_REASON = 2
"""promptfoo's ``ResultFailureReason.ERROR`` (0 none, 1 an assertion failed): the provider or the
grading failed, and promptfoo counts the row under ``stats.errors``."""
FAILURE_REASONS = frozenset({0, 1, ERROR_REASON})

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

SHARED_LIMIT = 16_384
"""Entries each cache of repeats may hold: rows that repeat nothing cannot grow them further."""

_EMPTY: dict[str, Any] = {}
_NO_MATERIAL: tuple[Material, ...] = ()
_VARS_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
"""``json.dumps(vars, sort_keys=True, ensure_ascii=False)`` without a new encoder per call."""
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*').fullmatch
"""A string JSON writes as it is between quotes (``ensure_ascii=False`` escapes only these)."""
_EXACT_INT = 1 << 53
"""Non-negative ints below this are finite floats too: no overflow check is needed."""
_MAX_FLOAT = 1.7976931348623157e308


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else _EMPTY


# --- labels ------------------------------------------------------------------------------


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


def short_value(value: str | int | float) -> str:
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    if len(text) > CHECK_VALUE_CHARS:
        return text[:CHECK_VALUE_CHARS] + "…"
    return text


def prompt_label(row: dict[str, Any]) -> str:
    """How a row names its prompt: its label (promptfoo defaults it to the raw text), else its
    id, else its index. The index is never preferred: it shifts when another prompt or provider
    is added to the matrix."""
    prompt = _as_dict(row.get("prompt"))
    for key in ("label", "id"):
        value = prompt.get(key)
        if isinstance(value, str) and value:
            return short_value(value)
    index = row.get("promptIdx")
    if isinstance(index, int) and not isinstance(index, bool):
        return str(index)
    return _VARS_ENCODER.encode(index)  # json.dumps(index, sort_keys=True, ensure_ascii=False)


def row_vars(row: dict[str, Any]) -> dict[str, Any]:
    test_case = _as_dict(row.get("testCase"))
    for candidate in (test_case.get("vars"), row.get("vars")):
        if isinstance(candidate, dict):
            return candidate
    return _EMPTY


def vars_json(variables: dict[str, Any]) -> str:
    """``json.dumps(variables, sort_keys=True, ensure_ascii=False)``; string values that need no
    escape are joined directly (the encoder's own text, at a fraction of its cost)."""
    parts: list[str] = []
    for key in sorted(variables):
        value = variables[key]
        if type(value) is not str or not _PLAIN(key) or not _PLAIN(value):
            return _VARS_ENCODER.encode(variables)
        parts.append(f'"{key}": "{value}"')
    return "{" + ", ".join(parts) + "}"


def base_label(row: dict[str, Any], position: int, variables: dict[str, Any], encoded: str) -> str:
    """The test's name: its description, else its vars (``encoded``), else its index."""
    description = _as_dict(row.get("testCase")).get("description")
    if isinstance(description, str) and description:
        return description
    if variables:
        return encoded
    test_index = row.get("testIdx")
    if isinstance(test_index, int) and not isinstance(test_index, bool):
        return f"test {test_index}"
    return f"test {position}"


def row_key(row: dict[str, Any], position: int) -> MatrixKey:
    """The matrix key of the row at ``position`` of ``results.results[]``."""
    variables = row_vars(row)
    encoded = vars_json(variables)
    return MatrixKey(
        test=base_label(row, position, variables, encoded),
        vars=encoded,
        provider=provider_name(row.get("provider")),
        prompt=prompt_label(row),
    )


# --- checks ------------------------------------------------------------------------------


def finite(value: object) -> float | None:
    """The number itself when it is a finite int/float (never a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return value if math.isfinite(value) else None
    except OverflowError:  # an integer beyond any float (JSON allows 1e400 written as digits)
        return None


def _value_text(value: object) -> str | None:
    """An assertion value as its check name shows it (whole): a string or number as written,
    anything else (the list of ``contains-any``, an object) as compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if finite(value) is not None:
        return str(value)
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def assertion_name(assertion: dict[str, Any]) -> str:
    """Name an assertion's check from its content alone, never from its position or its
    siblings: ``type: value`` (``type`` without a value), prefixed with ``metric · `` when it
    names a metric. A value cut to CHECK_VALUE_CHARS gets `` [<8 hex>]``, the start of the
    sha256 of the whole value, so two long values that begin alike stay apart. Prepending a
    ``defaultTest`` assertion (which shares a metric, say) or reordering assertions renames
    nothing; two assertions of one row that name alike are told apart by
    :func:`unique_names` (an ordinal among those alike only)."""
    kind = assertion.get("type")
    name = kind if isinstance(kind, str) and kind else "assertion"
    text = _value_text(assertion.get("value"))
    if text is not None:
        shown = short_value(text)
        name = f"{name}: {shown}"
        if len(text) > CHECK_VALUE_CHARS:
            name = f"{name} [{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}]"
    metric = assertion.get("metric")
    if isinstance(metric, str) and metric:
        name = f"{metric} · {name}"
    return name


def component_check_name(component: object) -> str:
    """Name a component result by its assertion (see :func:`assertion_name`)."""
    return assertion_name(_as_dict(_as_dict(component).get("assertion")))


def unique_names(names: list[str]) -> list[str]:
    """Suffix repeated names with `` #2``, `` #3``, ... so every check in a row is distinct.

    Names are content-derived (:func:`assertion_name`), so the ordinal counts only assertions
    of identical content: two identical assertions of one row are two checks, never pooled as
    attempts of one; the first written is unsuffixed."""
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


def _declared_assertions(declared: list[Any]) -> list[dict[str, Any]]:
    """``testCase.assert`` in the order promptfoo writes component results: an ``assert-set``
    is followed by its members (promptfoo flattens them, each under its own assertion)."""
    flat: list[dict[str, Any]] = []
    for item in declared:
        assertion = _as_dict(item)
        flat.append(assertion)
        members = assertion.get("assert")
        if assertion.get("type") == "assert-set" and isinstance(members, list):
            flat.extend(_as_dict(member) for member in members)
    return flat


def declared_checks(row: dict[str, Any]) -> list[str]:
    """The check names the test of ``row`` declares (``testCase.assert``), named as their
    component results would be; empty when it declares none."""
    declared = _as_dict(row.get("testCase")).get("assert")
    if not isinstance(declared, list):
        return []
    return unique_names([assertion_name(item) for item in _declared_assertions(declared)])


def component_names(components: list[Any]) -> list[str]:
    """The check name of each of a row's ``componentResults``, in order (the evidence view
    titles its sections with them, so they match the diff's rows)."""
    return unique_names([component_check_name(component) for component in components])


def row_outcome(row: dict[str, Any]) -> bool | None:
    """The row's own verdict as promptfoo counts it in ``stats``: True a success, None an
    error (``failureReason`` 2), False a failure. The row must already be reconciled."""
    if row.get("success") is True:
        return True
    return None if row.get("failureReason") == ERROR_REASON else False


class RowShapeError(ValueError):
    """A row the reader cannot take at its word; the text follows ``results.results[i]``."""


def reconcile_row(row: dict[str, Any], components: bool = True) -> None:
    """Check a row's own verdicts against each other as promptfoo writes them: ``success`` a
    bool, ``failureReason`` (when present) one of 0, 1, 2 and never 2 on a success,
    ``gradingResult.pass`` a bool equal to ``success`` unless the row errored, and every
    component result an object with a bool ``pass``. Raises RowShapeError naming the field and
    its value: an unknown shape is refused, never read as "unassessed". ``components=False``
    leaves the component results to the caller (:meth:`RowReader.read` checks each as it reads
    it, in its one pass)."""
    success = row.get("success")
    if not isinstance(success, bool):
        raise RowShapeError(f".success is {_shown(success)}, not true or false")
    reason = row.get("failureReason", 0)
    if isinstance(reason, bool) or reason not in FAILURE_REASONS:
        raise RowShapeError(f".failureReason is {_shown(reason)}, not 0, 1 or 2")
    if success and reason == ERROR_REASON:
        raise RowShapeError(".success is true but its failureReason is 2 (an error)")
    grading = row.get("gradingResult")
    if grading is None:
        return
    if not isinstance(grading, dict):
        raise RowShapeError(f".gradingResult is {_shown(grading)}, not an object")
    if "pass" in grading:
        verdict = grading["pass"]
        if not isinstance(verdict, bool):
            raise RowShapeError(f".gradingResult.pass is {_shown(verdict)}, not true or false")
        if verdict != success and reason != ERROR_REASON:
            raise RowShapeError(
                f": its own verdicts disagree: success is {_shown(success)}, "
                f"gradingResult.pass is {_shown(verdict)}"
            )
    listed = grading.get("componentResults")
    if listed is None:
        return
    if not isinstance(listed, list):
        raise RowShapeError(f".gradingResult.componentResults is {_shown(listed)}, not a list")
    if components:
        for number, component in enumerate(listed):
            component_verdict(component, number)


def component_verdict(component: object, number: int) -> bool:
    """The ``pass`` of the component result at ``number``; RowShapeError naming it when the
    component is not an object or its ``pass`` not a bool."""
    if type(component) is not dict:
        raise RowShapeError(
            f".gradingResult.componentResults[{number}] is {_shown(component)}, not an object"
        )
    verdict = component.get("pass")
    if type(verdict) is not bool:
        raise RowShapeError(
            f".gradingResult.componentResults[{number}].pass is {_shown(verdict)}, "
            "not true or false"
        )
    return verdict


def _shown(value: object) -> str:
    """A value as JSON, cut short, for a one-line message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = text.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= 60 else text[:60] + "…"


def is_provider_error(row: dict[str, Any]) -> bool:
    reason = row.get("failureReason")
    if is_finite_number(reason) and reason == 2:
        return True
    error = row.get("error")
    return error is not None and error != "" and row.get("gradingResult") is None


def grader_name(provider: object) -> str | None:
    if isinstance(provider, str):
        return provider or None
    if isinstance(provider, dict):
        for key in ("id", "label"):
            value = provider.get(key)
            if isinstance(value, str) and value:
                return value
    return None


# --- usage -------------------------------------------------------------------------------


def usage_number(value: object) -> float | None:
    """A finite non-negative number (never a bool), else None."""
    kind = type(value)
    if kind is int:
        if 0 <= value < _EXACT_INT:  # type: ignore[operator]
            return value  # type: ignore[return-value]
    elif kind is float:
        return value if 0 <= value <= _MAX_FLOAT else None  # type: ignore[operator,return-value]
    elif value is None:
        return None
    number = finite(value)
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
    cost = usage_number(row.get("cost"))
    if cost is not None:
        usage["cost_usd"] = cost
    tokens = _as_dict(row.get("tokenUsage"))
    if tokens:
        for source_key, metric in _TOKEN_FIELDS:
            amount = usage_number(tokens.get(source_key))
            if amount is not None:
                usage[metric] = amount
        details = tokens.get("completionDetails")
        if isinstance(details, dict):
            reasoning = usage_number(details.get("reasoning"))
            if reasoning is not None:
                usage["reasoning_tokens"] = reasoning
    latency = usage_number(row.get("latencyMs"))
    if latency is not None:
        usage["duration_seconds"] = latency / 1000
    return usage


def row_sample(row: dict[str, Any]) -> SampleMeta:
    """Per-attempt facts of one row: usage, the output digest and text, the stop reason."""
    response = _as_dict(row.get("response"))
    meta = SampleMeta(usage=row_usage(row))
    output = response.get("output")
    if isinstance(output, str):
        meta.output_sha256 = hashlib.sha256(output.encode("utf-8")).hexdigest()
        meta.output_text = output[:OUTPUT_TEXT_CHARS]
    for key in ("finishReason", "finish_reason"):
        reason = response.get(key)
        if isinstance(reason, str) and reason:
            meta.stop_reason = reason
            break
    meta.truncated = meta.stop_reason in TRUNCATING_STOP_REASONS
    return meta


# --- one row -----------------------------------------------------------------------------


@dataclass(slots=True)
class GraderTally:
    """Which providers were tested, which graded, and whether any provider graded itself,
    gathered one row at a time."""

    subjects: set[str] = field(default_factory=set)
    subject_aliases: set[str] = field(default_factory=set)
    graders: set[str] = field(default_factory=set)
    model_graded: set[str] = field(default_factory=set)

    def add_subject(self, name: str, provider: object) -> None:
        self.subjects.add(name)
        self.subject_aliases.add(name)
        if isinstance(provider, dict):
            for field_name in ("id", "label"):
                value = provider.get(field_name)
                if isinstance(value, str) and value:
                    self.subject_aliases.add(value)

    def result(self) -> Graders:
        return Graders(
            subject_models=sorted(self.subjects),
            grader_models=sorted(self.graders),
            self_graded=sorted(self.graders & self.subject_aliases),
            model_graded_checks=sorted(self.model_graded),
        )


@dataclass(slots=True)
class RowEntry:
    """What EvalArc keeps of one result row once it is parsed."""

    key: MatrixKey
    own: Attempt
    """The row's own verdict (SUCCESS_CHECK): its ``success``, None when it errored."""
    checks: list[tuple[str, Attempt]] | None
    """Each assertion's check name and attempt; None for a provider error (its checks are the
    ones the test declares, named by the file's other rows)."""
    error: str | None
    declared: tuple[str, ...]
    meta: SampleMeta
    material: tuple[Material, ...]


@dataclass(frozen=True, slots=True)
class _Assertion:
    """The facts of one assertion that rows repeat: its check name, whether a model grades it,
    and whether its value is case material (``expected``)."""

    name: str
    model_graded: bool
    material: bool


class RowReader:
    """Reads rows into :class:`RowEntry` values, sharing what rows repeat (see the module
    docstring)."""

    def __init__(self, graders: GraderTally) -> None:
        self.graders = graders
        self.assessed = False
        """Whether any row so far carried a pass or fail verdict."""
        self.outcomes: dict[bool | None, int] = {True: 0, False: 0, None: 0}
        """Rows by their own verdict (success, failure, error): what ``stats`` must say."""
        self.provider_errors = False
        self._own: dict[tuple[bool | None, str | None], Attempt] = {}
        self._strings: dict[str, str] = {}
        self._assertions: dict[tuple[object, ...], _Assertion] = {}
        self._expected: dict[str, Material] = {}
        self._prompts: dict[str, str] = {}

    def share(self, text: str) -> str:
        """One string object for every equal string the reader keeps."""
        strings = self._strings
        found = strings.get(text)
        if found is not None:
            return found
        if len(strings) < SHARED_LIMIT * 16:
            strings[text] = text
        return text

    def _assertion(self, assertion: dict[str, Any]) -> _Assertion:
        metric = assertion.get("metric")
        kind = assertion.get("type")
        value = assertion.get("value")
        # Only strings (and absent fields) key the cache: 1, 1.0, -0.0 and True name apart.
        cacheable = (
            (metric is None or type(metric) is str)
            and (kind is None or type(kind) is str)
            and (value is None or type(value) is str)
        )
        if cacheable:
            found = self._assertions.get((metric, kind, value))
            if found is not None:
                return found
        kind_text = kind if isinstance(kind, str) else ""
        facts = _Assertion(
            name=self.share(assertion_name(assertion)),
            model_graded=kind_text in MODEL_GRADED_TYPES,
            material=not kind_text.startswith("not-") and kind_text not in CODE_ASSERTION_TYPES,
        )
        if cacheable and len(self._assertions) < SHARED_LIMIT:
            self._assertions[(metric, kind, value)] = facts
        return facts

    def _prompt(self, row: dict[str, Any]) -> str:
        """:func:`prompt_label`, worked out once per distinct prompt label."""
        prompt = row.get("prompt")
        label = prompt.get("label") if type(prompt) is dict else None
        if type(label) is not str or not label:
            return self.share(prompt_label(row))
        shown = self._prompts.get(label)
        if shown is None:
            shown = self.share(short_value(label))
            if len(self._prompts) < SHARED_LIMIT:
                self._prompts[label] = shown
        return shown

    def _material(self, row: dict[str, Any], test_case: dict[str, Any]) -> tuple[Material, ...]:
        """Case text a harness must not contain: var values as input, assertion values as
        expected answers (negative and code assertions excluded), each text once per role."""
        inputs: dict[str, None] = {}  # insertion-ordered sets of texts
        expected: dict[str, None] = {}
        variables = test_case.get("vars")
        if not isinstance(variables, dict):
            variables = row.get("vars")
        if isinstance(variables, dict):
            for value in variables.values():
                if isinstance(value, str):
                    text = value[:MATERIAL_TEXT_CHARS]
                    if text and not text.isspace():
                        inputs[text] = None
        declared = test_case.get("assert")
        if isinstance(declared, list):
            assertions = declared
        else:
            components = _as_dict(row.get("gradingResult")).get("componentResults")
            listed = components if isinstance(components, list) else []
            assertions = [_as_dict(component).get("assertion") for component in listed]
        for assertion in assertions:
            if not isinstance(assertion, dict) or not self._assertion(assertion).material:
                continue
            value = assertion.get("value")
            for candidate in value if isinstance(value, list) else (value,):
                if isinstance(candidate, str):
                    text = candidate[:MATERIAL_TEXT_CHARS]
                    if text and not text.isspace():
                        expected[text] = None
        if not inputs and not expected:
            return _NO_MATERIAL
        return (
            *[Material("input", text) for text in inputs],
            *[self._expected_material(text) for text in expected],
        )

    def _expected_material(self, text: str) -> Material:
        material = self._expected.get(text)
        if material is None:
            material = Material("expected", text)
            if len(self._expected) < SHARED_LIMIT:
                self._expected[text] = material
        return material

    def read(self, row: dict[str, Any], position: int) -> RowEntry:
        """The entry of one row (already known to be an object of a known shape).

        Raises RowShapeError when the row's own verdicts are of an unknown shape or disagree
        (:func:`reconcile_row`)."""
        error_row = is_provider_error(row)
        reconcile_row(row, components=error_row)
        get = row.get
        share = self.share
        graders = self.graders
        test_case = _as_dict(get("testCase"))
        provider = get("provider")
        subject = share(provider_name(provider))
        graders.add_subject(subject, provider)
        options = test_case.get("options")
        if isinstance(options, dict):
            grader = grader_name(options.get("provider"))
            if grader is not None:
                graders.graders.add(grader)
        variables = test_case.get("vars")
        if not isinstance(variables, dict):
            variables = get("vars")
            if not isinstance(variables, dict):
                variables = _EMPTY
        encoded = vars_json(variables)
        key = MatrixKey(
            test=share(base_label(row, position, variables, encoded)),
            vars=share(encoded),
            provider=subject,
            prompt=self._prompt(row),
        )
        meta = row_sample(row)
        material = self._material(row, test_case)
        outcome = row_outcome(row)
        self.outcomes[outcome] += 1
        self.assessed = self.assessed or outcome is not None
        grading = _as_dict(get("gradingResult"))
        sha = meta.output_sha256
        verdicts = meta.verdicts
        # The row's own verdict: promptfoo's reason for a graded row, else the row's error.
        own_evidence = cut_evidence(grading.get("reason")) or cut_evidence(get("error"))
        own = self._own.get((outcome, own_evidence)) if sha is None else None
        if own is None:
            own = Attempt(passed=outcome, evidence=own_evidence, output_sha256=sha)
            if sha is None and len(self._own) < SHARED_LIMIT:
                self._own[(outcome, own_evidence)] = own
        verdicts[SUCCESS_CHECK] = outcome
        if error_row:
            self.provider_errors = True
            return RowEntry(
                key=key,
                own=own,
                checks=None,
                error=cut_evidence(get("error")),
                declared=tuple(share(name) for name in declared_checks(row)),
                meta=meta,
                material=material,
            )
        components = grading.get("componentResults")
        checks: list[tuple[str, Attempt]] = []
        if isinstance(components, list) and components:
            verdicts_in_order = [
                component_verdict(component, number) for number, component in enumerate(components)
            ]
            facts = [
                self._assertion(_as_dict(component.get("assertion"))) for component in components
            ]
            names = [fact.name for fact in facts]
            made: dict[tuple[object, ...], Attempt] = {}
            if len(set(names)) < len(names):
                names = [share(name) for name in unique_names(names)]
            for name, fact, fields, passed in zip(
                names, facts, components, verdicts_in_order, strict=True
            ):
                assertion = _as_dict(fields.get("assertion"))
                if "provider" in assertion:
                    grader = grader_name(assertion["provider"])
                    if grader is not None:
                        graders.graders.add(grader)
                if fact.model_graded:
                    graders.model_graded.add(name)
                evidence = cut_evidence(fields.get("reason"))
                score = fields.get("score")
                # Checks of one row with the same verdict, score and reason share one attempt
                # (scores of other types than int are never keyed: 1, 1.0 and True differ).
                same = (passed, score, evidence) if score is None or type(score) is int else None
                shared = made.get(same) if same is not None else None
                if shared is None:
                    shared = Attempt(
                        passed=passed, value=score, evidence=evidence, output_sha256=sha
                    )
                    if same is not None:
                        made[same] = shared
                checks.append((name, shared))
                verdicts[name] = passed
        return RowEntry(
            key=key,
            own=own,
            checks=checks,
            error=None,
            declared=(),
            meta=meta,
            material=material,
        )
