"""Trace replay page models: what happened inside one case, step by step, built from its record.

Which view a case gets is declared by its pack (``views.toml``, read by
:func:`evalarc.packs.pack_trace_view`); this module knows no pack. Three views, one per way a
pack records a case:

* :class:`Episode` (``episode``): the host's own trace of a tool-calling episode, from the case
  record. Each step shows the action, the result, an injected or validation error, whether it
  retries a failed call (and with which idempotency key), the state changes it made, and the
  finish message, which the verifier never reads ("not scored"). The pack names the argument
  that says which record a call acts on, the idempotency argument and the words for the state.
* :class:`TranscriptView` (``transcript``, also any pack that declares nothing): the recording's
  requests and responses per candidate process, the restarts (stdin closed, EOF) and kills
  between processes, and expected against actual at the first mismatch. The expected value
  comes from the oracle the pack names, replayed over the recorded requests, and is shown only
  when it agrees with the grader's recorded message; otherwise the message itself is shown.
* :class:`ReportReview` (``report-fields``): each field of the candidate's report against the
  expected value and the rule it had to meet (exact, or the tolerances the pack names), with the
  verdict the grader recorded for it and the dimension the pack scores it in.

The models make every decision (wording, tones, which step is a retry); ``_trace.html.j2`` only
lays them out and lists every step, so the page is complete without JavaScript. Every value is
candidate- or pack-controlled text and reaches HTML only through autoescaping.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalarc.canonical import canonical_json
from evalarc.packs import EpisodeLabels, PackTraceView
from evalarc.pages.blocks import CheckChip, Fact, check_chips, plural

MAX_STEPS = 200
"""Episode steps shown per case (a pack's action budget is far smaller)."""
MAX_EXCHANGES = 500
"""Recorded requests shown per case; the rest stay in the recording."""
ORACLE_AGREEMENT_CHARS = 60
"""How much of the oracle's expected value must appear in the grader's mismatch message."""

Events = Sequence[Mapping[str, Any]]


# --------------------------------------------------------------------------- shared pieces


def show(value: object) -> str:
    """A JSON value as one line of readable JSON (non-ASCII kept as is)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


# --------------------------------------------------------------------------- episodes


@dataclass(frozen=True)
class FieldChange:
    subject: str
    """The record the change is to (the pack's subject, a ticket id)."""
    field: str
    before: str
    after: str
    detail: str
    """What kind of change it is, when that helps: ``+1 appended: …``."""


@dataclass(frozen=True)
class StateRow:
    subject: str
    field: str
    initial: str
    final: str
    changed: bool


@dataclass(frozen=True)
class EpisodeStep:
    index: int
    """0-based position in the trace (``data-step`` on the page)."""
    label: str
    """``Step 3 of 6``."""
    chip: str
    """The short label of the step's button in the stepper: number and tool."""
    kind: str
    """``tool_call``, ``finish``, ``agent_error``, ``environment_error`` or ``unknown``."""
    title: str
    outcome: str
    tone: str
    arguments: list[Fact]
    result: str
    error: str
    """The error code and whether it was retryable (tool errors only)."""
    error_source: str
    """Who produced the error, in words: the scenario's injected failure or validation."""
    retry: str
    """How this call retries the failed call before it, with the idempotency keys; or empty."""
    idempotency_key: str
    changes: list[FieldChange]
    change_note: str
    """A sentence about the state change (none, or a change despite an error)."""
    message: str
    """The finish message (finish steps), the error text (error steps)."""
    not_scored: bool
    """True for the finish message: the verifier reads only the final state."""


@dataclass(frozen=True)
class Episode:
    anchor: str
    summary: str
    checks: list[CheckChip]
    steps: list[EpisodeStep]
    hidden_steps: int
    state: list[StateRow]
    subject_label: str
    """The heading of the subject column (the pack's word, ``Ticket``)."""
    scored_state: str
    """What the verifier reads, in the pack's words (``the final ticket state``)."""
    kind: str = field(default="episode", init=False)


def _subject(action: object, argument: str) -> str | None:
    """The record a tool call acts on: its ``argument`` (the pack's subject argument)."""
    if isinstance(action, Mapping):
        arguments = action.get("arguments")
        if isinstance(arguments, Mapping) and isinstance(arguments.get(argument), str):
            return str(arguments[argument])
    return None


def _field_changes(changes: object, whole: str) -> list[FieldChange]:
    """``whole`` labels a change of a whole record (``(ticket)``)."""
    rows: list[FieldChange] = []
    if not isinstance(changes, Mapping):
        return rows
    for subject, change in changes.items():
        if not isinstance(change, Mapping):
            continue
        before = change.get("before")
        after = change.get("after")
        if not isinstance(before, Mapping) or not isinstance(after, Mapping):
            rows.append(FieldChange(str(subject), whole, show(before), show(after), ""))
            continue
        names = [*before.keys(), *(name for name in after if name not in before)]
        for name in names:
            old, new = before.get(name), after.get(name)
            if old == new and (name in before) == (name in after):
                continue
            detail = ""
            if isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old:
                added = new[len(old) :]
                detail = f"+{len(added)} appended: " + "; ".join(
                    item if isinstance(item, str) else show(item) for item in added
                )
            rows.append(
                FieldChange(
                    str(subject),
                    str(name),
                    show(old) if name in before else "(absent)",
                    show(new) if name in after else "(absent)",
                    detail,
                )
            )
    return rows


@dataclass
class _Pending:
    """The last failed, retryable tool call: the next call of the same tool retries it."""

    step: int
    tool: object
    subject: str | None
    key: object
    committed: bool
    """The failed call changed the state anyway (a failure after the write)."""


@dataclass(frozen=True)
class _Retry:
    text: str
    duplicate: bool
    """A new idempotency key after a committed write, and this call wrote again."""


def _retry(
    pending: _Pending | None,
    tool: object,
    arguments: Mapping[str, Any],
    subject: str | None,
    labels: EpisodeLabels,
    changed: bool,
) -> _Retry | None:
    key_argument, noun = labels.idempotency_argument, labels.subject_label.lower()
    if pending is None or tool != pending.tool or subject != pending.subject:
        return None
    shown = pending.step + 1
    if key_argument not in arguments and pending.key is None:
        return _Retry(f"Retry of step {shown} (same tool on the same {noun}).", False)
    key, old = arguments.get(key_argument), pending.key
    if key == old:
        return _Retry(
            f"Retry of step {shown} with the same idempotency key {show(key)}: the "
            "service recognises the request and replays its receipt instead of "
            "writing again.",
            False,
        )
    text = (
        f"Retry of step {shown} with a new idempotency key {show(key)} (step {shown} sent "
        f"{show(old)}): the service sees a new request."
    )
    if pending.committed and changed:
        return _Retry(
            text + f" Step {shown} had already written, so this writes a second time.", True
        )
    return _Retry(text, False)


def _episode_step(
    index: int,
    total: int,
    entry: Mapping[str, Any],
    pending: _Pending | None,
    labels: EpisodeLabels,
) -> tuple[EpisodeStep, _Pending | None]:
    kind = str(entry.get("type", "unknown"))
    action = entry.get("action")
    label = f"Step {index + 1} of {total}"
    empty = EpisodeStep(
        index,
        label,
        f"{index + 1}",
        kind,
        kind.replace("_", " "),
        kind,
        "bad",
        [],
        "",
        "",
        "",
        "",
        "",
        [],
        "",
        "",
        False,
    )
    if kind == "finish":
        message = action.get("message") if isinstance(action, Mapping) else None
        text = f"“{message}”" if isinstance(message, str) else "none"
        step = EpisodeStep(
            index,
            label,
            f"{index + 1} finish",
            kind,
            "finish",
            "finish",
            "ok",
            [Fact("action", show(action))],
            "",
            "",
            "",
            "",
            "",
            [],
            "",
            text,
            True,
        )
        return step, None
    if kind in ("agent_error", "environment_error"):
        words = "agent error" if kind == "agent_error" else "environment error"
        step = EpisodeStep(
            index,
            label,
            f"{index + 1} {words}",
            kind,
            words,
            words,
            "bad",
            [],
            "",
            "",
            "",
            "",
            "",
            [],
            "",
            str(entry.get("error", "")),
            False,
        )
        return step, None
    if kind != "tool_call" or not isinstance(action, Mapping):
        return empty, None
    tool = action.get("tool")
    raw_arguments = action.get("arguments")
    arguments: Mapping[str, Any] = raw_arguments if isinstance(raw_arguments, Mapping) else {}
    subject = _subject(action, labels.subject_argument)
    facts = [
        Fact(
            f"{name} (idempotency key)" if name == labels.idempotency_argument else str(name),
            value if isinstance(value, str) else show(value),
        )
        for name, value in arguments.items()
    ]
    if not isinstance(raw_arguments, Mapping):
        facts.append(Fact("arguments", show(raw_arguments)))
    result = entry.get("result")
    result_map: Mapping[str, Any] = result if isinstance(result, Mapping) else {}
    source = entry.get("error_source")
    whole = f"({labels.subject_label.lower()})"
    changes = _field_changes(entry.get("changes"), whole)
    error = ""
    error_source = ""
    retryable = False
    if entry.get("status") == "tool_error":
        details = result_map.get("error")
        code = details.get("code") if isinstance(details, Mapping) else None
        retryable = isinstance(details, Mapping) and details.get("retryable") is True
        error = f"{code if isinstance(code, str) else show(details)} · " + (
            "retryable" if retryable else "not retryable"
        )
        if source == "injected":
            outcome, tone = "injected error", "warn"
            error_source = (
                "Injected by the scenario: a transient failure the policy is "
                "expected to recover from."
            )
        elif source == "tool_validation":
            outcome, tone = "validation error", "bad"
            error_source = "Rejected by the tool's own validation."
        else:
            outcome, tone = "tool error", "bad"
            error_source = f"Error source: {show(source)}."
    elif result_map.get("replayed") is True:
        outcome, tone = "replayed", "ok"
    else:
        outcome, tone = "ok", "ok"
    retry = _retry(pending, tool, arguments, subject, labels, bool(changes))
    if retry is not None and retry.duplicate:
        outcome, tone = "ok · duplicate write", "bad"
    if changes and entry.get("status") == "tool_error":
        change_note = (
            "The call reported an error, yet the state changed: the write was "
            "committed before the failure was returned."
        )
    elif changes:
        change_note = ""
    elif result_map.get("replayed") is True:
        change_note = (
            "No state change in this step: the service replayed the receipt of the "
            "earlier call with this key."
        )
    else:
        change_note = "No state change in this step."
    key = arguments.get(labels.idempotency_argument)
    tool_name = tool if isinstance(tool, str) else show(tool)
    step = EpisodeStep(
        index=index,
        label=label,
        chip=f"{index + 1} {tool_name}",
        kind=kind,
        title=tool_name + (f" · {subject}" if subject else ""),
        outcome=outcome,
        tone=tone,
        arguments=facts,
        result=show(result),
        error=error,
        error_source=error_source,
        retry="" if retry is None else retry.text,
        idempotency_key=key if isinstance(key, str) else "",
        changes=changes,
        change_note=change_note,
        message="",
        not_scored=False,
    )
    following = (
        _Pending(index, tool, subject, key, bool(changes))
        if entry.get("status") == "tool_error" and retryable
        else None
    )
    return step, following


def _state_rows(initial: object, final: object, whole: str) -> list[StateRow]:
    rows: list[StateRow] = []
    first = initial if isinstance(initial, Mapping) else {}
    last = final if isinstance(final, Mapping) else {}
    subjects = [*first.keys(), *(subject for subject in last if subject not in first)]
    for subject in subjects:
        before, after = first.get(subject), last.get(subject)
        if not isinstance(before, Mapping) or not isinstance(after, Mapping):
            rows.append(StateRow(str(subject), whole, show(before), show(after), before != after))
            continue
        names = [*before.keys(), *(name for name in after if name not in before)]
        for name in names:
            old = show(before[name]) if name in before else "(absent)"
            new = show(after[name]) if name in after else "(absent)"
            rows.append(StateRow(str(subject), str(name), old, new, old != new))
    return rows


def build_episode(case: Mapping[str, Any], anchor: str, labels: EpisodeLabels) -> Episode | None:
    """The step-by-step episode of a case record (None without a trace), in the words of
    ``labels`` (the pack's declaration)."""
    trace = case.get("trace")
    if not isinstance(trace, list) or not trace:
        return None
    entries = [entry for entry in trace if isinstance(entry, Mapping)]
    shown = entries[:MAX_STEPS]
    steps: list[EpisodeStep] = []
    pending: _Pending | None = None
    for index, entry in enumerate(shown):
        step, pending = _episode_step(index, len(shown), entry, pending, labels)
        steps.append(step)
    calls = sum(1 for step in steps if step.kind == "tool_call")
    injected = sum(1 for step in steps if step.outcome == "injected error")
    invalid = sum(1 for step in steps if step.outcome == "validation error")
    retries = sum(1 for step in steps if step.retry)
    finished = any(step.kind == "finish" for step in steps)
    parts = [plural(calls, "tool call")]
    if injected:
        parts.append(plural(injected, "injected error"))
    if invalid:
        parts.append(plural(invalid, "validation error"))
    if retries:
        parts.append(plural(retries, "retry", "retries"))
    parts.append("finished" if finished else "no finish")
    return Episode(
        anchor=anchor,
        summary=", ".join(parts) + ".",
        checks=check_chips(case.get("checks")),
        steps=steps,
        hidden_steps=len(entries) - len(shown),
        state=_state_rows(
            case.get("initial_state"), case.get("final_state"), f"({labels.subject_label.lower()})"
        ),
        subject_label=labels.subject_label,
        scored_state=labels.scored_state,
    )


# --------------------------------------------------------------------------- transcripts


@dataclass(frozen=True)
class Exchange:
    number: int
    """1-based request number across the case's processes (the grader's numbering)."""
    request: str
    response: str
    outcome: str
    """``matched``, ``first mismatch``, ``no valid response`` or ``not checked``."""
    tone: str


@dataclass(frozen=True)
class ProcessRun:
    title: str
    """``Process 1`` or ``Process 2 · restart after EOF`` / ``· restart after a kill``."""
    exchanges: list[Exchange]
    ending: str
    """How the process ended: stdin closed (EOF), killed, a fault; with its exit code."""
    tone: str
    stderr: str


@dataclass(frozen=True)
class Mismatch:
    number: int
    process: int
    request: str
    expected: str
    """The oracle's full expected response, or empty when only the message can be shown."""
    actual: str
    message: str
    """The grader's recorded message for the case."""


@dataclass(frozen=True)
class TranscriptView:
    anchor: str
    summary: str
    checks: list[CheckChip]
    processes: list[ProcessRun]
    mismatch: Mismatch | None
    hidden_exchanges: int
    kind: str = field(default="transcript", init=False)


def _decoded(line: object) -> tuple[str, Any, bool]:
    """A recorded line as display text, its parsed value, and whether it parsed."""
    if not isinstance(line, str):
        return "", None, False
    try:
        value = json.loads(line)
    except ValueError:
        return line, None, False
    return show(value), value, True


def _ending(events: list[Mapping[str, Any]], after_failure: bool) -> tuple[str, str]:
    kinds = [str(event.get("event")) for event in events]
    exit_code = next((event.get("code") for event in events if event.get("event") == "exit"), None)
    code = "" if exit_code is None else f"; exit code {exit_code}"
    fault = next((event for event in events if event.get("event") == "fault"), None)
    if fault is not None:
        return f"{fault.get('kind', 'fault')} fault: {fault.get('message', '')}{code}", "bad"
    if "kill" in kinds:
        if after_failure:
            return f"killed by the grader after the failure{code}", "bad"
        return f"killed with SIGKILL, as the case plans (a crash){code}", "warn"
    if "eof" in kinds:
        tone = "ok" if exit_code == 0 else "bad"
        return f"stdin closed (EOF){code}", tone
    return f"no clean end recorded{code}", "bad"


class _TranscriptReader:
    """Walks a recording once: numbers the requests, pairs them with responses, replays the
    oracle over them and notes the first failing request."""

    def __init__(self, case: Mapping[str, Any], view: PackTraceView) -> None:
        self.case = case
        self.status = case.get("status")
        completed = case.get("checks_completed")
        self.matched = completed if isinstance(completed, int) else None
        self.failing = (
            (self.matched + 1)
            if self.matched is not None and self.status in ("failed", "agent_error")
            else None
        )
        self.oracle = view.expected_response
        self.state: dict[str, Any] = {}
        self.number = 0
        self.shown = 0
        self.hidden = 0
        self.mismatch: Mismatch | None = None

    def outcome(self, number: int) -> tuple[str, str]:
        if self.matched is None:
            return "recorded", ""
        if number <= self.matched:
            return "matched", "ok"
        if number == self.failing:
            return (
                ("first mismatch", "bad")
                if self.status == "failed"
                else ("no valid response", "bad")
            )
        return "not checked", "warn"

    def expected(self, request: Any, parsed: bool) -> tuple[Any, bool]:
        """The oracle's answer to ``request`` (the oracle keeps its own state)."""
        if self.oracle is None or not parsed:
            self.oracle = None
            return None, False
        try:
            return self.oracle(self.state, request), True
        except Exception:  # an oracle that cannot take this request: stop using it
            self.oracle = None
            return None, False

    def exchange(
        self, process: int, request: tuple[str, Any, bool], reply: str | None
    ) -> Exchange | None:
        self.number += 1
        number = self.number
        text, value, parsed = request
        expected, known = self.expected(value, parsed)
        response = "(no response)" if reply is None else reply
        outcome, tone = self.outcome(number)
        if number == self.failing and self.mismatch is None:
            message = str(self.case.get("error") or "")
            shown_expected = ""
            if known and self.status == "failed":
                prefix = canonical_json(expected)[:ORACLE_AGREEMENT_CHARS]
                if prefix in message:
                    shown_expected = show(expected)
            self.mismatch = Mismatch(number, process, text, shown_expected, response, message)
        if self.shown >= MAX_EXCHANGES:
            self.hidden += 1
            return None
        self.shown += 1
        return Exchange(number, text, response, outcome, tone)

    def process(
        self, position: int, events: list[Mapping[str, Any]], previous_end: str
    ) -> ProcessRun:
        exchanges: list[Exchange] = []
        waiting: tuple[str, Any, bool] | None = None
        for event in events:
            kind = event.get("event")
            if kind == "send":
                if waiting is not None:
                    exchanges.extend(self._kept(position, waiting, None))
                waiting = _decoded(event.get("line"))
            elif kind == "recv" and waiting is not None:
                exchanges.extend(self._kept(position, waiting, _decoded(event.get("line"))[0]))
                waiting = None
        if waiting is not None:
            exchanges.extend(self._kept(position, waiting, None))
        after_failure = self.failing is not None and self.number >= self.failing
        ending, tone = _ending(events, after_failure)
        title = f"Process {position}"
        if previous_end:
            title += f" · restart after {previous_end}"
        stderr = next(
            (str(event.get("tail", "")) for event in events if event.get("event") == "stderr"), ""
        )
        return ProcessRun(title, exchanges, ending, tone, stderr)

    def _kept(
        self, position: int, request: tuple[str, Any, bool], reply: str | None
    ) -> list[Exchange]:
        exchange = self.exchange(position, request, reply)
        return [] if exchange is None else [exchange]


def build_transcript(
    case: Mapping[str, Any], events: Events | None, anchor: str, view: PackTraceView | None = None
) -> TranscriptView | None:
    """Requests and responses per process from a case's recording (None without one)."""
    if not events:
        return None
    reader = _TranscriptReader(case, view or PackTraceView())
    by_session: dict[int, list[Mapping[str, Any]]] = {}
    for event in events:
        session = event.get("session")
        if isinstance(session, int) and not isinstance(session, bool):
            by_session.setdefault(session, []).append(event)
    processes: list[ProcessRun] = []
    previous_end = ""
    for position, session in enumerate(sorted(by_session), start=1):
        session_events = by_session[session]
        processes.append(reader.process(position, session_events, previous_end))
        kinds = {str(event.get("event")) for event in session_events}
        previous_end = "a kill" if "kill" in kinds else "EOF"
    restarts = max(0, len(processes) - 1)
    kills = sum(1 for run in processes if run.ending.startswith("killed"))
    parts = [
        plural(len(processes), "process", "processes"),
        plural(restarts, "restart"),
        plural(kills, "kill"),
        plural(reader.number, "request"),
    ]
    if reader.matched is not None:
        parts.append(f"{reader.matched} matched")
    if reader.mismatch is not None:
        parts.append(f"first failure at request {reader.mismatch.number}")
    return TranscriptView(
        anchor=anchor,
        summary=", ".join(parts) + ".",
        checks=check_chips(case.get("checks")),
        processes=processes,
        mismatch=reader.mismatch,
        hidden_exchanges=reader.hidden,
    )


# --------------------------------------------------------------------------- report reviews


@dataclass(frozen=True)
class ReviewField:
    name: str
    dimension: str
    expected: str
    actual: str
    rule: str
    difference: str
    verdict: str
    tone: str


@dataclass(frozen=True)
class ReportReview:
    anchor: str
    summary: str
    checks: list[CheckChip]
    fields: list[ReviewField]
    notes: list[str]
    """Envelope and key-set problems, which belong to no one field."""
    kind: str = field(default="report-fields", init=False)


_MISSING = object()


def _tolerance(view: PackTraceView) -> str:
    if view.absolute_tolerance is None or view.relative_tolerance is None:
        return "within the pack's tolerance"
    return f"within {view.absolute_tolerance:g} absolute or {view.relative_tolerance:g} relative"


def _rule(expected: object, view: PackTraceView) -> str:
    if isinstance(expected, bool):
        return "exactly this boolean"
    if isinstance(expected, int):
        return "exactly this integer"
    if isinstance(expected, float):
        return _tolerance(view)
    if isinstance(expected, str):
        return "exactly this text"
    if (
        isinstance(expected, list)
        and expected
        and all(isinstance(item, float) for item in expected)
    ):
        return f"each of {len(expected)} components {_tolerance(view)}"
    if isinstance(expected, list):
        return "exactly this list"
    return "exactly this value"


def _gap(actual: int | float, expected: float) -> float:
    try:
        return abs(float(actual) - expected)
    except OverflowError:  # an integer too large for a float
        return math.inf


def _difference(actual: object, expected: object) -> str:
    """``|actual - expected|`` where a tolerance applies (expected floats), else empty."""
    if (
        isinstance(expected, float)
        and isinstance(actual, int | float)
        and not isinstance(actual, bool)
    ):
        gap = _gap(actual, expected)
        return f"{gap:.3g}" if math.isfinite(gap) else "not finite"
    if (
        isinstance(expected, list)
        and isinstance(actual, list)
        and expected
        and len(actual) == len(expected)
        and all(isinstance(item, float) for item in expected)
    ):
        gaps: list[float] = []
        for value, target in zip(actual, expected, strict=True):
            if not isinstance(value, int | float) or isinstance(value, bool):
                return ""
            gaps.append(_gap(value, target))
        worst = max(gaps)
        return f"max {worst:.3g}" if math.isfinite(worst) else "not finite"
    return ""


def build_report_review(
    case: Mapping[str, Any], anchor: str, view: PackTraceView | None = None
) -> ReportReview | None:
    """Each report field against its expected value and rule (None without an expected report)."""
    expected = case.get("expected")
    if not isinstance(expected, Mapping):
        return None
    view = view or PackTraceView()
    trace = case.get("trace")
    response: object = None
    if isinstance(trace, list) and trace and isinstance(trace[-1], Mapping):
        response = trace[-1].get("response")
    report = response.get("report") if isinstance(response, Mapping) else None
    problems = {str(problem) for problem in case.get("problems") or []}
    status = case.get("status")
    notes: list[str] = []
    no_report = not isinstance(report, Mapping)
    if status == "environment_error":
        notes.append("Unassessed: the environment failed before a report could be judged.")
    elif response is None:
        notes.append("No response was recorded: " + str(case.get("error") or "(no message)"))
    elif "envelope" in problems or no_report:
        notes.append(
            'The response is not an {"ok": true, "report": {...}} envelope, so every field fails.'
        )
    elif status == "agent_error":
        notes.append(
            "The case failed outside the report, so every check is false: "
            + str(case.get("error") or "(no message)")
        )
    if isinstance(response, Mapping) and isinstance(report, Mapping):
        extra = sorted(str(key) for key in report if key not in expected)
        missing = [str(key) for key in expected if key not in report]
        envelope_extra = sorted(str(key) for key in response if key not in ("ok", "report"))
        if extra:
            notes.append("Report keys not in the contract: " + ", ".join(extra) + ".")
        if missing:
            notes.append("Report keys missing: " + ", ".join(missing) + ".")
        if envelope_extra:
            notes.append("Envelope keys not in the contract: " + ", ".join(envelope_extra) + ".")
    fields: list[ReviewField] = []
    for name, value in expected.items():
        actual: object = report.get(name, _MISSING) if isinstance(report, Mapping) else _MISSING
        if status == "environment_error" or response is None:
            verdict, tone = "unassessed", "warn"
        elif no_report or "envelope" in problems or name in problems:
            verdict, tone = "does not match", "bad"
        else:
            verdict, tone = "matches", "ok"
        fields.append(
            ReviewField(
                name=str(name),
                dimension=view.field_dimensions.get(str(name), "—"),
                expected=show(value),
                actual="(missing)" if actual is _MISSING else show(actual),
                rule=_rule(value, view),
                difference=("" if actual is _MISSING else _difference(actual, value)) or "—",
                verdict=verdict,
                tone=tone,
            )
        )
    failed = sum(1 for item in fields if item.verdict == "does not match")
    summary = (
        f"{len(fields)} report fields, {failed} outside their rule."
        if status != "environment_error" and response is not None
        else f"{len(fields)} report fields, none assessed."
    )
    return ReportReview(anchor, summary, check_chips(case.get("checks")), fields, notes)


# --------------------------------------------------------------------------- dispatch

TraceView = Episode | TranscriptView | ReportReview


def build_trace(
    view: PackTraceView,
    case: Mapping[str, Any],
    events: Events | None,
    anchor: str,
) -> TraceView | None:
    """The trace view of one case, the kind its pack declares (``view``, from
    :func:`evalarc.packs.pack_trace_view`), or None when nothing was kept.

    ``events`` are the case's recording events (``None`` when not available); ``anchor`` is the
    HTML id prefix of the view."""
    if view.view == "episode" and view.episode is not None:
        return build_episode(case, anchor, view.episode)
    if view.view == "report-fields":
        return build_report_review(case, anchor, view)
    return build_transcript(case, events, anchor, view)


def parse_events(data: bytes) -> list[dict[str, Any]] | None:
    """The events of a recording file (JSON lines); None when it is not one."""
    events: list[dict[str, Any]] = []
    try:
        for line in data.decode("utf-8").splitlines():
            if not line.strip():
                continue
            event = json.loads(line)
            if not isinstance(event, dict):
                return None
            events.append(event)
    except (UnicodeDecodeError, ValueError):
        return None
    return events
