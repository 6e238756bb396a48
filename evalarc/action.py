"""The GitHub Action's decision step: read ``diff.json``, set step outputs, annotate, decide.

``action.yml`` runs ``evalarc diff`` and then ``python -m evalarc.action gate``. This module turns
the report into what GitHub shows: step outputs (written to ``$GITHUB_OUTPUT``), one ``::warning``
per blocking change (up to a cap), and a final ``::error`` when the step fails.

Everything shown comes from result files written by others, so every workflow command is escaped
the way GitHub's runner unescapes it: in messages ``%`` -> ``%25``, CR -> ``%0D``, LF -> ``%0A``;
in properties also ``:`` -> ``%3A`` and ``,`` -> ``%2C``. A hostile case id therefore stays inside
its own annotation and cannot start a new workflow command. Outputs use the delimited
(``name<<DELIMITER``) form with a random delimiter, so a value cannot add another output.
The lines ``evalarc diff`` itself prints in the same log never start a workflow command with
input text either (:func:`evalarc.terminal.neutralize_workflow_commands`).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from evalarc.errors import EvalArcError
from evalarc.formats.jsonstream import (
    STRICT_DECODER,
    CapExceeded,
    TextWindow,
    array_items,
    object_members,
)
from evalarc.review.diff_model import BLOCKING_KINDS, SIDES, DiffReport, SideTally
from evalarc.terminal import neutralize_workflow_commands

MAX_ANNOTATIONS = 10
"""Blocking changes (and, separately, leakage hits) annotated at most; the rest are counted."""

REPORT_FILE = "diff.json"
OUTPUT_NAMES = (
    "gate-passed",
    "passed",
    "blocking-changes",
    "report",
    "generalization-state",
    "leakage-hits",
    "cost-ratio",
)


# -- escaping -----------------------------------------------------------------------------------


_OTHER_LINE_BREAKS = frozenset("\x85\u2028\u2029")


def _fold_controls(text: str) -> str:
    """Replace control characters other than tab/CR/LF, and the Unicode line breaks some viewers
    honour (NEL, U+2028, U+2029), with spaces; CR and LF are escaped afterwards."""
    return "".join(
        " "
        if (ord(char) < 32 and char not in "\t\r\n")
        or ord(char) == 127
        or char in _OTHER_LINE_BREAKS
        else char
        for char in text
    )


def escape_data(value: object) -> str:
    """A workflow-command message: ``%``, CR and LF escaped, so it stays one command."""
    text = _fold_controls(str(value))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: object) -> str:
    """A workflow-command property value: as a message, plus ``:`` and ``,``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: object, **properties: object) -> str:
    """``::command key=value,...::message`` with every part escaped (keys are ours, fixed)."""
    props = ",".join(
        f"{key}={escape_property(value)}" for key, value in properties.items() if value is not None
    )
    head = f"::{command} {props}" if props else f"::{command}"
    return f"{head}::{escape_data(message)}"


def output_block(name: str, value: str, delimiter: str | None = None) -> str:
    """One ``$GITHUB_OUTPUT`` entry in the delimited form, which carries any value safely."""
    marker = delimiter or f"ghadelimiter_{uuid.uuid4()}"
    if marker in value or marker in name:
        raise ValueError("output delimiter occurs in the value")
    return f"{name}<<{marker}\n{value}\n{marker}\n"


# -- what the report says -----------------------------------------------------------------------


@dataclass
class GateResult:
    """What the gate step writes and prints, and the exit code of the step."""

    outputs: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    exit_code: int = 0


def _fraction(side: SideTally | None) -> str:
    if side is None:
        return "absent"
    return f"{side.passed}/{side.assessed}"


