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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import defusedxml.ElementTree as SafeElementTree

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence, item
from evalarc.formats.junit import SUITE_TAGS, scan_records
from evalarc.formats.junit_producers import record_case_ids
from evalarc.formats.load import load_results
from evalarc.formats.model import Attempt

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


def _testcases(path: Path) -> Iterator[list[Section]]:
    """Each testcase directly inside a suite, in document order, as its sections (attempt
    numbers are filled in by the caller); finished elements are dropped as the reader does."""
    stack: list[tuple[str, bool]] = []
    with path.open("rb") as handle:
        events = SafeElementTree.iterparse(
            handle,
            events=("start", "end"),
            forbid_dtd=True,
            forbid_entities=True,
            forbid_external=True,
        )
        for event, element in events:
            tag = _local(element.tag)
            if event == "start":
                parent_is_suite = bool(stack) and stack[-1][1]
                stack.append((tag, tag in SUITE_TAGS and (not stack or parent_is_suite)))
                continue
            _, _ = stack.pop()
            if tag == "testcase" and stack and stack[-1][1]:
                yield _testcase_sections(element, 0)
                element.clear()
            elif tag in SUITE_TAGS:
                element.clear()


def read_junit_evidence(path: Path) -> CaseEvidence:
    """Evidence for every testcase id, attempts (repeated elements) in document order."""
    try:
        with path.open("rb") as handle:
            facts, records = scan_records(handle, path.name)
        ids = record_case_ids(facts, records)
        found: CaseEvidence = {}
        attempts: dict[str, int] = {}
        count = 0
        for case_id, sections in zip(ids, _testcases(path), strict=False):
            count += 1
            attempts[case_id] = attempts.get(case_id, 0) + 1
            side = found.setdefault(case_id, SideEvidence())
            number = attempts[case_id]
            for section in sections:
                section.title = section.title.replace("Attempt 0", f"Attempt {number}", 1)
                side.add(section)
        run = load_results(path, "junit")
    except (EvalArcError, ElementTree.ParseError, ValueError, OSError):
        return {}
    if count != len(ids):
        return {}
    for case_id, side in found.items():
        _show_verdicts(side, run.cases.get(case_id, {}))
    return found


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
