"""Read promptfoo ``--output`` JSON into the shared model.

One row of ``results.results`` is one test execution, so it becomes one attempt of one case.
Repeats (``--repeat``) share description and vars and therefore collapse into attempts of the
same case; the row order in the file is kept as the attempt order, ``testIdx`` is never used to
pair rows.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalarc.canonical import _parse_float, _reject_constant, _reject_duplicates
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
)
from evalarc.formats.promptfoo_rows import (
    CHECK_VALUE_CHARS,
    CODE_ASSERTION_TYPES,
    MATERIAL_TEXT_CHARS,
    MODEL_GRADED_TYPES,
    OUTPUT_TEXT_CHARS,
    SUCCESS_CHECK,
    TRUNCATING_STOP_REASONS,
    GraderTally,
    RowEntry,
    RowReader,
    RowShapeError,
    component_check_name,
    declared_checks,
    finite,
    prompt_label,
    provider_name,
    row_key,
    row_sample,
    row_usage,
    unique_names,
)

__all__ = [
    "CHECK_VALUE_CHARS",
    "CODE_ASSERTION_TYPES",
    "HEADLINE_NAME",
    "MATERIAL_TEXT_CHARS",
    "MAX_ROWS",
    "MODEL_GRADED_TYPES",
    "OUTPUT_TEXT_CHARS",
    "PROVIDER_ERROR_CHECK",
    "SUCCESS_CHECK",
    "TRUNCATING_STOP_REASONS",
    "align_matrix",
    "build_promptfoo_run",
    "case_labels",
    "compared_across",
    "component_check_name",
    "declared_checks",
    "each_row",
    "matrix_ids",
    "matrix_sides",
    "pass_rate_headline",
    "prompt_label",
    "promptfoo_graders",
    "provider_name",
    "read_promptfoo",
    "row_key",
    "row_sample",
    "row_usage",
    "unique_names",
]

HEADLINE_NAME = "promptfoo pass rate"
PROVIDER_ERROR_CHECK = "provider error"
_ERROR_DETAIL_CHARS = 200


MAX_ROWS = 200_000
"""A file with more result rows is refused: every row is kept as an attempt (about 1 KB each), so
the cap bounds memory and work. A real promptfoo run of 92,000 rows is 150 MB of JSON."""

_STATS_KEYS = ("successes", "failures", "errors")
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
    # (gc.freeze after the read saved under a second of a 92,000-row diff, and in a long-lived
    # process froze for good every cycle that was alive at that moment: not used.)
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


class _RunBuilder:
    """Accumulates rows one at a time (pure of I/O); :meth:`finish` names the cases."""

    def __init__(self, name: str, threshold: float) -> None:
        self.name = name
        self.threshold = threshold
        self.rows: list[RowEntry] = []
        self.graders = GraderTally()
        self._reader = RowReader(self.graders)

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
        try:
            self.rows.append(self._reader.read(row, index))
        except RowShapeError as error:
            raise InputError(f"{self.name}: results.results[{index}]{error}") from None

    def _declared(self, labels: list[str]) -> dict[str, dict[str, None]]:
        """Per case, the checks its graded rows name (what a provider error of it misses)."""
        known: dict[str, dict[str, None]] = {}
        for row, label in zip(self.rows, labels, strict=True):
            if row.checks is not None:
                names = known.setdefault(label, {})
                for name, _ in row.checks:
                    names[name] = None
        return known

    def _reconcile_stats(self, stats: object) -> None:
        """``results.stats`` must count the rows as the reader does (promptfoo's own rule:
        ``success`` a success, else ``failureReason`` 2 an error, else a failure). A file
        without ``stats`` has nothing to reconcile; one whose counts are not whole numbers, or
        disagree, is refused with both figures."""
        if stats is None:
            return
        if not isinstance(stats, dict):
            raise InputError(f"{self.name}: results.stats is not an object")
        written: list[int] = []
        for key in _STATS_KEYS:
            value = stats.get(key)
            if type(value) is not int or value < 0:
                raise InputError(
                    f"{self.name}: results.stats.{key} is {value!r}, not a count of rows"
                )
            written.append(value)
        outcomes = self._reader.outcomes
        counted = [outcomes[True], outcomes[False], outcomes[None]]
        if written != counted:
            said = ", ".join(f"{n} {k}" for n, k in zip(written, _STATS_KEYS, strict=True))
            held = ", ".join(f"{n} {k}" for n, k in zip(counted, _STATS_KEYS, strict=True))
            raise InputError(
                f"{self.name}: results.stats says {said}, but its rows hold {held} "
                "(by each row's success and failureReason)"
            )

    def finish(self, header: _Header, source: Source) -> Run:
        self._reconcile_stats(header.stats)
        if not self._reader.assessed:
            raise InputError(
                f"{self.name}: nothing in it could be assessed (no result row carries a pass or "
                "fail verdict)"
            )
        labels = _row_labels([row.key for row in self.rows])
        known = self._declared(labels) if self._reader.provider_errors else {}
        cases: dict[str, dict[str, list[Attempt]]] = {}
        samples: dict[str, list[SampleMeta]] = {}
        # A case's material: one row's tuple (distinct already), an ordered set once repeated.
        material: dict[str, tuple[Material, ...] | dict[Material, None]] = {}
        matrix: dict[str, MatrixKey] = {}
        providers: set[str] = set()
        for row, label in zip(self.rows, labels, strict=True):
            meta = row.meta
            checks = cases.get(label)
            if checks is None:
                key = row.key
                checks = cases[label] = {}
                samples[label] = [meta]
                material[label] = row.material
                matrix[label] = key
                providers.add(key.provider)
            else:
                samples[label].append(meta)
                if row.material:
                    merged = material[label]
                    if isinstance(merged, tuple):
                        merged = material[label] = dict.fromkeys(merged)
                    merged.update(dict.fromkeys(row.material))
            # The row's own verdict, in every row whatever its assertions say.
            checks.setdefault(SUCCESS_CHECK, []).append(row.own)
            if row.checks is None:
                # A provider error: unassessed on every check the test declares (as the other
                # attempts of this case name them), with the error text as evidence.
                declared = list(known.get(label) or row.declared)
                attempt = Attempt(passed=None, evidence=row.error, output_sha256=None)
                for name in declared:
                    if name == SUCCESS_CHECK:
                        continue
                    checks.setdefault(name, []).append(attempt)
                    meta.verdicts[name] = None
            else:
                for name, attempt in row.checks:
                    attempts = checks.get(name)
                    if attempts is None:
                        checks[name] = [attempt]
                    else:
                        attempts.append(attempt)
        description = header.description
        identity: dict[str, Any] = {
            "description": description if isinstance(description, str) else None,
            "providers": sorted(providers),
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
            matrix=matrix,
        )


def _plain_scalar(value: object) -> object:
    """The version as written when it is a string or a finite number, else None."""
    if isinstance(value, str):
        return value
    return finite(value)


# --- case labels -------------------------------------------------------------------------

_Pairing = tuple[str, str, str, str]
"""(test, vars, provider, prompt): a matrix key as a plain tuple (hashed in C)."""


def _labels(unique: list[_Pairing]) -> list[str]:
    """The case id of each of ``unique`` (distinct keys, in first-seen order): see
    :func:`matrix_ids`."""
    first_vars: dict[str, str] = {}
    mixed: set[str] = set()  # tests described alike over distinct vars
    providers: set[str] = set()
    prompts: set[str] = set()
    for test, variables, provider, prompt in unique:
        if first_vars.setdefault(test, variables) != variables:
            mixed.add(test)
        providers.add(provider)
        prompts.add(prompt)
    several_providers = len(providers) > 1
    several_prompts = len(prompts) > 1
    labels: list[str] = []
    used: set[str] = set()
    for test, variables, provider, prompt in unique:
        label = test
        if mixed and test in mixed and test != variables:
            label = f"{label} {variables}"
        if several_providers:
            label = f"{label} · {provider}"
        if several_prompts:
            label = f"{label} · prompt {prompt}"
        candidate, ordinal = label, 1
        while candidate in used:  # two keys that print alike are never pooled
            ordinal += 1
            candidate = f"{label} #{ordinal}"
        used.add(candidate)
        labels.append(candidate)
    return labels


def _row_labels(keys: list[MatrixKey]) -> list[str]:
    """The case id of each key in order (:func:`matrix_ids`, keyed by plain tuples)."""
    plain = [(key.test, key.vars, key.provider, key.prompt) for key in keys]
    unique = list(dict.fromkeys(plain))
    ids = dict(zip(unique, _labels(unique), strict=True))
    return [ids[key] for key in plain]


def matrix_ids(keys: Iterable[MatrixKey]) -> dict[MatrixKey, str]:
    """One case id per (test, vars, provider, prompt), so that repeats of one test share it.

    The description (else the vars as JSON, else ``test <testIdx>``) names the test; the vars
    are appended when one description covers several distinct vars; `` · provider`` and
    `` · prompt <label>`` are appended when the keys hold more than one of them. ``evalarc diff``
    calls this over the keys of BOTH files, so a test keeps its id whatever else either matrix
    holds; one file alone keeps the ids of a single-provider, single-prompt run unsuffixed.
    """
    unique = list(dict.fromkeys(keys))
    labels = _labels([(key.test, key.vars, key.provider, key.prompt) for key in unique])
    return dict(zip(unique, labels, strict=True))


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
    no_provider = "provider" in across
    no_prompt = "prompt" in across

    def pairings(run: Run) -> list[_Pairing]:
        return [
            (
                key.test,
                key.vars,
                "" if no_provider else key.provider,
                "" if no_prompt else key.prompt,
            )
            for key in run.matrix.values()
        ]

    base_keys = pairings(baseline)
    cur_keys = pairings(current)
    unique = list(dict.fromkeys([*base_keys, *cur_keys]))
    ids = dict(zip(unique, _labels(unique), strict=True))
    return _rekey(baseline, [ids[key] for key in base_keys]), _rekey(
        current, [ids[key] for key in cur_keys]
    )


def _rekey(run: Run, labels: list[str]) -> Run:
    """``run`` with the case of each matrix entry (in order) renamed to ``labels``."""
    if list(run.matrix) == labels:
        return run
    renamed = dict(zip(run.matrix, labels, strict=True))
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


# --- headline and graders ----------------------------------------------------------------


def pass_rate_headline(stats: object) -> Headline | None:
    """promptfoo's own pass rate: successes / (successes + failures + errors)."""
    if not isinstance(stats, dict):
        return None
    counts = [finite(stats.get(key)) or 0.0 for key in ("successes", "failures", "errors")]
    total = sum(counts)
    value = counts[0] / total if total > 0 else None
    return Headline(name=HEADLINE_NAME, value=value)


def promptfoo_graders(rows: list[dict[str, Any]]) -> Graders:
    """Which providers were tested, which graded, and whether any provider graded itself."""
    tally = GraderTally()
    reader = RowReader(tally)
    for index, row in enumerate(rows):
        reader.read(row, index)
    return tally.result()


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
