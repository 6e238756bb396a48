"""Read an Inspect AI log (``.json`` or ``.eval`` ZIP) into the shared model.

Samples are consumed one at a time: from a ``.eval`` archive one member is decompressed and
parsed at a time, and from a ``.json`` log the top-level object is walked so that each sample
is parsed, reduced to the few fields EvalArc uses, and dropped before the next one. Nothing of
the raw sample JSON is kept.

Rules (spec diff-and-verify §1.3): case = ``str(sample.id)``; attempts = epochs in file order;
checks = scorers (a dict-valued score gives one check per key, ``scorer/key``). A value is read
as Inspect's own ``value_to_float`` reads it (:func:`value_to_float`, checked against
inspect_ai 0.3.285, the corpus version and the newest release): ``C`` passes, ``I``/``N``/``P``
fail (``P`` counts 0.5 in Inspect's metrics but is never a pass here), bools and the strings
``yes``/``true``/``no``/``false`` (any case) as booleans, numbers and numeric strings pass iff
``>= threshold``; NaN and infinities (Inspect's "unscored" sentinel) are unassessed. A value
Inspect cannot convert (it warns and counts 0: ``"maybe"``, null, a list, a dict inside a dict)
is refused, naming the file, sample, scorer and value, never left unassessed in silence. A
sample without scores (an error, or no scorer ran) is unassessed on every check the run scores
(on ``sample error`` when the run scores nothing and the sample errored). The reference used a
separate ``sample error`` check, which made a fixed error look like a removed check; counting it
against the checks it hid is what the corpus and users expect.

The reading is then reconciled with the log's own verdicts (:mod:`evalarc.formats.inspect_tally`):
the scorers the samples name must be the scorers ``results.scores`` lists, and the ``accuracy``
and ``mean`` metrics Inspect declared must be what the samples give.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from evalarc.canonical import sha256_text
from evalarc.errors import InputError
from evalarc.formats.archive import SafeArchive, show_name
from evalarc.formats.inspect_tally import ScoreTally, value_to_float
from evalarc.formats.jsonstream import (
    MAX_VALUE_CONTAINERS,
    CapExceeded,
    JsonSyntaxError,
    TextWindow,
    array_items,
    object_members,
)
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

SAMPLE_ERROR_CHECK = "sample error"
_UNSCORED = "no score recorded"
OUTPUT_TEXT_LIMIT = 20_000
MATERIAL_LIMIT = 4096
TRUNCATING_STOP_REASONS = frozenset({"max_tokens", "length", "model_length", "max_output_tokens"})
PASSING_LETTERS = frozenset({"C"})
FAILING_LETTERS = frozenset({"I", "N", "P"})
TRUE_WORDS = frozenset({"yes", "true"})
FALSE_WORDS = frozenset({"no", "false"})
MODEL_GRADED_PREFIXES = ("model_graded_qa", "model_graded_fact")
GENERATE_CONFIG_KEYS = (
    "reasoning_effort",
    "reasoning_tokens",
    "max_tokens",
    "temperature",
    "reasoning_history",
)
_USAGE_FIELDS = (
    ("total_cost", "cost_usd"),
    ("total_tokens", "total_tokens"),
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("input_tokens_cache_read", "cached_input_tokens"),
    ("reasoning_tokens", "reasoning_tokens"),
)
_HEADER_KEYS = frozenset({"eval", "results", "status"})
"""Top-level log fields kept from the header; everything else is parsed and dropped."""
_NOT_INSPECT = "is not an Inspect log: expected `eval` and `samples`"
_NO_SAMPLES = "Inspect log has no samples; rerun without --no-log-samples"

JSONObject = dict[str, Any]


def read_inspect(path: Path, source: Source, threshold: float) -> Run:
    """Read the Inspect log at ``path`` (JSON or ``.eval`` archive) into a :class:`Run`.

    Raises InputError naming the file for anything malformed, for an archive that is unsafe to
    expand, and for a repeated (sample id, epoch) pair.
    """
    builder = _RunBuilder(str(path), threshold)
    with path.open("rb") as handle:
        is_archive = handle.read(4) == b"PK\x03\x04"
    # Tens of thousands of small acyclic objects (attempts, metas, usage dicts) are kept: the
    # cyclic collector would rescan all of them again and again while they are built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if is_archive or path.suffix == ".eval":
            header = _read_archive(path, builder.add_sample)
        else:
            header = read_json_log(path, builder.add_sample)
        return builder.finish(header, source)
    finally:
        if collecting:
            gc.enable()


# -- document sources -------------------------------------------------------------------------


def _read_archive(path: Path, on_sample: Callable[[object], None]) -> JSONObject:
    """Feed every ``samples/*.json`` member (sorted by name) to ``on_sample``; return the header."""
    name = str(path)
    with SafeArchive(path, label="Inspect log") as archive:
        if "header.json" not in archive:
            raise InputError(f"{name} has no header.json; the run may be incomplete")
        header = _parse_member(archive, "header.json")
        if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
            raise InputError(f"{name} {_NOT_INSPECT}")
        members = sorted(
            member
            for member in archive.names()
            if member.startswith("samples/") and member.endswith(".json")
        )
        if not members:
            raise InputError(f"{name}: {_NO_SAMPLES}")
        for member in members:
            on_sample(_parse_member(archive, member, sample=True))
    return {key: value for key, value in header.items() if key in _HEADER_KEYS}


class _SampleFields(msgspec.Struct):
    """The only fields of a sample EvalArc reads; the rest (messages, events, attachments: most
    of the bytes) are skipped by the decoder without being built."""

    id: Any = None
    epoch: Any = None
    scores: Any = None
    error: Any = None
    output: Any = None
    input: Any = None
    target: Any = None
    model_usage: Any = None
    working_time: Any = None
    total_time: Any = None
    limit: Any = None


_SAMPLE_DECODER = msgspec.json.Decoder(_SampleFields)
_ANY_DECODER = msgspec.json.Decoder()


def _parse_member(archive: SafeArchive, member: str, sample: bool = False) -> object:
    """One member parsed with msgspec (a sample: only the fields EvalArc reads); what msgspec
    refuses but Inspect may write (NaN, integers beyond 64 bits, a sample that is not an
    object) is parsed again with ``json``."""
    data = archive.read(member)
    # Each object or array takes at least two bytes, so only a member that large can pass the cap.
    if len(data) > 2 * MAX_VALUE_CONTAINERS and (
        data.count(b"{") + data.count(b"[") > MAX_VALUE_CONTAINERS
    ):
        raise InputError(
            f"{archive.name}: member {show_name(member)} holds more than "
            f"{MAX_VALUE_CONTAINERS:,} JSON objects and arrays (the cap on one sample)"
        )
    try:
        if sample:
            fields = _SAMPLE_DECODER.decode(data)
            return msgspec.structs.asdict(fields)
        return _ANY_DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:
        raise InputError(
            f"{archive.name}: member {show_name(member)} is not JSON: {error}"
        ) from None


def read_json_log(path: Path, on_sample: Callable[[object], None]) -> JSONObject:
    """Walk the top-level object of a JSON log, handing each sample (whole, as parsed) to
    ``on_sample`` as soon as it is parsed; return the other top-level fields EvalArc uses.
    Raises InputError naming the file for what :func:`read_inspect` refuses in the text.

    NaN and Infinity are accepted here because Inspect writes them in metrics; the builder turns
    every non-finite number it keeps into null.
    """
    name = str(path)
    try:
        with path.open("rb") as handle:
            return _walk_log_object(TextWindow(handle), name, on_sample)
    except CapExceeded as error:
        raise InputError(f"{name}: {error}") from None
    except (ValueError, RecursionError) as error:  # includes UnicodeDecodeError
        raise InputError(f"{name} is not JSON: {error}") from None


def _walk_log_object(
    window: TextWindow, name: str, on_sample: Callable[[object], None]
) -> JSONObject:
    if window.peek() != "{":
        window.value()  # raises "not JSON" for anything that is not a JSON value
        if window.peek():
            raise JsonSyntaxError("extra data", window.offset())
        raise InputError(f"{name}: Inspect log must be a JSON object")
    header: JSONObject = {}
    sample_count = -1
    for key in object_members(window):
        if key == "samples" and window.peek() == "[":
            sample_count = _walk_samples(window, on_sample)
        else:
            value = window.value()
            if key in _HEADER_KEYS:
                header[key] = value
            del value
    if window.peek():
        raise JsonSyntaxError("extra data after the log object", window.offset())
    if sample_count < 0 or not isinstance(header.get("eval"), dict):
        raise InputError(f"{name} {_NOT_INSPECT}")
    if sample_count == 0:
        raise InputError(f"{name}: {_NO_SAMPLES}")
    return header


def top_level_member_types(path: Path) -> Iterator[tuple[str, type]]:
    """Yield (key, type of its value) for each member of the JSON object in ``path``, judging the
    type from the value's first character and keeping no value: format detection can stop at the
    first deciding key instead of parsing a large log whole. Yields nothing for valid JSON that is
    not an object; raises InputError naming the file when the text read so far is not JSON (NaN
    is accepted, as Inspect writes it)."""
    with path.open("rb") as handle:
        window = TextWindow(handle)
        try:
            if window.peek() != "{":
                window.value()
                return
            for key in object_members(window):
                kind = window.kind()
                if kind is dict or kind is list:
                    yield key, kind
                    # Down to the rows of promptfoo's results.results[], one value at a time.
                    window.skip(1, walk_depth=3)
                else:
                    yield key, type(window.value())
        except CapExceeded as error:
            raise InputError(f"{path}: {error}") from None
        except (ValueError, RecursionError) as error:
            raise InputError(f"{path} is not JSON: {error}") from None


def _walk_samples(window: TextWindow, on_sample: Callable[[object], None]) -> int:
    """Parse the samples array (the window is at its ``[``) one element at a time."""
    count = 0
    for _ in array_items(window):
        on_sample(window.value())
        count += 1
    return count


# -- the run builder ----------------------------------------------------------------------------


class _RunBuilder:
    """Accumulates attempts, material and sample meta sample by sample; pure of I/O."""

    def __init__(self, name: str, threshold: float) -> None:
        self.name = name
        self.threshold = threshold
        self.cases: dict[str, dict[str, list[Attempt]]] = {}
        self.material: dict[str, list[Material]] = {}
        self.samples: dict[str, list[SampleMeta]] = {}
        self.seen_epochs: set[tuple[str, int]] = set()
        self.unscored_cases: set[str] = set()
        self.count = 0
        self._names: dict[str, str] = {}
        self.tally = ScoreTally(name)

    def _intern(self, text: str) -> str:
        """One string object per distinct check name, however many samples repeat it."""
        return self._names.setdefault(text, text)

    def add_sample(self, sample: object) -> None:
        """Record one sample: its attempts (one per check), material and meta."""
        self.count += 1
        if not isinstance(sample, dict):
            raise InputError(f"{self.name}: sample #{self.count} is not a JSON object")
        case_id = self._case_id(sample)
        epoch = sample.get("epoch")
        if isinstance(epoch, int) and not isinstance(epoch, bool):
            key = (case_id, epoch)
            if key in self.seen_epochs:
                raise InputError(
                    f"{self.name}: sample {show_name(case_id)} epoch {epoch} appears twice; "
                    "re-export the log with `inspect log dump`"
                )
            self.seen_epochs.add(key)
        checks = self.cases.setdefault(case_id, {})
        meta = _sample_meta(sample)
        scores = sample.get("scores")
        error = sample.get("error")
        if not scores:
            # Unscored: unassessed on every check the run scores, decided in finish() once
            # every check name is known. An errored sample keeps its message as evidence.
            message = error.get("message") if isinstance(error, dict) else None
            evidence = cut_evidence(message or error) if error else _UNSCORED
            checks.setdefault(SAMPLE_ERROR_CHECK, []).append(
                Attempt(passed=None, evidence=evidence, output_sha256=meta.output_sha256)
            )
            meta.verdicts[SAMPLE_ERROR_CHECK] = None
            self.unscored_cases.add(case_id)
        elif isinstance(scores, dict):
            for scorer, score in scores.items():
                self._add_score(checks, meta, case_id, scorer, score)
        else:
            # An unknown shape is refused, never skipped: skipping it could hide a failure.
            raise InputError(
                f"{self.name}: sample {show_name(case_id)} has scores of an unknown shape "
                f"({type(scores).__name__}, expected an object of scorer results)"
            )
        if error:
            self.tally.errored = True
        self.samples.setdefault(case_id, []).append(meta)
        self._add_material(case_id, sample)

    def _case_id(self, sample: JSONObject) -> str:
        raw = sample.get("id")
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise InputError(f"{self.name}: sample #{self.count} has no string or integer id")
        return raw if isinstance(raw, str) else str(raw)

    def _add_score(
        self,
        checks: dict[str, list[Attempt]],
        meta: SampleMeta,
        case_id: str,
        scorer: str,
        score: object,
    ) -> None:
        if isinstance(score, dict):
            value = score.get("value")
            evidence = cut_evidence(score.get("explanation") or score.get("answer"))
        else:
            value, evidence = score, None
        if isinstance(value, dict):
            self.tally.add(scorer, case_id, None, value.keys())
            for key, part in value.items():
                self._add_check(checks, meta, case_id, f"{scorer}/{key}", part, evidence)
        else:
            number = self._add_check(checks, meta, case_id, scorer, value, evidence)
            self.tally.add(scorer, case_id, number)

    def _add_check(
        self,
        checks: dict[str, list[Attempt]],
        meta: SampleMeta,
        case_id: str,
        check: str,
        raw: object,
        evidence: str | None,
    ) -> float:
        """Add one check's attempt; return the value as Inspect's ``value_to_float`` reads it
        (NaN for the unscored sentinel). Raises InputError for a value Inspect cannot convert."""
        number = value_to_float(raw)
        if number is None:
            raise InputError(
                f"{self.name}: sample {show_name(case_id)} scorer {show_name(check)} has the "
                f"value {_shown_value(raw)}, which Inspect's value_to_float cannot convert (it "
                "counts it as 0 with a warning); EvalArc will not guess a verdict"
            )
        kept = _finite_or_none(raw)
        passed = passed_of(kept, self.threshold)
        name = self._names.setdefault(check, check)
        attempt = Attempt(passed, kept, evidence, meta.output_sha256)
        attempts = checks.get(name)
        if attempts is None:
            checks[name] = [attempt]
        else:
            attempts.append(attempt)
        meta.verdicts[name] = passed
        return number

    def _add_material(self, case_id: str, sample: JSONObject) -> None:
        inputs = _input_texts(sample.get("input"))
        targets = _target_texts(sample.get("target"))
        if not inputs and not targets:
            return
        kept = self.material.setdefault(case_id, [])
        _keep_material(kept, "input", inputs)
        _keep_material(kept, "expected", targets)

    def _spread_unscored(self) -> None:
        """Turn each unscored sample's placeholder into an unassessed attempt on every check the
        run scores, in sample order, so an error is ``unassessed`` on the checks it hid rather
        than a removed check plus an added one. A run that scores nothing keeps errors on
        ``sample error`` and drops placeholders of samples that merely were not scored."""
        known = sorted(
            {name for checks in self.cases.values() for name in checks} - {SAMPLE_ERROR_CHECK}
        )
        for case_id in sorted(self.unscored_cases):
            checks = self.cases[case_id]
            placeholders = iter(checks.pop(SAMPLE_ERROR_CHECK))
            if not known:
                kept = [attempt for attempt in placeholders if attempt.evidence != _UNSCORED]
                if kept:
                    checks[SAMPLE_ERROR_CHECK] = kept
                continue
            scored = {name: iter(attempts) for name, attempts in checks.items()}
            rebuilt: dict[str, list[Attempt]] = {}
            for meta in self.samples[case_id]:
                if SAMPLE_ERROR_CHECK in meta.verdicts:
                    placeholder = next(placeholders)
                    meta.verdicts = dict.fromkeys(known)
                    for name in known:
                        rebuilt.setdefault(self._intern(name), []).append(placeholder)
                else:
                    for name in meta.verdicts:
                        rebuilt.setdefault(name, []).append(next(scored[name]))
            self.cases[case_id] = rebuilt

    def finish(self, header: JSONObject, source: Source) -> Run:
        """The run, once every sample has been added; ``header`` holds eval/results/status."""
        self._spread_unscored()
        if not any(
            attempt.passed is not None
            for checks in self.cases.values()
            for attempts in checks.values()
            for attempt in attempts
        ):
            raise InputError(
                f"{self.name}: nothing in it could be assessed (no sample has a score that "
                "passes or fails); a log without scores cannot be compared"
            )
        eval_spec = header.get("eval")
        if not isinstance(eval_spec, dict):
            raise InputError(f"{self.name} {_NOT_INSPECT}")
        status = header.get("status")
        config = eval_spec.get("config")
        reducers = config.get("epochs_reducer") if isinstance(config, dict) else None
        self.tally.reconcile(header.get("results"), reducers)
        epochs = config.get("epochs") if isinstance(config, dict) else None
        identity = {
            "task": _text_or_none(eval_spec.get("task")),
            "model": _text_or_none(eval_spec.get("model")),
            "status": _text_or_none(status),
            "epochs": epochs if isinstance(epochs, int) and not isinstance(epochs, bool) else None,
        }
        return Run(
            format="inspect",
            source=source,
            threshold=self.threshold,
            cases=self.cases,
            identity=identity,
            headline=headline_of(header.get("results")),
            incomplete=status is not None and status != "success",
            material=self.material,
            samples=self.samples,
            generate_config=generate_config_of(eval_spec),
            graders=graders_of(eval_spec),
        )


def _keep_material(
    kept: list[Material], role: Literal["input", "expected"], texts: list[str]
) -> None:
    """Add each text (cut to MATERIAL_LIMIT, blank ones skipped) to ``kept`` once."""
    for text in texts:
        cut = text[:MATERIAL_LIMIT]
        if not cut.strip():
            continue
        item = Material(role=role, text=cut)
        if item not in kept:
            kept.append(item)


# -- pure rules ---------------------------------------------------------------------------------


def passed_of(value: object, threshold: float) -> bool | None:
    """Inspect's score value -> pass (True), fail (False) or unassessed (None: NaN, the
    infinities, and what :func:`value_to_float` cannot convert, which the reader refuses before
    asking). Letters and boolean words are verdicts whatever the threshold, as bools are;
    numbers and numeric strings pass iff ``>= threshold``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in PASSING_LETTERS:
            return True
        if value in FAILING_LETTERS:
            return False
        word = value.lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        number = value_to_float(value)
        return None if number is None else number >= threshold
    if isinstance(value, int):
        return value >= threshold
    if isinstance(value, float) and math.isfinite(value):
        return value >= threshold
    return None


def _shown_value(value: object) -> str:
    """A score value for a one-line message: its JSON, cut to 80 characters."""
    try:
        text = json.dumps(value, ensure_ascii=True, default=str)
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _finite_or_none(value: object) -> object:
    """Non-finite floats (Inspect may write NaN) become None so reports stay valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _finite_float(value: object) -> float | None:
    """``value`` as a finite float, or None for bools, non-numbers, NaN/Infinity and ints too
    large for a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


_FLOAT_SAFE_INT = 1 << 1000
"""Every int below this converts to a finite float."""


def _usable_number(value: object) -> float | None:
    """A usage figure: finite and non-negative, kept as the int or float the log wrote."""
    if type(value) is int:  # the common cases first, with the same answers as below
        return value if 0 <= value < _FLOAT_SAFE_INT else None
    if type(value) is float:
        return value if 0.0 <= value < math.inf else None
    number = _finite_float(value)
    if number is None or number < 0:
        return None
    return value if isinstance(value, int) else number


def _list(value: object) -> list[Any]:
    """``value`` when it is a list, else empty (a field of the wrong type reads as absent)."""
    return value if isinstance(value, list) else []


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _sample_meta(sample: JSONObject) -> SampleMeta:
    output = sample.get("output")
    output_sha256: str | None = None
    output_text: str | None = None
    stop_reason: object = None
    if isinstance(output, dict):
        completion = output.get("completion")
        if isinstance(completion, str):
            output_sha256 = sha256_text(completion)
            output_text = completion[:OUTPUT_TEXT_LIMIT]
        stop_reason = output.get("stop_reason")
        choices = output.get("choices")
        if not stop_reason and isinstance(choices, list) and choices:
            first = choices[0]
            stop_reason = first.get("stop_reason") if isinstance(first, dict) else None
    kept_reason = stop_reason if isinstance(stop_reason, str) and stop_reason else None
    limit = sample.get("limit")
    limit_type = limit.get("type") if isinstance(limit, dict) else None
    kept_limit = limit_type if isinstance(limit_type, str) else None
    return SampleMeta(
        usage=_usage_of(sample),
        output_sha256=output_sha256,
        output_text=output_text,
        stop_reason=kept_reason,
        truncated=kept_reason in TRUNCATING_STOP_REASONS or kept_limit == "token",
        limit=kept_limit,
    )


def _usage_of(sample: JSONObject) -> dict[str, float]:
    """Sum every model's usage in ``model_usage`` (graders included) plus the sample's time."""
    usage: dict[str, float] = {}
    per_model = sample.get("model_usage")
    if isinstance(per_model, dict):
        for record in per_model.values():
            if not isinstance(record, dict):
                continue
            for field, metric in _USAGE_FIELDS:
                value = record.get(field)
                if value is None:
                    continue
                number = _usable_number(value)
                if number is not None:
                    usage[metric] = usage.get(metric, 0) + number
    duration = _usable_number(sample.get("working_time"))
    if duration is None:
        duration = _usable_number(sample.get("total_time"))
    if duration is not None:
        usage["duration_seconds"] = duration
    return usage


def _input_texts(value: object) -> list[str]:
    """The sample input as text: a string, or the non-system chat messages' text joined."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return []
    lines: list[str] = []
    for message in value:
        if not isinstance(message, dict) or message.get("role") == "system":
            continue
        content = message.get("content")
        if isinstance(content, str):
            lines.append(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    lines.append(part["text"])
    return ["\n".join(lines)] if lines else []


def _target_texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def headline_of(results: object) -> Headline | None:
    """Inspect's own headline metric: the ``results.headline`` marker's group and metric, or
    the first metric of the first group with metrics when there is no marker."""
    if not isinstance(results, dict):
        return None
    groups = [group for group in _list(results.get("scores")) if isinstance(group, dict)]
    marker = results.get("headline")
    for group in groups:
        metrics = group.get("metrics")
        if not isinstance(metrics, dict) or not metrics:
            continue
        group_name = group.get("name")
        if isinstance(marker, dict):
            metric_key = marker.get("metric")
            if (
                group_name != marker.get("score")
                or not isinstance(metric_key, str)
                or metric_key not in metrics
            ):
                continue
            metric_name = marker["metric"]
        else:
            metric_name = next(iter(metrics))
        metric = metrics[metric_name]
        value = metric.get("value") if isinstance(metric, dict) else None
        return Headline(name=f"{group_name} {metric_name}", value=_finite_float(value))
    return None


def generate_config_of(eval_spec: JSONObject) -> dict[str, Any]:
    """The generation settings EvalArc reviews, non-null only."""
    config = eval_spec.get("model_generate_config")
    if not isinstance(config, dict):
        return {}
    kept: dict[str, Any] = {}
    for key in GENERATE_CONFIG_KEYS:
        value = _finite_or_none(config.get(key))
        if value is not None:
            kept[key] = value
    return kept


def graders_of(eval_spec: JSONObject) -> Graders:
    """Which scorers ask a model to grade, which models grade, and who grades themselves."""
    subject = eval_spec.get("model")
    subjects = [subject] if isinstance(subject, str) else []
    role_grader = _role_grader(eval_spec.get("model_roles"))
    graders = Graders(subject_models=subjects)
    grader_models: set[str] = set()
    for scorer in _list(eval_spec.get("scorers")):
        if not isinstance(scorer, dict) or not isinstance(scorer.get("name"), str):
            continue
        name: str = scorer["name"]
        if not name.rsplit("/", 1)[-1].startswith(MODEL_GRADED_PREFIXES):
            continue
        graders.model_graded_checks.append(name)
        options = scorer.get("options")
        chosen = _model_names(options.get("model")) if isinstance(options, dict) else []
        if not chosen and role_grader:
            chosen = [role_grader]
        if chosen:
            grader_models.update(chosen)
        else:
            graders.default_grader_checks.append(name)
    graders.grader_models = sorted(grader_models)
    self_graded = set(subjects) & grader_models
    if graders.default_grader_checks:
        self_graded.update(subjects)
    graders.self_graded = sorted(self_graded)
    return graders


def _role_grader(roles: object) -> str | None:
    if not isinstance(roles, dict):
        return None
    grader = roles.get("grader")
    if isinstance(grader, dict):
        grader = grader.get("model")
    return grader if isinstance(grader, str) and grader else None


def _model_names(value: object) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str) and item]
    return []
