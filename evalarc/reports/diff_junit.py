"""``evalarc diff --junit FILE``: the diff as JUnit XML, so CI shows lost passes as failed tests.

Every (case, check) pair the diff compared becomes one ``<testcase>`` (classname = case id,
name = check). A blocking change is a ``<failure>`` whose ``type`` is the change kind; every other
compared check (improved, added, unchanged) passes. A second suite, ``evalarc gates``, holds the
conditions that fail the exit code without a blocking row: an unfinished run, a required
generalization that was not shown, a failed cost gate. So the number of failed tests is never
zero when ``evalarc diff`` exits 1.

Case ids, check names and evidence come from result files written by others. ElementTree escapes
markup (``& < > "``); characters XML 1.0 cannot carry at all (NUL, ESC, lone surrogates, ...) are
replaced by a visible ``\\xNN``/``\\uNNNN`` escape, so the file always parses.
"""

from __future__ import annotations

import os
import re
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evalarc.errors import OutputError
from evalarc.formats.model import Attempt, Run
from evalarc.review.diff_model import BLOCKING_KINDS, SIDES, ChangeRow, DiffReport, SideTally
from evalarc.review.pairing import Tally, tally

SUITES_NAME = "evalarc diff"
CHECKS_SUITE = "evalarc checks"
GATES_SUITE = "evalarc gates"
GATES_CLASSNAME = "evalarc.gates"
MAX_EVIDENCE_ITEMS = 5
"""Attempt evidence lines quoted inside one failure, at most."""

