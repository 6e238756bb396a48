"""Which tool wrote a JUnit file, and how that tool names its tests and writes their attempts.

Every producer writes ``<testcase>`` elements, but they keep different fields stable:

- **pytest** (``<testsuites name="pytest tests">`` or a suite named ``pytest``): id
  ``classname::name``. pytest-rerunfailures >= 16.6.1 writes one element per attempt; each
  element of a test before its last, with no outcome child, is a rerun: a failed attempt (the
  plugin records no detail for it). Older versions write only the last attempt.
- **node** (every ``classname="test"``, its ``<!-- tests N -->`` comments): id is the describe
  path and the name, ``a > b > name``; repeated elements are never attempts (node does not retry).
- **jest-junit** (``<testsuites name="jest tests">``): id ``name`` (describe path and title).
- **vitest** (``<testsuites name="vitest tests">``): id ``classname::name`` (file, describe path).
- **mocha-junit-reporter** (``<testsuites name="Mocha Tests">`` or a ``Root Suite``): id
  ``name`` (the full title).
- **Surefire / Gradle** (Surefire's schema location, Java properties, rerun/flaky children;
  Gradle's host and time stamp on a root ``<testsuite>``): id ``classname::name``.
- **go-junit-report / gotestsum** (a ``go.version`` property): id ``classname::name``
  (package; the suite name stands in for an empty classname).
- **cargo-nextest** (``<testsuites name="nextest-run">``, a ``uuid``): id ``classname::name``.
- **ctest** (a ``status`` attribute on testcases): id ``name``.

Surefire's and nextest's ``flakyFailure``/``rerunFailure`` children are attempts with their own
outcomes, whoever wrote them. Repeated elements of one test inside one suite are attempts of it
(for every producer but node).

A testcase id written under two different suite elements is two tests (the same describe name
in two files, concatenated reports): the later ones get ``#2``, ``#3`` in document order and are
never pooled into one case.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalarc.formats.model import Attempt, SampleMeta, cut_evidence

CHECK_NAME = "passed"
PYTEST_RERUN_EVIDENCE = (
    "rerun: this attempt failed and was run again (pytest-rerunfailures writes no detail for it)"
)
_MAX_NOTED = 64


@dataclass(frozen=True, slots=True)
class Outcome:
    """One attempt as a testcase element records it."""

    passed: bool | None
    evidence: str | None


@dataclass(frozen=True, slots=True)
class Record:
    """One ``<testcase>`` element, reduced to what identifies and decides it."""

    suite_index: int
    """Which suite element holds it (document order; 0 for the root ``<testsuites>``)."""
    suite_path: tuple[str, ...]
    """Names of the enclosing ``<testsuite>`` elements, outermost first."""
    classname: str
    name: str
    outcomes: tuple[Outcome, ...]
    has_outcome: bool
    """True when the element has an outcome child (failure, error, skipped, rerun or flaky)."""
    duration_seconds: float | None


@dataclass(slots=True)
class Facts:
    """Markers noticed while streaming a file (bounded: names only, at most a few dozen)."""

    root_tag: str = ""
    root_name: str | None = None
    root_attributes: set[str] = field(default_factory=set)
    suite_attributes: set[str] = field(default_factory=set)
    suite_names: set[str] = field(default_factory=set)
    schema_location: str = ""
    property_names: set[str] = field(default_factory=set)
    testcase_attributes: set[str] = field(default_factory=set)
    node_comments: int = 0
    testcases: int = 0
    classname_test: int = 0
    rerun_children: bool = False

    def note_suite(self, element: ElementTree.Element, root: bool) -> None:
        keys = {_local(key) for key in element.attrib}
        if root:
            self.root_tag = _local(element.tag)
            self.root_name = element.get("name")
            self.root_attributes = keys
        if _local(element.tag) == "testsuite" and len(self.suite_attributes) < _MAX_NOTED:
            self.suite_attributes |= set(list(keys)[:_MAX_NOTED])
        for key, value in element.attrib.items():
            if _local(key) in ("noNamespaceSchemaLocation", "schemaLocation"):
                self.schema_location = value[:300]

    def note_property(self, element: ElementTree.Element) -> None:
        if len(self.property_names) < _MAX_NOTED:
            self.property_names.add((element.get("name") or "")[:100])

    def note_testcase(self, element: ElementTree.Element) -> None:
        self.testcases += 1
        if element.get("classname") == "test":
            self.classname_test += 1
        if len(self.testcase_attributes) < _MAX_NOTED:
            self.testcase_attributes |= {_local(key) for key in list(element.attrib)[:_MAX_NOTED]}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


PRODUCERS = (
    "pytest",
    "pytest-rerunfailures>=16.6.1",
    "node",
    "jest-junit",
    "vitest",
    "mocha-junit-reporter",
    "surefire",
    "gradle",
    "go-junit-report",
    "gotestsum",
    "cargo-nextest",
    "ctest",
    "junit",
)
"""Every producer name :func:`identify_producer` returns (``junit``: not recognised)."""


def identify_producer(facts: Facts, records: list[Record]) -> str:
    """Name the tool that wrote the file from its own markers and shape."""
    root_name = facts.root_name or ""
    if root_name == "pytest tests" or (
        facts.root_tag == "testsuites" and "pytest" in facts.suite_names
    ):
        return "pytest-rerunfailures>=16.6.1" if _pytest_reruns(records) else "pytest"
    if (
        facts.testcases
        and facts.classname_test == facts.testcases
        and (facts.node_comments or "disabled" in facts.suite_attributes or not facts.suite_names)
    ):
        return "node"
    if root_name == "jest tests":
        return "jest-junit"
    if root_name == "vitest tests":
        return "vitest"
    if root_name == "Mocha Tests" or "Root Suite" in facts.suite_names:
        return "mocha-junit-reporter"
    if root_name == "nextest-run" or "uuid" in facts.root_attributes:
        return "cargo-nextest"
    if "go.version" in facts.property_names:
        # go-junit-report v2 names the host, gotestsum only stamps the time, v1 does neither.
        if "hostname" not in facts.suite_attributes and "timestamp" in facts.suite_attributes:
            return "gotestsum"
        return "go-junit-report"
    if "status" in facts.testcase_attributes:
        return "ctest"
    if (
        "surefire" in facts.schema_location
        or any(name.startswith(("java.", "surefire.")) for name in facts.property_names)
        or (facts.rerun_children and facts.root_tag == "testsuite")
    ):
        return "surefire"
    if facts.root_tag == "testsuite" and {"hostname", "timestamp"} <= facts.suite_attributes:
        return "gradle"
    return "junit"


def _pytest_reruns(records: list[Record]) -> bool:
    """pytest-rerunfailures >= 16.6.1: some test written more than once in one suite, with an
    element before its last that has no outcome child (a rerun attempt)."""
    last: dict[tuple[int, str], int] = {}
    for index, record in enumerate(records):
        last[(record.suite_index, base_id("pytest", record))] = index
    return any(
        not record.has_outcome and last[(record.suite_index, base_id("pytest", record))] != index
        for index, record in enumerate(records)
    )


def base_id(producer: str, record: Record) -> str:
    """The case id a producer's stable fields give one record (before disambiguation)."""
    suite = record.suite_path[-1] if record.suite_path else ""
    if producer == "node":
        return " > ".join((*record.suite_path, record.name))
    if producer in ("jest-junit", "mocha-junit-reporter", "ctest"):
        if producer == "jest-junit" and record.classname not in ("", record.name):
            return f"{record.classname}::{record.name}"
        return record.name
    owner = record.classname or suite
    return f"{owner}::{record.name}" if owner else record.name


