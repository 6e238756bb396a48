"""Case evidence from a JUnit XML file: per ``<testcase>`` element (a rerun is another element
or a rerun child), the failure or error type and message, the stack trace, system-out and
system-err, and each rerun attempt. The file is parsed with the JUnit reader's hardened parser
and case ids come from its :func:`evalarc.formats.junit.case_id_of`, so they match the diff."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence
from evalarc.formats.junit import case_id_of, parse_junit_bytes

SUITE_TAGS = frozenset({"testsuite", "testsuites"})
OUTCOME_TAGS = (
    "failure",
    "error",
    "skipped",
    "rerunFailure",
    "rerunError",
    "flakyFailure",
    "flakyError",
)
_TONES = {"failure": "bad", "error": "bad", "rerunFailure": "bad", "rerunError": "bad"}


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _testcases(root: ElementTree.Element) -> Iterator[tuple[ElementTree.Element, str]]:
    """(testcase, suite name) in document order, like the reader's own walk."""

    def suite(element: ElementTree.Element) -> str:
        return (element.get("name") or "") if _local(element.tag) == "testsuite" else ""

    stack = [(iter(root), True, suite(root))]
    while stack:
        children, is_suite, name = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        tag = _local(child.tag)
        if tag == "testcase":
            if is_suite:
                yield child, name
            continue
        stack.append((iter(child), tag in SUITE_TAGS, suite(child)))


def _attempt_sections(testcase: ElementTree.Element, attempt: int) -> list[Section]:
    outcome = "passed"
    details: list[Section] = []
    for child in testcase:
        tag = _local(child.tag)
        if tag in OUTCOME_TAGS:
            if outcome == "passed":
                outcome = tag
            section = Section(f"Attempt {attempt} · {tag}", tone=_TONES.get(tag, "warn"))
            section.add("type", child.get("type"))
            section.add("message", child.get("message"), pre=True)
            section.add("stack trace", (child.text or "").strip(), pre=True)
            for grandchild in child:
                name = _local(grandchild.tag)
                if name in ("system-out", "system-err", "stackTrace"):
                    section.add(name, grandchild.text or "", pre=True)
            details.append(section)
        elif tag in ("system-out", "system-err"):
            section = Section(f"Attempt {attempt} · {tag}")
            section.add(tag, child.text or "", pre=True)
            details.append(section)
    head = Section(
        f"Attempt {attempt}",
        tone="ok" if outcome == "passed" else _TONES.get(outcome, "warn"),
    )
    # classname and name are the case id shown above the view.
    head.add("outcome", outcome)
    head.add("file", testcase.get("file"))
    head.add("time (s)", testcase.get("time"))
    return [head, *details]


def read_junit_evidence(path: Path) -> CaseEvidence:
    """Evidence for every testcase id, attempts (repeated elements) in document order."""
    try:
        root = parse_junit_bytes(path.read_bytes(), path.name)
    except EvalArcError:
        return {}
    found: CaseEvidence = {}
    attempts: dict[str, int] = {}
    for testcase, suite_name in _testcases(root):
        case_id = case_id_of(testcase, suite_name)
        attempts[case_id] = attempts.get(case_id, 0) + 1
        side = found.setdefault(case_id, SideEvidence())
        for section in _attempt_sections(testcase, attempts[case_id]):
            side.add(section)
    return found