def _ratio_text(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return ""
    return f"{round(float(value), 6):g}" if abs(value) < 1e15 else str(value)


def report_outputs(report: DiffReport, report_dir: str) -> dict[str, str]:
    """The step outputs: the quality gate, the overall decision, counts and optional states."""
    generalization = report.generalization
    leakage = report.leakage
    cost = report.cost_gate
    return {
        "gate-passed": "true" if report.gate_passed else "false",
        "passed": "true" if report.passed else "false",
        "blocking-changes": str(report.blocking_changes),
        "report": report_dir,
        "generalization-state": generalization.state if generalization is not None else "",
        "leakage-hits": str(len(leakage.hits)) if leakage is not None else "",
        "cost-ratio": _ratio_text(cost.ratio) if cost is not None else "",
    }


def blocking_annotations(report: DiffReport, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """One warning per blocking change (up to ``limit``), then one line counting the rest."""
    commands: list[str] = []
    for row in itertools.islice(report.blocking_rows(), limit):
        kind = row.kind
        message = (
            f"{row.case_id} / {row.check}: passed "
            f"{_fraction(row.baseline)} -> {_fraction(row.current)}"
        )
        if row.within_sampling_noise:
            message += " (within sampling noise; the gate still fails)"
        commands.append(
            workflow_command("warning", message, title=f"EvalArc {kind.replace('_', ' ')}")
        )
    if report.blocking_changes > limit:
        commands.append(
            workflow_command(
                "warning",
                f"{report.blocking_changes - limit} more blocking change(s) are listed in "
                f"{REPORT_FILE}",
                title="EvalArc",
            )
        )
    return commands


def other_annotations(report: DiffReport, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """Warnings for unfinished runs, the held-out state, leakage hits and a failed cost gate."""
    commands: list[str] = []
    for side in SIDES:
        if report.incomplete(side):
            status = report.side(side).identity.get("status")
            commands.append(
                workflow_command(
                    "warning",
                    f"the {side} run did not finish (status {status}); the gate fails",
                    title=f"EvalArc incomplete {side}",
                )
            )
    generalization = report.generalization
    if generalization is not None and generalization.state != "generalizes":
        commands.append(
            workflow_command(
                "warning",
                generalization.explanation,
                title=f"EvalArc held-out: {generalization.state}",
            )
        )
    leakage = report.leakage
    if leakage is not None:
        hits = leakage.hits
        for hit in hits[:limit]:
            commands.append(
                workflow_command(
                    "warning",
                    f"{hit.role} of case {hit.case_id} "
                    f"({hit.partition or 'no split'}) appears verbatim: {hit.text}",
                    title="EvalArc harness leakage",
                    file=hit.file,
                    line=hit.line,
                )
            )
        if len(hits) > limit:
            commands.append(
                workflow_command(
                    "warning",
                    f"{len(hits) - limit} more leakage hit(s) are listed in {REPORT_FILE}",
                    title="EvalArc harness leakage",
                )
            )
    cost = report.cost_gate
    if cost is not None and not cost.passed:
        commands.append(
            workflow_command(
                "warning",
                f"{cost.metric}: current/baseline {_ratio_text(cost.ratio)} "
                f"exceeds the limit {cost.max_ratio}",
                title="EvalArc cost gate failed",
            )
        )
    return commands


MAX_REASON_CHARS = 600
"""How much of evalarc diff's own refusal is repeated in the final error."""


def diff_reason(stderr: str) -> str | None:
    """The refusal ``evalarc diff`` printed (its last ``evalarc: ...`` line), if any."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("evalarc: "):
            reason = line[len("evalarc: ") :].strip()
            if len(reason) > MAX_REASON_CHARS:
                reason = reason[:MAX_REASON_CHARS] + "…"
            return reason or None
    return None


def failed_gates(report: DiffReport) -> list[str]:
    """Each gate that failed, in words (empty when every gate passed)."""
    failed: list[str] = []
    blocking = report.blocking_changes
    if blocking:
        failed.append(f"{blocking} check(s) lost passes or coverage")
    for side in SIDES:
        if report.incomplete(side):
            failed.append(f"the {side} run did not finish")
    if report.generalization_passed is False:
        state = report.generalization.state if report.generalization is not None else None
        failed.append(f"the required generalization was not shown (held-out state {state})")
    cost = report.cost_gate
    if cost is not None and not cost.passed:
        failed.append(
            f"the cost gate on {cost.metric} failed: current/baseline "
            f"{_ratio_text(cost.ratio)} exceeds {cost.max_ratio}"
        )
    return failed


def decide(
    report_dir: str,
    diff_exit: int,
    fail_on_regression: bool,
    read_report: Callable[[Path], object] | None = None,
    diff_stderr: str = "",
) -> GateResult:
    """Everything the gate step does, as data: outputs, workflow commands, exit code."""
    result = GateResult()
    if diff_exit not in (0, 1):
        reason = diff_reason(diff_stderr)
        message = (
            f"the result files could not be compared (evalarc diff exited {diff_exit}): {reason}"
            if reason
            else f"result files could not be compared (evalarc diff exited {diff_exit}); "
            "the messages above say why"
        )
        result.commands.append(workflow_command("error", message, title="EvalArc"))
        result.exit_code = 2
        return result
    try:
        value = (read_report or _read_report)(Path(report_dir) / REPORT_FILE)
        report = DiffReport.from_json(value, REPORT_FILE)
    except (OSError, ValueError, RecursionError, EvalArcError) as error:
        result.commands.append(
            workflow_command(
                "error", f"cannot read {REPORT_FILE} in {report_dir}: {error}", title="EvalArc"
            )
        )
        result.exit_code = 2
        return result
    result.outputs = report_outputs(report, report_dir)
    result.commands.extend(blocking_annotations(report))
    result.commands.extend(other_annotations(report))
    if diff_exit == 1:
        failed = failed_gates(report) or ["a gate failed"]
        message = f"{'; '.join(failed)}; the report is in {report_dir}"
        if fail_on_regression:
            result.commands.append(workflow_command("error", message, title="EvalArc gate failed"))
            result.exit_code = 1
        else:
            result.commands.append(
                workflow_command(
                    "notice",
                    message + " (fail-on-regression is false, so the step passes)",
                    title="EvalArc gate failed",
                )
            )
    return result


def _read_report(path: Path, keep_blocking: int = MAX_ANNOTATIONS) -> object:
    """diff.json as this step uses it, read as a stream (a diff of half a million vanished
    checks writes 225 MB): every member but the rows and the groups; of the rows, the first
    ``keep_blocking`` blocking ones (the step annotates no more, and counts the rest from
    ``blocking_changes``); of the groups, their counts and note. Memory follows one row."""
    value: dict[str, object] = {}
    with path.open("rb") as handle:
        window = TextWindow(handle, STRICT_DECODER)
        try:
            for key in object_members(window):
                if key == "changes":
                    rows: list[object] = []
                    for _ in array_items(window):
                        row = window.value()
                        blocking = isinstance(row, dict) and row.get("kind") in BLOCKING_KINDS
                        if blocking and len(rows) < keep_blocking:
                            rows.append(row)
                    value[key] = rows
                elif key == "groups":
                    groups: dict[str, object] = {}
                    for member in object_members(window):
                        if member in ("clusters", "presence"):
                            window.jump()
                            groups[member] = []
                        else:
                            groups[member] = window.value()
                    value[key] = groups
                else:
                    value[key] = window.value()
            window.finish()
        except CapExceeded as error:
            raise ValueError(str(error)) from None
    return value


# -- entry point --------------------------------------------------------------------------------


def write_outputs(outputs: Sequence[tuple[str, str]], path: str | None, stream: TextIO) -> None:
    """Append outputs to ``$GITHUB_OUTPUT``; without it (a local run) print them instead."""
    if not path:
        for name, value in outputs:
            stream.write(neutralize_workflow_commands(f"{name}={escape_data(value)}") + "\n")
        return
    blocks = "".join(output_block(name, value) for name, value in outputs)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(blocks)


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evalarc.action", description="Steps of EvalArc's GitHub Action."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    gate = commands.add_parser("gate", help="Outputs, annotations and the step's exit code.")
    gate.add_argument("--report", required=True, help="The folder evalarc diff wrote.")
    gate.add_argument("--diff-exit", required=True, type=int, help="evalarc diff's exit code.")
    gate.add_argument("--fail-on-regression", type=_parse_bool, default=True)
    gate.add_argument("--diff-errors", default="", help="A file holding evalarc diff's stderr.")
    output = commands.add_parser("output", help="Set one step output safely.")
    output.add_argument("name", choices=["site", "report", "site-folder"])
    output.add_argument("value")
    args = parser.parse_args(argv)
    github_output = os.environ.get("GITHUB_OUTPUT")
    if args.command == "output":
        write_outputs([(args.name, args.value)], github_output, sys.stdout)
        return 0
    stderr = ""
    if args.diff_errors:
        try:
            with open(args.diff_errors, encoding="utf-8", errors="replace") as handle:
                stderr = handle.read(1 << 20)
        except OSError:
            stderr = ""
    result = decide(args.report, args.diff_exit, args.fail_on_regression, diff_stderr=stderr)
    write_outputs(list(result.outputs.items()), github_output, sys.stdout)
    for command in result.commands:
        print(command)
    sys.stdout.flush()
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
