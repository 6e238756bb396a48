"""Case evidence from an Inspect AI log (``.eval`` archive or JSON log).

Per sample (one section group per epoch): the input messages and target, the output, every
scorer's value, answer, explanation and metadata, the error with its traceback, and the
transcript (messages with tool calls and results, model and tool events). The archive is read
one sample member at a time through :class:`evalarc.formats.archive.SafeArchive`, so its limits
apply; a JSON log is walked sample by sample with the Inspect reader's own streaming parser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence
from evalarc.formats.archive import SafeArchive
from evalarc.formats.inspect import passed_of, read_json_log

_EPOCH_MEMBER = re.compile(r"samples/.+\.json")
MAX_EVENTS = 400
"""Events of one sample looked at for model and tool steps."""


def _each_sample(path: Path, take: Callable[[dict[str, Any]], None]) -> None:
    """Hand every sample of the log to ``take``, one at a time: archive members through
    SafeArchive, a JSON log through the Inspect reader's streaming walker (never parsed whole)."""
    with path.open("rb") as handle:
        is_archive = handle.read(4) == b"PK\x03\x04"
    if is_archive or path.suffix == ".eval":
        with SafeArchive(path, label="Inspect log") as archive:
            for member in sorted(name for name in archive.names() if _EPOCH_MEMBER.fullmatch(name)):
                try:
                    sample = json.loads(archive.read(member))
                except (ValueError, RecursionError):
                    continue
                if isinstance(sample, dict):
                    take(sample)
        return

    def on_sample(sample: object) -> None:
        if isinstance(sample, dict):
            take(sample)

    try:
        read_json_log(path, on_sample)
    except EvalArcError:
        return  # the diff already read this file; what was taken so far is shown


