"""Read JUnit XML (pytest, node's test runner, mocha, Maven Surefire, ...) into the shared model.

Each ``<testcase>`` element is one attempt of the single check ``passed``; a case id written
several times (pytest-rerunfailures, concatenated suites) is one case with several attempts.
Outcomes come from the testcase's children only: suite counters such as ``failures="2"`` are
often stale or hand-edited, so they are never read.

XML from strangers is parsed with defusedxml: no DTD, no entities, no external references, and a
bounded element depth.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import defusedxml
import defusedxml.ElementTree as SafeElementTree

from evalarc.errors import InputError
from evalarc.formats.model import Attempt, Run, SampleMeta, Source, cut_evidence

CHECK_NAME = "passed"
MAX_DEPTH = 64
"""Deepest element nesting accepted; real reports nest suites a handful of levels."""

SUITE_TAGS = frozenset({"testsuites", "testsuite"})
_DTD_MARKERS = (b"<!DOCTYPE", b"<!ENTITY")
_DTD_MESSAGE = "JUnit XML with a DTD or entities is not accepted"
_ERROR_DETAIL_CHARS = 200
_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_DECLARED_ENCODING = re.compile(rb"^\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")


def read_junit(path: Path, source: Source, threshold: float) -> Run:
    """Read the JUnit XML file at ``path`` into a Run.

    Raises InputError naming the file for DTDs or entities, invalid UTF-8, malformed XML,
    nesting deeper than MAX_DEPTH, or a root that is neither ``testsuites`` nor ``testsuite``.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path.name} cannot be read: {error.strerror or error}") from None
    root = parse_junit_bytes(data, source.name)
    return build_junit_run(root, source, threshold)


def parse_junit_bytes(data: bytes, name: str) -> ElementTree.Element:
    """Parse untrusted JUnit XML bytes safely and return the root element."""
    if any(marker in data for marker in _DTD_MARKERS):
        raise InputError(f"{name}: {_DTD_MESSAGE}")
    _require_utf8(data, name)
    root: ElementTree.Element | None = None
    depth = 0
    try:
        events = SafeElementTree.iterparse(
            _WholeBuffer(data),
            events=("start", "end"),
            forbid_dtd=True,
            forbid_entities=True,
            forbid_external=True,
        )
        for event, element in events:
            if event == "end":
                depth -= 1
                continue
            depth += 1
            if depth > MAX_DEPTH:
                raise InputError(f"{name} nests elements deeper than {MAX_DEPTH} levels")
            if root is None:
                root = element
    except defusedxml.DefusedXmlException:
        raise InputError(f"{name}: {_DTD_MESSAGE}") from None
    except (ElementTree.ParseError, LookupError, ValueError) as error:
        detail = str(error)[:_ERROR_DETAIL_CHARS] or type(error).__name__
        raise InputError(f"{name} is not JUnit XML: {detail}") from None
    if root is None:  # pragma: no cover - expat reports an empty document as a ParseError
        raise InputError(f"{name} is not JUnit XML: no root element")
    tag = _local_name(root.tag)
    if tag not in SUITE_TAGS:
        shown = tag[:60]
        raise InputError(
            f"{name} is not JUnit XML: root element is <{shown}>, "
            "expected <testsuites> or <testsuite>"
        )
    return root


class _WholeBuffer:
    """A source that hands iterparse every byte in its first read. iterparse feeds expat 16 KiB
    at a time, and expat (2.5) rescans an unfinished token on every feed, so one 200 MB
    attribute took minutes; in one feed the scan is linear. The bytes are in memory anyway."""

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def read(self, size: int = -1) -> bytes:
        data, self._data = self._data, None
        return data or b""


def _require_utf8(data: bytes, name: str) -> None:
    """Refuse bytes that claim (or default to) UTF-8 but are not valid UTF-8."""
    if data.startswith(_UTF16_32_BOMS):
        return
    declared = _DECLARED_ENCODING.match(data[:200])
    if declared is not None and declared.group(1).lower().replace(b"_", b"-") not in (
        b"utf-8",
        b"utf8",
    ):
        return  # another declared encoding: expat decodes or rejects it
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{name} is not valid UTF-8 (byte {error.start})") from None


