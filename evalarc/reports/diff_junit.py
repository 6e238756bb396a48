"""``evalarc diff --junit FILE``: the diff as JUnit XML, so CI shows lost passes as failed tests.

Every (case, check) pair the diff compared becomes one ``<testcase>`` (classname = case id,
name = check). A blocking change is a ``<failure>`` whose ``type`` is the change kind; every other
compared check (improved, added, unchanged) passes. A second suite, ``evalarc gates``, holds the
conditions that fail the exit code without a blocking row: an unfinished run, a required
generalization that was not shown, a failed cost gate. So the number of failed tests is never
zero when ``evalarc diff`` exits 1.

Case ids, check names and evidence come from result files written by others. ElementTree escapes
markup (``& < > "``); characters XML 1.0 cannot carry at all (NUL, ESC, lone surrogates, ...) are
replaced by a visible ``\\xNN``/``\\uNNNN`` escape, so the file always parses. In a testcase's
classname and name a backslash is doubled as well (:func:`junit_name`): otherwise a case id
holding ESC and another holding the four characters ``\\x1b`` would become one test name, and
CI would show two compared checks as one.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from evalarc.formats.model import Attempt, Run
from evalarc.review.diff_model import BLOCKING_KINDS, SIDES, ChangeRow, DiffReport, SideTally
from evalarc.review.pairing import Tally, pair_row, tally

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


def junit_name(value: object) -> str:
    """A case id or check name as a testcase's classname or name: :func:`xml_safe` with every
    backslash doubled first, so distinct ids stay distinct (the escapes cannot be confused with
    text that spells them). An id without a backslash or a forbidden character is unchanged."""
    return xml_safe(str(value).replace("\\", "\\\\"))


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


def check_cases(baseline: Run, current: Run) -> Iterator[JunitCase]:
    """One testcase per compared (case, check), in (case, check) order, made as it is read: a
    change from its row (:func:`evalarc.review.pairing.pair_row`, the diff's own pairing), an
    unchanged pair from both sides' tallies."""
    case_ids = list(baseline.cases)
    case_ids.extend(case_id for case_id in current.cases if case_id not in baseline.cases)
    case_ids.sort()
    empty: dict[str, list[Attempt]] = {}
    for case_id in case_ids:
        base_checks = baseline.cases.get(case_id, empty)
        cur_checks = current.cases.get(case_id, empty)
        for check in sorted(base_checks.keys() | cur_checks.keys()):
            row = pair_row(baseline, current, case_id, check)
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


_INDENT = "  "


def _testcase_text(case: JunitCase) -> str:
    """One ``<testcase>`` as it stands in the document (two levels deep, indented as
    ``ElementTree.indent`` indents the whole tree)."""
    element = ElementTree.Element(
        "testcase",
        {"classname": junit_name(case.classname), "name": junit_name(case.name), "time": "0"},
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
    ElementTree.indent(element, space=_INDENT, level=2)
    return ElementTree.tostring(element, encoding="unicode", short_empty_elements=True)


def _start_tag(tag: str, attributes: dict[str, str]) -> str:
    """A start tag as ElementTree writes it (its own escaping), or the empty element."""
    text = ElementTree.tostring(
        ElementTree.Element(tag, attributes), encoding="unicode", short_empty_elements=False
    )
    return text[: -len(f"</{tag}>")]


def _suite_attributes(name: str, tests: int, failures: int) -> dict[str, str]:
    return {
        "name": name,
        "tests": str(tests),
        "failures": str(failures),
        "errors": "0",
        "skipped": "0",
        "time": "0",
    }


def write_junit_document(
    report: DiffReport, baseline: Run, current: Run, write: Callable[[str], object]
) -> None:
    """Write the JUnit XML of one diff through ``write`` (text, UTF-8 meant), testcase by
    testcase: the text ``ElementTree`` would give the whole tree (declaration, two-space
    indent), without ever holding it. Deterministic."""
    gates = gate_cases(report)
    checks = report.counts.total()
    failed_gates = sum(1 for case in gates if case.failure_type is not None)
    base_name = report.baseline.source.name
    cur_name = report.current.source.name
    write('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = _suite_attributes(
        xml_safe(f"{SUITES_NAME}: {base_name} -> {cur_name}"),
        checks + len(gates),
        report.blocking_changes + failed_gates,
    )
    write(_start_tag("testsuites", root) + "\n" + _INDENT)
    suite = _suite_attributes(CHECKS_SUITE, checks, report.blocking_changes)
    write(_start_tag("testsuite", suite) + "\n" + _INDENT * 2 + "<properties>")
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
        element = ElementTree.Element("property", {"name": name, "value": xml_safe(value)})
        write("\n" + _INDENT * 3 + ElementTree.tostring(element, encoding="unicode"))
    write("\n" + _INDENT * 2 + "</properties>")
    for case in check_cases(baseline, current):
        write("\n" + _INDENT * 2 + _testcase_text(case))
    write("\n" + _INDENT + "</testsuite>\n" + _INDENT)
    gate_suite = _suite_attributes(GATES_SUITE, len(gates), failed_gates)
    write(_start_tag("testsuite", gate_suite))
    for case in gates:
        write("\n" + _INDENT * 2 + _testcase_text(case))
    write("\n" + _INDENT + "</testsuite>\n</testsuites>\n")


def junit_document(report: DiffReport, baseline: Run, current: Run) -> bytes:
    """The complete JUnit XML (UTF-8, with declaration) for one diff, as bytes."""
    pieces: list[str] = []
    write_junit_document(report, baseline, current, pieces.append)
    return "".join(pieces).encode("utf-8")
