"""Read JUnit XML into the shared model: each test is a case with the one check ``passed``.

The file is streamed (``iterparse`` under defusedxml: no DTD, no entities, no external
references) and every finished ``<testcase>`` is dropped from the tree at once, so memory holds
the open suites and the compact records, never the whole document. Caps on elements, nesting,
attributes, text and total work refuse a hostile file with one line naming the file and the cap.

Outcomes come from the testcase's children and its own ``status``/``result`` attributes; the
suite counters (``failures="2"``, ...) are then compared with that reading and a disagreement
refuses the file (:mod:`evalarc.formats.junit_counts`). A file may hold several documents (cargo
libtest writes one per test binary). Which fields name a test, and which repeated elements are
attempts of one test, depend on the tool that wrote the file:
:mod:`evalarc.formats.junit_producers` identifies it from its own markers and builds the case
ids. Elements of an unknown shape and a file without any
``<testcase>`` are refused: nothing in them can be assessed.
"""

from __future__ import annotations

import codecs
import gc
import math
import re
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import defusedxml
import defusedxml.ElementTree as SafeElementTree

from evalarc.errors import InputError
from evalarc.formats.junit_counts import SuiteCount, declared_counters, reconcile
from evalarc.formats.junit_producers import (
    CHECK_NAME,
    CaseValue,
    Context,
    Facts,
    JUnitMetas,
    Outcome,
    Records,
    element_value,
    read_cases,
)
from evalarc.formats.model import Attempt, Run, Source

__all__ = [
    "CHECK_NAME",
    "MAX_DEPTH",
    "SUITE_TAGS",
    "message_text",
    "read_junit",
    "read_junit_bytes",
    "read_junit_stream",
    "scan_records",
    "xml_documents",
]

MAX_DEPTH = 64
"""Deepest element nesting accepted; real reports nest suites a handful of levels."""
MAX_ELEMENTS = 5_000_000
"""Most elements one file may hold (a 100,000-test suite with output holds well under 1 M)."""
MAX_TESTCASES = 500_000
"""Most ``<testcase>`` elements one file may hold (each costs the model about 0.8 KB, so half a
million stay within 512 MB however small the file that names them)."""
MAX_TESTCASE_CHILDREN = 10_000
"""Most child elements of one ``<testcase>`` (outcome, reruns, output)."""
MAX_ATTRIBUTES = 256
"""Most attributes on one element."""
MAX_ATTRIBUTE_CHARS = 4 * 1024 * 1024
"""Longest attribute value (a name, a failure message)."""
MAX_TEXT_CHARS = 64 * 1024 * 1024
"""Longest text of one element (a stack trace, captured output)."""
MAX_WORK = 20_000_000
"""Most parser events (elements, comments and attributes together) one file may cost."""