def _local_name(tag: object) -> str:
    """The tag without its ``{namespace}`` prefix (comments and PIs have non-string tags)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


@dataclass(frozen=True, slots=True)
class TestcaseResult:
    """The verdict of one ``<testcase>`` element."""

    case_id: str
    attempt: Attempt
    duration_seconds: float | None


def build_junit_run(root: ElementTree.Element, source: Source, threshold: float) -> Run:
    """Turn a parsed JUnit tree into a Run (pure; the tree is already depth-bounded)."""
    cases: dict[str, dict[str, list[Attempt]]] = {}
    samples: dict[str, list[SampleMeta]] = {}
    for result in testcase_results(root):
        cases.setdefault(result.case_id, {}).setdefault(CHECK_NAME, []).append(result.attempt)
        meta = SampleMeta(verdicts={CHECK_NAME: result.attempt.passed})
        if result.duration_seconds is not None:
            meta.usage["duration_seconds"] = result.duration_seconds
        samples.setdefault(result.case_id, []).append(meta)
    return Run(
        format="junit",
        source=source,
        threshold=threshold,
        cases=cases,
        identity={"suites": suite_names(root)},
        headline=None,
        incomplete=False,
        samples=samples,
    )


def suite_names(root: ElementTree.Element) -> list[str]:
    """Sorted distinct non-empty names of every ``<testsuite>`` (the root included)."""
    names = {
        element.get("name") or ""
        for element in root.iter()
        if _local_name(element.tag) == "testsuite"
    }
    return sorted(name for name in names if name)


def testcase_results(root: ElementTree.Element) -> Iterator[TestcaseResult]:
    """Every testcase that is a direct child of a suite element, in document order.

    Testcases directly under ``<testsuites>`` count too (node's runner writes top-level tests
    there); suites nested in suites are followed to any depth.
    """
    # One (children, is a suite, suite name) frame per open element: document order without
    # recursion.
    stack: list[tuple[Iterator[ElementTree.Element], bool, str]] = [
        (iter(root), True, _suite_name(root))
    ]
    while stack:
        children, is_suite, suite_name = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        tag = _local_name(child.tag)
        if tag == "testcase":
            if is_suite:
                yield _testcase_result(child, suite_name)
            continue
        stack.append((iter(child), tag in SUITE_TAGS, _suite_name(child)))


def _suite_name(element: ElementTree.Element) -> str:
    if _local_name(element.tag) != "testsuite":
        return ""
    return element.get("name") or ""


def case_id_of(testcase: ElementTree.Element, suite_name: str) -> str:
    """``classname::name``, with the suite name standing in for a missing classname."""
    owner = testcase.get("classname") or suite_name
    name = testcase.get("name") or ""
    return f"{owner}::{name}" if owner else name


def _children(testcase: ElementTree.Element) -> dict[str, list[ElementTree.Element]]:
    found: dict[str, list[ElementTree.Element]] = {}
    for child in testcase:
        found.setdefault(_local_name(child.tag), []).append(child)
    return found


def _evidence(tag: str, element: ElementTree.Element) -> str:
    message = element.get("message") or ""
    if not message.strip():
        message = (element.text or "").strip()
    return f"{tag}: {message}" if message else tag


def testcase_outcome(testcase: ElementTree.Element) -> tuple[bool | None, str | None]:
    """Decide one testcase element: (passed, evidence).

    A node ``todo`` test is unassessed even when it also failed (todo never fails a run);
    otherwise the first present of failure (fail), error and skipped (unassessed) decides.
    Surefire's rerun children accompany a real failure or error; its flaky children mean
    the test passed on a rerun.
    """
    children = _children(testcase)
    todo = [item for item in children.get("skipped", []) if item.get("type") == "todo"]
    if todo:
        parts = [_evidence("skipped", todo[0])]
        for tag in ("failure", "error"):
            if tag in children:
                parts.append(_evidence(tag, children[tag][0]))
        return None, "; ".join(parts)
    decisions: tuple[tuple[str, bool | None], ...] = (
        ("failure", False),
        ("error", None),
        ("skipped", None),
        ("rerunFailure", False),
        ("rerunError", None),
        ("flakyFailure", True),
        ("flakyError", True),
    )
    for tag, passed in decisions:
        if tag in children:
            return passed, _evidence(tag, children[tag][0])
    return True, None


def _duration(testcase: ElementTree.Element) -> float | None:
    text = testcase.get("time")
    if text is None:
        return None
    try:
        seconds = float(text.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _testcase_result(testcase: ElementTree.Element, suite_name: str) -> TestcaseResult:
    passed, evidence = testcase_outcome(testcase)
    return TestcaseResult(
        case_id=case_id_of(testcase, suite_name),
        attempt=Attempt(passed=passed, evidence=cut_evidence(evidence)),
        duration_seconds=_duration(testcase),
    )