def pools_attempts(producer: str) -> bool:
    """Whether repeated elements of one test inside one suite are attempts of that test."""
    return producer != "node"


_VERDICTS: dict[bool | None, dict[str, bool | None]] = {
    value: {CHECK_NAME: value} for value in (True, False, None)
}
"""One verdict mapping per outcome, shared by every attempt's SampleMeta (nothing writes to a
run's verdicts after it is read; a large file holds hundreds of thousands of them)."""


_NO_USAGE: dict[str, float] = {}
"""The usage of every attempt without a recorded duration (shared and read-only, as above)."""


def assemble_cases(
    producer: str, records: list[Record | None]
) -> tuple[dict[str, dict[str, list[Attempt]]], dict[str, list[SampleMeta]]]:
    """Case id -> check -> attempts, and the per-attempt sample facts, for one file. The records
    are released as they are used."""
    bases, ordinals = _keys(producer, records)
    reruns = producer == "pytest-rerunfailures>=16.6.1"
    last_of: dict[tuple[str, int], int] = {}
    if reruns:
        for index, key in enumerate(zip(bases, ordinals, strict=True)):
            last_of[key] = index
    namer = _Namer(bases, ordinals)
    cases: dict[str, dict[str, list[Attempt]]] = {}
    samples: dict[str, list[SampleMeta]] = {}
    bare: dict[tuple[bool | None, bool], Attempt] = {}
    usages: dict[str, dict[str, float]] = {}
    for index, key in enumerate(zip(bases, ordinals, strict=True)):
        record = records[index]
        records[index] = None
        assert record is not None
        case_id = namer.name(key)
        checks = cases.get(case_id)
        earlier = len(checks[CHECK_NAME]) if checks is not None else 0
        outcomes = record.outcomes
        if reruns and not record.has_outcome and last_of[key] != index:
            outcomes = (Outcome(False, PYTEST_RERUN_EVIDENCE),)
        attempts: list[Attempt] = []
        metas: list[SampleMeta] = []
        for position, outcome in enumerate(outcomes):
            rerun = earlier + position > 0
            if outcome.evidence is None:
                # Attempts are immutable: every bare pass (or bare rerun) is one shared object.
                shared = (outcome.passed, rerun)
                attempt = bare.get(shared)
                if attempt is None:
                    attempt = bare[shared] = Attempt(passed=outcome.passed, rerun=rerun)
            else:
                attempt = Attempt(
                    passed=outcome.passed, evidence=cut_evidence(outcome.evidence), rerun=rerun
                )
            usage = _NO_USAGE
            if position == 0 and record.duration_seconds is not None:
                # Read-only like the verdicts: one mapping per distinct duration.
                # Keyed by the float's exact bits: 0.0 and -0.0 are equal keys but print apart.
                seconds = record.duration_seconds
                bits = seconds.hex()
                usage = usages.get(bits) or usages.setdefault(bits, {"duration_seconds": seconds})
            meta = SampleMeta(usage=usage, verdicts=_VERDICTS[outcome.passed])
            if len(outcomes) == 1:  # the usual case: lists of exactly one item (no spare room)
                attempts, metas = [attempt], [meta]
            else:
                attempts.append(attempt)
                metas.append(meta)
        if checks is None:
            cases[case_id] = {CHECK_NAME: attempts}
            samples[case_id] = metas
        else:
            checks[CHECK_NAME].extend(attempts)
            samples[case_id].extend(metas)
    return cases, samples