def _content_text(content: object) -> str:
    """A message's content as text: strings as they are, content parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict):
                for key in ("text", "reasoning", "refusal"):
                    value = part.get(key)
                    if isinstance(value, str):
                        parts.append(value)
                        break
                else:
                    parts.append(f"[{part.get('type', 'part')}]")
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, sort_keys=True, default=str)


def _message_steps(section: Section, messages: object, *, skip_input: bool) -> None:
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        if skip_input and message.get("source") == "input":
            continue
        role = str(message.get("role", "message"))
        label = role
        if role == "tool":
            label = f"tool result · {message.get('function') or message.get('tool_call_id', '')}"
        section.add(label, _content_text(message.get("content")))
        error = message.get("error")
        if error:
            section.add(f"{label} · error", error)
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                section.add(f"tool call · {call.get('function', '')}", call.get("arguments"))


def _event_steps(section: Section, events: object) -> None:
    for event in (events if isinstance(events, list) else [])[:MAX_EVENTS]:
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        if kind == "model":
            output = event.get("output") if isinstance(event.get("output"), dict) else {}
            facts = {
                "model": event.get("model"),
                "stop_reason": _stop_reason(output),
                "usage": output.get("usage") if isinstance(output, dict) else None,
            }
            section.add("model event", {k: v for k, v in facts.items() if v is not None})
            if event.get("error"):
                section.add("model event · error", event.get("error"))
        elif kind == "tool":
            section.add(f"tool event · {event.get('function', '')}", event.get("arguments"))
            section.add(f"tool event · {event.get('function', '')} · result", event.get("result"))
            if event.get("error"):
                section.add("tool event · error", event.get("error"))
        elif kind in ("error", "sample_limit"):
            section.add(f"{kind} event", event.get("error") or event.get("message") or event)


def _stop_reason(output: object) -> object:
    if not isinstance(output, dict):
        return None
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("stop_reason")
    return None


def _output_text(output: object) -> str | None:
    if not isinstance(output, dict):
        return None
    completion = output.get("completion")
    if isinstance(completion, str):
        return completion
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return _content_text(message.get("content"))
    return None


def epoch_verdict(scores: object, threshold: float) -> bool | None:
    """One epoch's verdict as the diff reads its checks: failed when any check fails, passed
    when every check passes, None otherwise (no scores, an error, only unassessed values)."""
    if not isinstance(scores, dict) or not scores:
        return None
    verdicts: list[bool | None] = []
    for score in scores.values():
        value = score.get("value") if isinstance(score, dict) else score
        parts = value.values() if isinstance(value, dict) else [value]
        verdicts.extend(passed_of(part, threshold) for part in parts)
    if False in verdicts:
        return False
    return True if verdicts and all(verdicts) else None


def _epoch_sections(sample: dict[str, Any], threshold: float) -> list[Section]:
    epoch = sample.get("epoch")
    prefix = f"Epoch {epoch}" if isinstance(epoch, int) else "Sample"
    sections: list[Section] = []
    output = Section(f"{prefix} · output")
    output.add("output", _output_text(sample.get("output")), pre=True)
    if isinstance(sample.get("output"), dict):
        output.add("stop reason", _stop_reason(sample["output"]))
        output.add("model error", sample["output"].get("error"))
    sections.append(output)
    scores = sample.get("scores")
    for scorer, score in sorted(scores.items()) if isinstance(scores, dict) else []:
        section = Section(f"{prefix} · scorer {scorer}")
        if isinstance(score, dict):
            section.add("value", score.get("value"))
            section.add("answer", score.get("answer"), pre=True)
            section.add("explanation", score.get("explanation"), pre=True)
            section.add("metadata", score.get("metadata"))
        else:
            section.add("value", score)
        sections.append(section)
    error = sample.get("error")
    if error:
        section = Section(f"{prefix} · error", tone="bad")
        if isinstance(error, dict):
            section.add("message", error.get("message"), pre=True)
            section.add("traceback", error.get("traceback"), pre=True)
        else:
            section.add("error", error, pre=True)
        sections.append(section)
    for retry, previous in enumerate(sample.get("error_retries") or [], start=1):
        if isinstance(previous, dict):
            section = Section(f"{prefix} · retried error {retry}", tone="warn")
            section.add("message", previous.get("message"), pre=True)
            section.add("traceback", previous.get("traceback"), pre=True)
            sections.append(section)
    transcript = Section(
        f"{prefix} · transcript",
        kind="transcript",
        attempt=f"epoch {epoch}" if isinstance(epoch, int) else "",
        passed=epoch_verdict(sample.get("scores"), threshold),
    )
    _message_steps(transcript, sample.get("messages"), skip_input=True)
    _event_steps(transcript, sample.get("events"))
    if transcript.items:
        sections.append(transcript)
    return sections


def _input_section(sample: dict[str, Any]) -> Section:
    task = Section("Input")
    source_input = sample.get("input")
    if isinstance(source_input, list):
        for message in source_input:
            if isinstance(message, dict):
                role = str(message.get("role", "message"))
                task.add(role, _content_text(message.get("content")))
    else:
        task.add("input", source_input)
    task.add("target", sample.get("target"))
    task.add("metadata", sample.get("metadata"))
    return task


def read_inspect_evidence(
    path: Path, only: Collection[str] | None = None, threshold: float = 1.0
) -> CaseEvidence:
    """Evidence for every sample id in the log (``only``: these ids alone): its input, then each
    epoch in epoch order, each transcript knowing its epoch's verdict at ``threshold`` (the
    diff's), which pairs the attempts a divergence compares."""
    inputs: dict[str, Section] = {}
    epochs: dict[str, list[tuple[int, list[Section]]]] = {}

    def take(sample: dict[str, Any]) -> None:
        raw = sample.get("id")
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            return
        case_id = raw if isinstance(raw, str) else str(raw)
        if only is not None and case_id not in only:
            return
        epoch = sample.get("epoch")
        number = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0
        if case_id not in inputs:
            inputs[case_id] = _input_section(sample)
        epochs.setdefault(case_id, []).append((number, _epoch_sections(sample, threshold)))

    _each_sample(path, take)
    found: CaseEvidence = {}
    for case_id, section in inputs.items():
        side = found[case_id] = SideEvidence()
        side.add(section)
        for _, sections in sorted(epochs[case_id], key=lambda pair: pair[0]):
            for epoch_section in sections:
                side.add(epoch_section)
    return found