_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(value: object) -> str:
    """``value`` as text XML 1.0 can hold: forbidden characters become visible escapes."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group(0))
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _XML_INVALID.sub(escape, str(value))


@dataclass(frozen=True)
class JunitCase:
    """One testcase of the output: a compared check, or one gate condition."""

    classname: str
    name: str
    failure_type: str | None
    """None when the testcase passes; the change kind (or gate id) when it fails."""
    message: str
    detail: str


def _fraction(side: SideTally | Tally | None) -> str:
    if side is None:
        return "absent"
    passed, assessed, attempts = side.passed, side.assessed, side.attempts
    text = f"{passed}/{assessed} passed"
    if attempts != assessed:
        text += f" ({attempts - assessed} unassessed)"
    return text


def _evidence_lines(row: ChangeRow) -> list[str]:
    lines: list[str] = []
    for side in SIDES:
        for attempt in row.detail(side):
            if len(lines) >= MAX_EVIDENCE_ITEMS:
                return lines
            verdict = {True: "pass", False: "fail", None: "unassessed"}[attempt.passed]
            text = f"{side} attempt: {verdict}"
            if attempt.value is not None:
                text += f", value {attempt.value!r}"
            if attempt.evidence:
                text += f", evidence {attempt.evidence}"
            lines.append(text)
    return lines


def _change_case(row: ChangeRow) -> JunitCase:
    kind = row.kind
    label = kind.replace("_", " ")
    message = f"{label}: {_fraction(row.baseline)} -> {_fraction(row.current)}"
    notes: list[str] = []
    if row.within_sampling_noise:
        notes.append("within sampling noise (the gate still fails)")
    if row.same_output_different_verdict:
        notes.append(f"{row.same_output_different_verdict} recorded output(s) got both verdicts")
    if notes:
        message += "; " + "; ".join(notes)
    detail = "\n".join([message, *_evidence_lines(row)])
    return JunitCase(
        classname=row.case_id,
        name=row.check,
        failure_type=kind if kind in BLOCKING_KINDS else None,
        message=message,
        detail=detail,
    )


def _unchanged_case(case_id: str, check: str, baseline: Tally, current: Tally) -> JunitCase:
    message = f"unchanged: {_fraction(baseline)} -> {_fraction(current)}"
    return JunitCase(case_id, check, None, message, message)


def check_cases(report: DiffReport, baseline: Run, current: Run) -> Iterator[JunitCase]:
    """One testcase per compared (case, check), in (case, check) order.

    Listed changes come from the report itself; the pairs it only counted as unchanged are
    tallied from the runs, with the same tally the diff used.
    """
    rows = {(row.case_id, row.check): row for row in report.changes}
    empty: dict[str, list[Attempt]] = {}
    for case_id in sorted(baseline.cases.keys() | current.cases.keys()):
        base_checks = baseline.cases.get(case_id, empty)
        cur_checks = current.cases.get(case_id, empty)
        for check in sorted(base_checks.keys() | cur_checks.keys()):
            row = rows.get((case_id, check))
            if row is not None:
                yield _change_case(row)
                continue
            yield _unchanged_case(
                case_id, check, tally(base_checks[check]), tally(cur_checks[check])
            )


def gate_cases(report: DiffReport) -> list[JunitCase]:
    """The gate conditions that are not a change row, as testcases."""
    cases: list[JunitCase] = []
    for side in SIDES:
        key = f"{side}_incomplete"
        status = report.side(side).identity.get("status")
        if report.incomplete(side):
            message = f"the {side} run did not finish (status {status!r}); the gate fails"
            cases.append(JunitCase(GATES_CLASSNAME, f"{side} run finished", key, message, message))
        else:
            message = f"the {side} run finished"
            cases.append(JunitCase(GATES_CLASSNAME, f"{side} run finished", None, message, message))
    if report.generalization_passed is not None:
        state = report.generalization.state if report.generalization is not None else None
        hits = report.leakage.held_out_hits if report.leakage is not None else 0
        message = f"held-out state {state!r}, {hits} held-out leakage hit(s)"
        failed = not report.generalization_passed
        cases.append(
            JunitCase(
                GATES_CLASSNAME,
                "required generalization",
                "generalization_not_shown" if failed else None,
                message,
                message,
            )
        )
    cost = report.cost_gate
    if cost is not None:
        message = f"{cost.metric}: current/baseline {cost.ratio!r}, limit {cost.max_ratio!r}"
        failed = not cost.passed
        cases.append(
            JunitCase(
                GATES_CLASSNAME,
                "cost gate",
                "cost_gate_failed" if failed else None,
                message,
                message,
            )
        )
    return cases


def _suite(name: str, cases: list[JunitCase]) -> ElementTree.Element:
    failures = sum(1 for case in cases if case.failure_type is not None)
    suite = ElementTree.Element(
        "testsuite",
        {
            "name": name,
            "tests": str(len(cases)),
            "failures": str(failures),
            "errors": "0",
            "skipped": "0",
            "time": "0",
        },
    )
    for case in cases:
        element = ElementTree.SubElement(
            suite,
            "testcase",
            {"classname": xml_safe(case.classname), "name": xml_safe(case.name), "time": "0"},
        )
        if case.failure_type is not None:
            failure = ElementTree.SubElement(
                element,
                "failure",
                {"type": xml_safe(case.failure_type), "message": xml_safe(case.message)},
            )
            failure.text = xml_safe(case.detail)
        else:
            out = ElementTree.SubElement(element, "system-out")
            out.text = xml_safe(case.detail)
    return suite


def junit_document(report: DiffReport, baseline: Run, current: Run) -> bytes:
    """The complete JUnit XML (UTF-8, with declaration) for one diff; deterministic."""
    checks = list(check_cases(report, baseline, current))
    gates = gate_cases(report)
    check_suite = _suite(CHECKS_SUITE, checks)
    properties = ElementTree.Element("properties")
    base_name = report.baseline.source.name
    cur_name = report.current.source.name
    for name, value in (
        ("baseline", base_name),
        ("baseline_sha256", report.baseline.source.sha256),
        ("current", cur_name),
        ("current_sha256", report.current.source.sha256),
        ("format", report.format),
        ("blocking_changes", report.blocking_changes),
        ("gate_passed", str(report.gate_passed).lower()),
        ("passed", str(report.passed).lower()),
    ):
        ElementTree.SubElement(properties, "property", {"name": name, "value": xml_safe(value)})
    check_suite.insert(0, properties)
    all_cases = checks + gates
    root = ElementTree.Element(
        "testsuites",
        {
            "name": xml_safe(f"{SUITES_NAME}: {base_name} -> {cur_name}"),
            "tests": str(len(all_cases)),
            "failures": str(sum(1 for case in all_cases if case.failure_type is not None)),
            "errors": "0",
            "skipped": "0",
            "time": "0",
        },
    )
    root.append(check_suite)
    root.append(_suite(GATES_SUITE, gates))
    ElementTree.indent(root, space="  ")
    body = ElementTree.tostring(root, encoding="unicode", short_empty_elements=True)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n").encode("utf-8")


def write_junit(path: Path, report: DiffReport, baseline: Run, current: Run) -> None:
    """Write the JUnit XML to ``path`` (replacing a previous file) via a temporary sibling, so a
    CI reader never sees half a file."""
    data = junit_document(report, baseline, current)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"cannot write JUnit XML to {path}: it is a folder")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=parent)
    except OSError as error:
        raise OutputError(f"cannot write JUnit XML to {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(f"cannot write JUnit XML to {path}: {error.strerror or error}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