SUITE_TAGS = frozenset({"testsuites", "testsuite"})
SUITE_EXTRAS = frozenset({"properties", "system-out", "system-err"})
"""Elements a suite may hold besides suites and testcases; their content is not an outcome."""
OUTCOME_TAGS = frozenset(
    {"failure", "error", "skipped", "rerunFailure", "rerunError", "flakyFailure", "flakyError"}
)
TESTCASE_CHILDREN = OUTCOME_TAGS | SUITE_EXTRAS
_RERUN_TAGS = frozenset({"rerunFailure", "rerunError", "flakyFailure", "flakyError"})
_EARLIER_KINDS = _RERUN_TAGS | {"merged"}
"""Attempts that are not the one a producer counts (reruns, runs merged by rebot)."""
_CHILDREN_OF: dict[str, frozenset[str]] = {
    "outcome": frozenset({"stackTrace", "system-out", "system-err"}),
    "properties": frozenset({"property"}),
}
"""What the inner elements may hold: Surefire's and nextest's rerun and flaky children carry a
stack trace and output, properties hold properties; output and stack traces hold text only."""
_DTD_MESSAGE = "JUnit XML with a DTD or entities is not accepted"
_ERROR_DETAIL_CHARS = 200
_READ_CHUNK = 256 * 1024
_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_DECLARED_ENCODING = re.compile(rb"^\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
_NODE_COMMENT = re.compile(r"^\s*(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ")


def read_junit(path: Path, source: Source, threshold: float) -> Run:
    """Read the JUnit XML file at ``path`` into a Run.

    Raises InputError naming the file for DTDs or entities, invalid UTF-8, malformed XML, a
    root that is neither ``testsuites`` nor ``testsuite``, an element of an unknown shape, no
    testcase at all, or any cap passed.
    """
    try:
        handle = path.open("rb")
    except OSError as error:
        raise InputError(f"{path.name} cannot be read: {error.strerror or error}") from None
    with handle:
        return read_junit_stream(handle, source.name, source, threshold)


def read_junit_bytes(data: bytes, source: Source, threshold: float) -> Run:
    """Read JUnit XML held in memory (the same rules as :func:`read_junit`)."""
    import io

    return read_junit_stream(io.BytesIO(data), source.name, source, threshold)


def read_junit_stream(stream: IO[bytes], name: str, source: Source, threshold: float) -> Run:
    """Stream untrusted JUnit XML from ``stream`` (named ``name`` in messages) into a Run."""
    # Millions of small objects and no cycles: the cyclic collector would rescan them all again
    # and again (most of the reading time on a large file), so it waits until they are built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        facts, records = scan_records(stream, name)
        if not len(records):
            raise InputError(f"{name} has no <testcase>: nothing in it could be assessed")
        producer, cases = read_cases(facts, records)
        del records
        reconcile(producer, facts.disagreements, name, facts.reruns)
    finally:
        if collecting:
            gc.enable()
    identity: dict[str, object] = {"producer": producer, "suites": sorted(facts.suite_names)}
    return Run(
        format="junit",
        source=source,
        threshold=threshold,
        cases=cases,
        identity=identity,
        headline=None,
        incomplete=False,
        samples=JUnitMetas(cases),
    )


class _CheckedReader:
    """A source for iterparse that hands out 256 KiB chunks and checks, on the way, that bytes
    claiming (or defaulting to) UTF-8 are UTF-8. expat 2.5 rescans an unfinished token on every
    feed, so 16 KiB feeds made one long attribute quadratic; every element parsed from a feed
    is queued before the first is handed on, so a 1 MiB feed of bare testcases queued 40,000
    elements (16 MB) at once."""

    def __init__(self, stream: IO[bytes], name: str) -> None:
        self._stream = stream
        self._name = name
        self._offset = 0
        self._decoder: codecs.IncrementalDecoder | None = None
        self._first = True

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(_READ_CHUNK)
        if self._first:
            self._first = False
            if _claims_utf8(chunk):
                self._decoder = codecs.getincrementaldecoder("utf-8")()
        if self._decoder is not None:
            try:
                self._decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as error:
                position = self._offset + error.start
                raise InputError(f"{self._name} is not valid UTF-8 (byte {position})") from None
        self._offset += len(chunk)
        return chunk


_NEXT_DOCUMENT = b"\n<?xml"
"""Where cargo's libtest (``--format junit``) starts the document of its next test binary: each
document is one line, so a file holds one per binary, each opening with its declaration."""


class _Documents:
    """The XML documents one file holds, one after another: :meth:`read` ends each at the next
    line that opens with an XML declaration (an XML declaration anywhere else is malformed, so
    a single document is never split), :meth:`next_document` moves on."""

    def __init__(self, source: _CheckedReader) -> None:
        self._source = source
        self._buffer = b""
        self._exhausted = False
        self._ended = False
        self._started = False

    def _fill(self) -> None:
        while not self._exhausted and len(self._buffer) < 2 * len(_NEXT_DOCUMENT):
            chunk = self._source.read()
            if not chunk:
                self._exhausted = True
            self._buffer += chunk

    def read(self, size: int = -1) -> bytes:
        if self._ended:
            return b""
        self._fill()
        buffer = self._buffer
        # The declaration may open the document itself (offset 0 after a newline is not one).
        at = buffer.find(_NEXT_DOCUMENT, 0 if self._started else 1)
        self._started = True
        if at >= 0:
            self._buffer = buffer[at + 1 :]
            self._ended = True
            return buffer[: at + 1]
        keep = 0 if self._exhausted else len(_NEXT_DOCUMENT) - 1
        self._buffer = buffer[len(buffer) - keep :] if keep else b""
        return buffer[: len(buffer) - keep]

    def next_document(self) -> bool:
        """Move to the next document; False when only white space is left."""
        if not self._ended:
            return False
        self._ended = False
        self._started = False
        self._fill()
        return bool(self._buffer.strip()) or not self._exhausted


def xml_documents(stream: IO[bytes], name: str) -> _Documents:
    """The XML documents of ``stream`` one after another (see :class:`_Documents`), for other
    readers of the same file; invalid UTF-8 is refused naming ``name``."""
    return _Documents(_CheckedReader(stream, name))


def _iterparse(documents: _Documents) -> Iterator[tuple[str, ElementTree.Element]]:
    """The parser events of the current document, under defusedxml's limits."""
    events: Iterator[tuple[str, ElementTree.Element]] = SafeElementTree.iterparse(
        documents,
        events=("start", "end", "comment", "pi"),
        forbid_dtd=True,
        forbid_entities=True,
        forbid_external=True,
    )
    return events


def _claims_utf8(head: bytes) -> bool:
    if head.startswith(_UTF16_32_BOMS):
        return False
    declared = _DECLARED_ENCODING.match(head[:200])
    if declared is None:
        return True
    return declared.group(1).lower().replace(b"_", b"-") in (b"utf-8", b"utf8")


def _local_name(tag: object) -> str:
    """The tag without its ``{namespace}`` prefix (comments and PIs have non-string tags)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


@dataclass(slots=True)
class _Frame:
    element: ElementTree.Element
    kind: str
    """``suite``, ``testcase``, ``outcome`` (a testcase's direct child) or ``other``."""
    tag: str


def scan_records(stream: IO[bytes], name: str) -> tuple[Facts, Records]:
    """Stream untrusted JUnit XML from ``stream`` under every cap of this reader: the markers
    that identify its producer and the ``<testcase>`` elements as :class:`Records`, in document
    order. Raises InputError naming ``name`` for what :func:`read_junit` refuses."""
    facts = Facts()
    records = Records()
    builder = _RecordBuilder(facts, records)
    frames: list[_Frame] = []
    suite_path: list[tuple[str, ...]] = []
    """Per open suite: the names of the enclosing named testsuites (one shared tuple each)."""
    suite_index: list[int] = []
    counts: list[SuiteCount] = []
    """Per open suite: its declared counters and what the reader counted inside it so far."""
    hosts: list[str] = []
    """Per open suite: its ``hostname`` (Playwright's project)."""
    suites_seen = 0
    elements = 0
    work = 0
    try:
        documents = _Documents(_CheckedReader(stream, name))
        while True:
            for event, element in _iterparse(documents):
                work += 1
                if event == "pi":
                    target = (element.text or "").split(None, 1)[:1]
                    if target and target[0].lower() == "xml-stylesheet":
                        raise InputError(_ACTIVE.format(name=name, what="an <?xml-stylesheet?>"))
                elif event == "comment":
                    text = element.text or ""
                    if len(text) > MAX_TEXT_CHARS:
                        raise InputError(_cap(name, f"a comment longer than {MAX_TEXT_CHARS:,}"))
                    found = _NODE_COMMENT.match(text) if len(frames) == 1 else None
                    if found is not None:
                        facts.node_comments += 1
                        number = text.split()[1] if len(text.split()) == 2 else ""
                        if number.isdigit() and len(number) < 13:
                            facts.disagreements.comments[found.group(1)] = int(number)
                elif event == "start":
                    elements += 1
                    work += len(element.attrib)
                    if elements > MAX_ELEMENTS:
                        raise InputError(_cap(name, f"more than {MAX_ELEMENTS:,} elements"))
                    if len(frames) >= MAX_DEPTH:
                        raise InputError(f"{name} nests elements deeper than {MAX_DEPTH} levels")
                    _check_attributes(element, name)
                    _check_namespaces(element, name)
                    tag = _local_name(element.tag)
                    kind = _classify(frames, tag, name)
                    if kind == "suite":
                        suites_seen += 1
                        suite_index.append(suites_seen if tag == "testsuite" else 0)
                        label = element.get("name") or "" if tag == "testsuite" else ""
                        outer = suite_path[-1] if suite_path else ()
                        suite_path.append((*outer, label) if label else outer)
                        hosts.append(sys.intern((element.get("hostname") or "")[:200]))
                        if tag == "testsuite" and label:
                            facts.suite_names.add(label)
                        facts.note_suite(element, root=not frames)
                        where = (
                            f'<testsuite name="{label[:80]}">' if tag == "testsuite" else f"<{tag}>"
                        )
                        counts.append(
                            SuiteCount(where, not frames, declared_counters(element, name, where))
                        )
                    elif kind == "testcase" and len(records) >= MAX_TESTCASES:
                        raise InputError(_cap(name, f"more than {MAX_TESTCASES:,} testcases"))
                    if frames and frames[-1].kind == "testcase":
                        parent = frames[-1].element
                        if len(parent) > MAX_TESTCASE_CHILDREN:
                            raise InputError(
                                _cap(
                                    name,
                                    f"a testcase with more than {MAX_TESTCASE_CHILDREN:,} children",
                                )
                            )
                    elif frames and frames[-1].tag == "properties" and tag == "property":
                        facts.note_property(element)
                    frames.append(_Frame(element, kind, tag))
                else:
                    frame = frames.pop()
                    body = element.text
                    if body is not None and len(body) > MAX_TEXT_CHARS:
                        raise InputError(
                            _cap(name, f"an element text longer than {MAX_TEXT_CHARS:,}")
                        )
                    if frame.kind == "testcase":
                        builder.add(
                            element, suite_path[-1], suite_index[-1], name, hosts[-1], counts[-1]
                        )
                    elif frame.kind == "suite":
                        suite_path.pop()
                        suite_index.pop()
                        hosts.pop()
                        finished = counts.pop()
                        if counts:
                            # A suite's counters cover its nested suites: the enclosing one
                            # takes this one's figures once it is done (not every testcase at
                            # every level).
                            counts[-1].merge(finished)
                        else:
                            facts.disagreements.totals = finished
                        facts.disagreements.note(finished, name)
                    if frame.kind != "outcome" and frames:
                        # Drop what is finished, so memory stays flat however many elements the
                        # file holds. Every later sibling already built is reached through its own
                        # event, so a suite's (or container's) child list is emptied whole; a
                        # testcase keeps its outcome children until it is read.
                        element.clear()
                        holder = frames[-1]
                        if holder.kind != "testcase":
                            del holder.element[:]
                    elif frame.kind == "outcome":
                        del element[:]
                if work > MAX_WORK:
                    raise InputError(_cap(name, f"more than {MAX_WORK:,} parser events"))
            if not documents.next_document():
                break
    except defusedxml.DefusedXmlException:
        raise InputError(f"{name}: {_DTD_MESSAGE}") from None
    except (ElementTree.ParseError, LookupError, ValueError) as error:
        detail = str(error)[:_ERROR_DETAIL_CHARS] or type(error).__name__
        raise InputError(f"{name} is not JUnit XML: {detail}") from None
    return facts, records


def _cap(name: str, what: str) -> str:
    return f"{name} holds {what} (a cap of the JUnit reader); it is refused unread"


def _check_attributes(element: ElementTree.Element, name: str) -> None:
    if len(element.attrib) > MAX_ATTRIBUTES:
        raise InputError(_cap(name, f"an element with more than {MAX_ATTRIBUTES} attributes"))
    if "}" in element.tag:
        _check_namespaces(element, name)
    for key, value in element.attrib.items():
        if len(value) > MAX_ATTRIBUTE_CHARS:
            raise InputError(
                _cap(name, f"an attribute value longer than {MAX_ATTRIBUTE_CHARS:,} characters")
            )
        if "}" in key:
            _check_namespaces(element, name)


_XSI = "{http://www.w3.org/2001/XMLSchema-instance}"
"""The one namespace a JUnit file uses (Surefire's ``xsi:noNamespaceSchemaLocation``)."""
_ACTIVE = (
    "{name} holds {what}; a JUnit file with it could be served as an active document on the "
    "report's site, so it is refused"
)


def _check_namespaces(element: ElementTree.Element, name: str) -> None:
    """Refuse elements in any namespace and attributes in any but XML Schema's: JUnit has
    none, and XHTML or SVG markup in a preserved input runs scripts where a host serves it."""
    tag = element.tag
    if isinstance(tag, str) and tag[:1] == "{":
        namespace = tag[1 : tag.find("}")][:100]
        raise InputError(_ACTIVE.format(name=name, what=f"an element in the namespace {namespace}"))
    for key in element.attrib:
        if key.startswith("{") and not key.startswith(_XSI):
            namespace = key[1 : key.find("}")][:100]
            raise InputError(
                _ACTIVE.format(name=name, what=f"an attribute in the namespace {namespace}")
            )


def _classify(frames: list[_Frame], tag: str, name: str) -> str:
    """What a starting element is, from its tag and its parent; unknown shapes are refused."""
    if not frames:
        if tag not in SUITE_TAGS:
            raise InputError(
                f"{name} is not JUnit XML: root element is <{tag[:60]}>, "
                "expected <testsuites> or <testsuite>"
            )
        return "suite"
    parent = frames[-1]
    if parent.kind == "suite":
        if tag == "testsuite":
            return "suite"
        if tag == "testcase":
            return "testcase"
        if tag in SUITE_EXTRAS:
            return "other"
        raise InputError(_unknown(name, tag, parent.tag))
    if parent.kind == "testcase":
        if tag in TESTCASE_CHILDREN:
            return "outcome" if tag in OUTCOME_TAGS else "other"
        raise InputError(_unknown(name, tag, "testcase"))
    allowed = _CHILDREN_OF.get(parent.tag if parent.kind == "other" else parent.kind, frozenset())
    if tag not in allowed:
        raise InputError(_unknown(name, tag, parent.tag))
    return "other"


def _unknown(name: str, tag: str, parent: str) -> str:
    return (
        f"{name}: <{tag[:60]}> inside <{parent[:60]}> is not a JUnit shape EvalArc can assess; "
        "unknown shapes are refused, so nothing in the file was assessed"
    )


_MERGED = '<span class="merge">Test has been re-executed and results merged.'
_OLD_STATUS = re.compile(r'<span class="old-status">Old status:</span> <span class="(\w+)">')
_STATUS_PASSED = {"pass": True, "fail": False}


def _merged_runs(children: dict[str, list[ElementTree.Element]]) -> list[Outcome]:
    """The earlier runs ``rebot --merge`` folded into a test's message (Robot Framework's own
    rerun marker), oldest first: each is an attempt before the final one. A merged test that
    passes has no message in xunit, so its earlier runs are not known."""
    for tag in ("failure", "error", "skipped"):
        for child in children.get(tag, ()):
            message = child.get("message") or ""
            if message.startswith("*HTML*") and _MERGED in message[:200]:
                statuses = _OLD_STATUS.findall(message)[:MAX_TESTCASE_CHILDREN]
                return [
                    Outcome(
                        _STATUS_PASSED.get(status),
                        f"an earlier run (rebot --merge): {status.upper()}",
                        "merged",
                    )
                    for status in reversed(statuses)
                ]
    return []


_CONSTANT_MESSAGES = frozenset({"Failed"})
"""Messages that name no cause (gotestsum writes ``message="Failed"`` on every failure): the
element's text is the evidence instead."""
_HTML_TAG = re.compile(r"<[^<>]{0,2000}>")


def message_text(message: str) -> str:
    """A Robot Framework ``*HTML*`` message as the text it shows (tags dropped, the common
    entities decoded), never markup; any other message as it is."""
    if not message.startswith("*HTML*"):
        return message
    text = _HTML_TAG.sub(" ", message[len("*HTML*") :])
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&amp;", "&")):
        text = text.replace(entity, char)
    return " ".join(text.split())


def _evidence(tag: str, element: ElementTree.Element) -> str:
    message = message_text(element.get("message") or "")
    if not message.strip() or message.strip() in _CONSTANT_MESSAGES:
        message = (element.text or "").strip() or message.strip()
    return f"{tag}: {message[:600]}" if message else tag


_NOT_RUN = frozenset({"notrun", "disabled", "suppressed"})
_STATUS_VALUES = frozenset({"run", "fail", "notrun", "disabled"})
"""ctest's ``status`` (run, fail, notrun, disabled); GoogleTest's and Catch2's are a subset."""
_RESULT_VALUES = frozenset({"completed", "skipped", "suppressed"})
"""GoogleTest's ``result``: ``suppressed`` is a ``DISABLED_`` test, ``skipped`` a GTEST_SKIP."""
_MAYFAIL = "TEST_CASE tagged with !mayfail"
"""Catch2's skipped message on a ``[!mayfail]``/``[!shouldfail]`` test: its failure is expected
and Catch2 does not count it."""


def _stated(testcase: ElementTree.Element, name: str) -> str | None:
    """What a testcase's own ``status``/``result`` attributes state: ``notrun`` (the producer
    did not run it: ctest notrun/disabled, GoogleTest notrun/suppressed), ``fail`` (ctest), or
    None (run: the children tell). An unknown value is refused, never guessed."""
    status = testcase.get("status")
    result = testcase.get("result")
    if status is None and result is None:
        return None
    if status is not None and status not in _STATUS_VALUES:
        raise InputError(
            f"{name}: a testcase states status={status[:40]!r}, a value EvalArc does not know "
            "(known: run, fail, notrun, disabled); it is refused, never guessed"
        )
    if result is not None and result not in _RESULT_VALUES:
        raise InputError(
            f"{name}: a testcase states result={result[:40]!r}, a value EvalArc does not know "
            "(known: completed, skipped, suppressed); it is refused, never guessed"
        )
    if status in _NOT_RUN or result == "suppressed":
        return "notrun"
    if status == "fail":
        return "fail"
    return None


def testcase_outcomes(testcase: ElementTree.Element, name: str = "") -> tuple[Outcome, ...]:
    """The attempts one testcase element records, in the order they ran.

    A node ``todo`` test is one unassessed attempt even when it also failed (todo never fails a
    run). A test whose own ``status``/``result`` says it did not run (GoogleTest ``DISABLED_``,
    ctest ``notrun``) is unassessed, never a pass; one that says ``fail`` fails. A Catch2
    ``[!mayfail]`` test's failure is expected (unassessed). Otherwise the first present of
    failure (fail), error and skipped (unassessed), or a pass, is the final attempt; Surefire's
    and nextest's ``flakyFailure``/``flakyError`` are failed/errored attempts before it (the
    test passed on a rerun) and ``rerunFailure``/``rerunError`` failed/errored attempts after
    the first failure.
    """
    attributes = testcase.attrib
    if not len(testcase) and "status" not in attributes and "result" not in attributes:
        return _PASSED
    stated = _stated(testcase, name)
    children: dict[str, list[ElementTree.Element]] = {}
    for child in testcase:
        children.setdefault(_local_name(child.tag), []).append(child)
    if stated == "notrun":
        if "failure" in children or "error" in children:
            raise InputError(
                f"{name}: a testcase states it did not run (status={testcase.get('status')!r}) "
                "yet holds a failure or error; the file disagrees with itself, so it is refused"
            )
        skipped = children.get("skipped")
        evidence = (
            _evidence("skipped", skipped[0])
            if skipped
            else "not run: "
            + (
                f"status={testcase.get('status') or ''} result={testcase.get('result') or ''}"
            ).strip()
        )
        return (Outcome(None, evidence, "skipped"),)
    todo = [item for item in children.get("skipped", []) if item.get("type") == "todo"]
    if todo:
        parts = [_evidence("skipped", todo[0])]
        for tag in ("failure", "error"):
            if tag in children:
                parts.append(_evidence(tag, children[tag][0]))
        kind = "todo failure" if "failure" in children else "skipped"
        return (Outcome(None, "; ".join(parts), kind),)
    skipped = children.get("skipped", [])
    if skipped and "failure" in children and skipped[0].get("message") == _MAYFAIL:
        evidence = (
            f"{_evidence('skipped', skipped[0])}; {_evidence('failure', children['failure'][0])}"
        )
        return (Outcome(None, evidence, "expected failure"),)
    final = Outcome(True, None)
    for tag, passed in (("failure", False), ("error", None), ("skipped", None)):
        if tag in children:
            final = Outcome(passed, _evidence(tag, children[tag][0]), tag)
            break
    if stated == "fail" and final.passed is not False:
        final = Outcome(False, final.evidence or "status: fail", "failure")
    before: list[Outcome] = _merged_runs(children)
    after: list[Outcome] = []
    for child in testcase:
        tag = _local_name(child.tag)
        if tag == "flakyFailure":
            before.append(Outcome(False, _evidence(tag, child), tag))
        elif tag == "flakyError":
            before.append(Outcome(None, _evidence(tag, child), tag))
        elif tag == "rerunFailure":
            after.append(Outcome(False, _evidence(tag, child), tag))
        elif tag == "rerunError":
            after.append(Outcome(None, _evidence(tag, child), tag))
    return (*before, final, *after)


_PASSED = (Outcome(True, None),)


def _duration(testcase: ElementTree.Element) -> float | None:
    text = testcase.get("time")
    if text is None:
        return None
    try:
        seconds = float(text.strip().replace(",", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class _RecordBuilder:
    """Adds each finished ``<testcase>`` to the file's :class:`Records`, sharing one
    :class:`Context` per (suite element, classname) and one attempt object per bare outcome."""

    def __init__(self, facts: Facts, records: Records) -> None:
        self._facts = facts
        self._records = records
        self._contexts: dict[tuple[int, str], Context] = {}
        self._bare: dict[object, Attempt] = {}

    def add(
        self,
        testcase: ElementTree.Element,
        suite_path: tuple[str, ...],
        suite: int,
        source_name: str,
        project: str,
        count: SuiteCount,
    ) -> None:
        """Add one testcase, and count its outcome in ``count`` (its suite's figures)."""
        facts = self._facts
        facts.note_testcase(testcase)
        outcomes = testcase_outcomes(testcase, source_name)
        if outcomes is _PASSED:
            tags: set[str] = set()
            has_outcome = False
            count.tests += 1
        else:
            tags = {_local_name(child.tag) for child in testcase}
            has_outcome = bool(tags & OUTCOME_TAGS) or any(o.passed is not True for o in outcomes)
            if tags & _RERUN_TAGS:
                facts.rerun_children = True
        classname = testcase.get("classname") or ""
        context = self._contexts.get((suite, classname))
        if context is None:
            context = Context(suite, suite_path, sys.intern(classname), project)
            self._contexts[(suite, classname)] = context
        value: CaseValue = element_value(outcomes, has_outcome, _duration(testcase), self._bare)
        name = testcase.get("name") or ""
        parameter = testcase.get("value_param")
        if parameter is not None:
            # GoogleTest numbers TEST_P cases by position: the value keeps the id to the value.
            name = f"{name} [{parameter}]"
        self._records.add(context, name, value)
        if outcomes is _PASSED:
            return
        final = next((o for o in outcomes if o.kind not in _EARLIER_KINDS), outcomes[-1])
        flaky = sum(1 for o in outcomes if o.kind in ("flakyFailure", "flakyError"))
        package = final.kind == "failure" and not classname and testcase.get("name") == "TestMain"
        failures = sum(1 for child in testcase if _local_name(child.tag) == "failure")
        count.add(final.kind, "failure" in tags and "error" in tags, flaky, package, failures)
