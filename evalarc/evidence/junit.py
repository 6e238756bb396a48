"""Case evidence from a JUnit XML file: per ``<testcase>`` element (a rerun is another element
or a rerun child), the failure or error type and message, the stack trace, system-out and
system-err, and each rerun attempt.

Case ids must be the diff's: the JUnit reader's own scan (with its caps, under defusedxml) gives
the records, :func:`evalarc.formats.junit_producers.record_case_ids` names each record exactly as
:func:`evalarc.formats.junit_producers.read_cases` does. A second streaming pass, in the
same document order, keeps each testcase's bounded details; if the two passes disagree on the
number of testcases, no evidence is shown rather than evidence under the wrong case.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path

import defusedxml.ElementTree as SafeElementTree

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence, item
from evalarc.formats.junit import SUITE_TAGS, message_text, scan_records, xml_documents
from evalarc.formats.junit_producers import read_cases, record_case_ids
from evalarc.formats.model import Attempt, Run

OUTCOME_ORDER = (
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


def _testcase_sections(testcase: ElementTree.Element, attempt: int) -> list[Section]:
    outcome = "passed"
    details: list[Section] = []
    for child in testcase:
        tag = _local(child.tag)
        if tag in OUTCOME_ORDER:
            if outcome == "passed":
                outcome = tag
            section = Section(f"Attempt {attempt} · {tag}", tone=_TONES.get(tag, "warn"))
            section.add("type", child.get("type"))
            message = child.get("message")
            # Robot Framework's *HTML* messages are shown as the text they mean, not markup.
            section.add("message", message_text(message) if message else message, pre=True)
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


def _testcases(path: Path) -> Iterator[ElementTree.Element]:
    """Each testcase directly inside a suite, in document order, in every XML document of the
    file (cargo libtest writes one per test binary); the element is cleared once the caller
    moves on, as the reader drops finished elements."""
    stack: list[tuple[ElementTree.Element, bool]] = []
    with path.open("rb") as handle:
        documents = xml_documents(handle, path.name)
        while True:
            events = SafeElementTree.iterparse(
                documents,
                events=("start", "end"),
                forbid_dtd=True,
                forbid_entities=True,
                forbid_external=True,
            )
            for event, element in events:
                tag = _local(element.tag)
                if event == "start":
                    parent_is_suite = bool(stack) and stack[-1][1]
                    stack.append((element, tag in SUITE_TAGS and (not stack or parent_is_suite)))
                    continue
                stack.pop()
                if tag == "testcase" and stack and stack[-1][1]:
                    yield element
                    element.clear()
                    # A finished testcase leaves its suite too (every later one arrives through
                    # its own event), or a suite of half a million keeps every emptied element.
                    del stack[-1][0][:]
                elif tag in SUITE_TAGS:
                    element.clear()
            if not documents.next_document():
                return


def read_junit_evidence(
    path: Path, only: Collection[str] | None = None, run: Run | None = None
) -> CaseEvidence:
    """Evidence for every testcase id (``only``: these ids alone), attempts (repeated elements)
    in document order, each with the verdict the diff counted.

    ``run`` is the file already read (the diff's own run): when it has one test per element,
    the tests in document order are the elements in document order, so one streaming pass
    names them; otherwise the reader's scan names each element."""
    tests: Mapping[str, Mapping[str, Sequence[Attempt]]]
    try:
        found = None
        if run is not None and run.format == "junit":
            tests = run.cases
            found = _evidence(iter(tests), len(tests), path, only)
        if found is None:
            with path.open("rb") as handle:
                facts, records = scan_records(handle, path.name)
            ids = record_case_ids(facts, records)
            _, tests = read_cases(facts, records)
            del records
            found = _evidence(iter(ids), len(ids), path, only)
    except (EvalArcError, ElementTree.ParseError, ValueError, OSError):
        return {}
    if found is None:
        return {}
    for case_id, side in found.items():
        _show_verdicts(side, tests.get(case_id, {}))
    return found


def _evidence(
    ids: Iterator[str], count: int, path: Path, only: Collection[str] | None
) -> CaseEvidence | None:
    """The evidence of each element named by ``ids`` in document order; None when the file
    holds another number of elements than the ``count`` ids (never evidence under the wrong
    case)."""
    found: CaseEvidence = {}
    attempts: dict[str, int] = {}
    elements = 0
    for testcase in _testcases(path):
        elements += 1
        case_id = next(ids, None)
        if case_id is None:
            return None
        if only is not None and case_id not in only:
            continue
        attempts[case_id] = attempts.get(case_id, 0) + 1
        side = found.setdefault(case_id, SideEvidence())
        for section in _testcase_sections(testcase, attempts[case_id]):
            side.add(section)
    return found if elements == count else None


def _verdict_text(attempt: Attempt) -> str:
    shown = {True: "passed", False: "failed", None: "unassessed"}[attempt.passed]
    return f"{shown} (a rerun of a failed attempt)" if attempt.rerun else shown


def _show_verdicts(side: SideEvidence, checks: Mapping[str, Sequence[Attempt]]) -> None:
    """Put the diff's own verdict on each attempt's head section. A testcase element with no
    child reads as a pass, but pytest-rerunfailures writes a failed attempt that it reran
    exactly so: the case view must say what the gate counted, never the bare element. When the
    attempts do not pair one to one with the elements, the element's own outcome is labelled as
    such and the verdicts are listed in one section."""
    heads = [section for section in side.sections if section.title.startswith("Attempt ")]
    heads = [section for section in heads if " · " not in section.title]
    attempts = next(iter(checks.values())) if len(checks) == 1 else []
    if attempts and len(attempts) == len(heads):
        for head, attempt in zip(heads, attempts, strict=True):
            for index, entry in enumerate(head.items):
                if entry.label == "outcome":
                    head.items[index] = item("outcome", _verdict_text(attempt))
            head.tone = {True: "ok", False: "bad", None: "warn"}[attempt.passed]
        return
    for head in heads:
        for index, entry in enumerate(head.items):
            if entry.label == "outcome":
                head.items[index] = item("element outcome", entry.text)
    if attempts:
        summary = Section("Attempts as the diff counts them")
        for number, attempt in enumerate(attempts, start=1):
            summary.add(f"attempt {number}", _verdict_text(attempt))
        side.sections.insert(0, summary)