def _keys(producer: str, records: Sequence[Record | None]) -> tuple[list[str], list[int]]:
    """Which (base id, ordinal) each record belongs to: a base id seen under a second suite
    element (or, for node, a second time at all) is a different test, numbered in document
    order."""
    bases: list[str] = []
    ordinals: list[int] = []
    first_suite: dict[str, int] = {}
    later_suites: dict[str, dict[int, int]] = {}
    pools = pools_attempts(producer)
    for record in records:
        assert record is not None
        base = base_id(producer, record)
        if pools:
            first = first_suite.setdefault(base, record.suite_index)
            if first == record.suite_index:
                ordinal = 1
            else:
                seen = later_suites.setdefault(base, {})
                ordinal = seen.setdefault(record.suite_index, len(seen) + 2)
        else:
            ordinal = first_suite.get(base, 0) + 1
            first_suite[base] = ordinal
        bases.append(base)
        ordinals.append(ordinal)
    return bases, ordinals


class _Namer:
    """The case id of each (base id, ordinal): the base id itself for the first test of that
    name, ``base #N`` (never one already taken) for a later one."""

    def __init__(self, bases: list[str], ordinals: list[int]) -> None:
        later = any(ordinal > 1 for ordinal in ordinals)
        self._used: set[str] = set(bases) if later else set()
        self._names: dict[tuple[str, int], str] = {}

    def name(self, key: tuple[str, int]) -> str:
        if key[1] == 1:
            return key[0]
        known = self._names.get(key)
        if known is None:
            known = self._names[key] = _distinct_name(key, self._used)
        return known


def record_case_ids(producer: str, records: Sequence[Record]) -> list[str]:
    """The case id of each record, in document order, exactly as :func:`assemble_cases` names
    the cases (for readers of the same file that show more than the model keeps)."""
    bases, ordinals = _keys(producer, records)
    namer = _Namer(bases, ordinals)
    return [namer.name(key) for key in zip(bases, ordinals, strict=True)]


def _distinct_name(key: tuple[str, int], used: set[str]) -> str:
    base, number = key
    while True:
        candidate = f"{base} #{number}"
        if candidate not in used:
            used.add(candidate)
            return candidate
        number += 1
