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
- **ctest** (a ``status`` attribute on testcases, a root ``<testsuite>``): id ``name``.
- **GoogleTest** (root ``AllTests``, ``status`` and ``result``): ``suite::name``, with a
  ``TEST_P`` case's ``value_param``; ``DISABLED_`` and ``GTEST_SKIP`` tests are unassessed.
- **Catch2** (``status``, ``hostname="tbd"``): ``classname::name`` (sections are tests).
- **RSpec**, **Robot Framework**, **PHPUnit**: ``classname::name``.
- **cargo libtest** (``package`` and ``id`` on suites; one document per test binary).
- **Playwright Test** (``id`` on the root, ``hostname`` on suites): ``[project] file::title``.

Surefire's and nextest's ``flakyFailure``/``rerunFailure`` children are attempts with their own
outcomes, whoever wrote them. A repeated element of one test inside one suite is an attempt
only where the producer's own rerun marker says so (:data:`POOLING`: pytest-rerunfailures'
bare elements, gotestsum ``--rerun-fails``); otherwise it is another test with the same name.

A testcase id written twice (under two suite elements, or twice in one suite by a producer
without a rerun marker) is two tests: the later ones get ``#2``, ``#3`` in document order and
are never pooled into one case; :attr:`JUnitCases.groups` names them, so a diff where that
order could hide a change is refused (:func:`ambiguous_group`). Every reading is reconciled
with the file's own counters afterwards (:mod:`evalarc.formats.junit_counts`).
"""

from __future__ import annotations

import weakref
import xml.etree.ElementTree as ElementTree
from array import array
from bisect import bisect_left
from collections.abc import Collection, ItemsView, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from typing import Any

from evalarc.formats.junit_counts import Disagreements
from evalarc.formats.model import Attempt, SampleMeta, cut_evidence

CHECK_NAME = "passed"
RERUNFAILURES = "pytest-rerunfailures>=16.6.1"
_ROBOT_ROOT = frozenset({"name", "tests", "errors", "failures", "skipped", "time", "timestamp"})
"""Robot Framework's xunit root ``<testsuite>`` (with ``rebot --merge`` too): these attributes
and no host name."""
PYTEST_RERUN_EVIDENCE = (
    "rerun: this attempt failed and was run again (pytest-rerunfailures writes no detail for it)"
)
_MAX_NOTED = 64


@dataclass(frozen=True, slots=True)
class Outcome:
    """One attempt as a testcase element records it."""

    passed: bool | None
    evidence: str | None
    kind: str = ""
    """How the producer counts it: ``failure``, ``error``, ``skipped`` or ``""`` (a pass); the
    reconciliation with the file's own counters (:mod:`evalarc.formats.junit_counts`) reads it."""


@dataclass(frozen=True, slots=True)
class Context:
    """Where testcase elements sit: one object per (suite element, classname), shared by every
    testcase of that suite and class."""

    suite_index: int
    """Which suite element holds it (document order; 0 for the root ``<testsuites>``)."""
    suite_path: tuple[str, ...]
    """Names of the enclosing ``<testsuite>`` elements, outermost first."""
    classname: str
    project: str = ""
    """The enclosing suite's ``hostname``: Playwright writes the project there."""


class JUnitCase(Mapping[str, Sequence[Attempt]]):
    """One test as the model sees it: its one check ``passed`` and that check's attempts, with
    the facts of each attempt (:attr:`metas`) made from the recorded durations when read.

    Immutable. A bare passing testcase without a duration is one shared object for the whole
    file (:data:`BARE_PASS`); one with a duration is kept as just its float by
    :class:`JUnitCases`."""

    __slots__ = ("attempts", "seconds")

    def __init__(self, attempts: tuple[Attempt, ...], seconds: tuple[float | None, ...]) -> None:
        self.attempts = attempts
        self.seconds = seconds
        """Per attempt: the duration its element recorded (on an element's first attempt), or
        None."""

    def __getitem__(self, check: str) -> Sequence[Attempt]:
        if check != CHECK_NAME:
            raise KeyError(check)
        return self.attempts

    def get(self, check: str, default: Any = None) -> Any:
        """The attempts of ``check`` (there is one check), else ``default``; without the
        exception a missing key costs through :class:`Mapping`'s default."""
        return self.attempts if check == CHECK_NAME else default

    def __iter__(self) -> Iterator[str]:
        return iter(_ONE_CHECK)

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"JUnitCase({self.attempts!r}, {self.seconds!r})"

    @property
    def metas(self) -> tuple[SampleMeta, ...]:
        """One SampleMeta per attempt: its duration (when recorded) and its verdict."""
        if self is BARE_PASS:
            return _BARE_METAS
        return tuple(
            SampleMeta(
                usage={"duration_seconds": seconds} if seconds is not None else _NO_USAGE,
                verdicts=_VERDICTS[attempt.passed],
            )
            for attempt, seconds in zip(self.attempts, self.seconds, strict=True)
        )

    def then(self, later: JUnitCase) -> JUnitCase:
        """This test followed by a later element of it: the later attempts are reruns."""
        attempts = tuple(
            attempt if attempt.rerun else _as_rerun(attempt) for attempt in later.attempts
        )
        return JUnitCase(self.attempts + attempts, self.seconds + later.seconds)

    def last_failed(self) -> JUnitCase:
        """This test with its last attempt a failed one that was run again (pytest-rerunfailures
        writes such an attempt as a bare element, which reads as a pass)."""
        last = self.attempts[-1]
        failed = Attempt(passed=False, evidence=_RERUN_EVIDENCE, rerun=last.rerun)
        return JUnitCase((*self.attempts[:-1], failed), self.seconds)


_ONE_CHECK = (CHECK_NAME,)
_BARE_ATTEMPTS = (Attempt(passed=True),)
_NO_SECONDS = (None,)
BARE_PASS = JUnitCase(_BARE_ATTEMPTS, _NO_SECONDS)
"""A testcase element without outcome children or duration: one passed attempt."""
_RERUN_EVIDENCE = cut_evidence(PYTEST_RERUN_EVIDENCE)

CaseValue = JUnitCase | float
"""How :class:`JUnitCases` keeps a test: a :class:`JUnitCase`, or the duration of a bare
passing element that recorded one (a float costs a fraction of an object with its tuples)."""


def _as_rerun(attempt: Attempt) -> Attempt:
    if attempt is _BARE_ATTEMPTS[0]:
        return _BARE_RERUN
    return Attempt(attempt.passed, attempt.value, attempt.evidence, attempt.output_sha256, True)


_BARE_RERUN = Attempt(passed=True, rerun=True)


def expand(value: CaseValue) -> JUnitCase:
    """The test a kept value stands for."""
    if isinstance(value, JUnitCase):
        return value
    return JUnitCase(_BARE_ATTEMPTS, (value,))


def _no_outcome(value: CaseValue) -> bool:
    """Whether a value made from one element is an element with no outcome child."""
    return value is BARE_PASS or isinstance(value, float)


class JUnitCases(Mapping[str, Mapping[str, Sequence[Attempt]]]):
    """A file's tests by case id (:attr:`evalarc.formats.model.Run.cases`), kept compact: the
    ids in plain sorted order (looked up by bisection), one value per test beside them and the
    document order as positions, so half a million bare testcases cost their ids and about 20
    bytes each; iteration is in document order."""

    __slots__ = ("__weakref__", "_ids", "_order", "_values", "groups")

    def __init__(self, ids: list[str], values: list[CaseValue], in_document: Sequence[str]) -> None:
        """``ids`` (sorted, distinct) and their ``values``; ``in_document``: the same ids in
        document order."""
        self.groups: dict[str, tuple[str, ...]] = {}
        """Distinct tests the producer names alike (base id: the ids ``base``, ``base #2``,
        ... in document order); paired with the other run in that order, so
        :func:`ambiguous_group` decides whether the order could hide a change."""
        self._values = values
        self._order = array("I", (bisect_left(ids, case_id) for case_id in in_document))
        self._ids = ids
        self._share_with_the_last_read()

    def _share_with_the_last_read(self) -> None:
        """Take the id strings of the last file read (while it is still held) where they are
        the same ids: runs of one suite name the same tests, so eval-health over 20 files or a
        hill climb of many steps keeps one set of ids and a few bytes per case per file."""
        last = _LAST_READ[0]() if _LAST_READ else None
        _LAST_READ[:] = [weakref.ref(self)]
        if last is None:
            return
        theirs = last._ids
        if theirs == self._ids:
            self._ids = theirs
            if last._order == self._order:
                self._order = last._order
            return
        mine = self._ids
        at = 0
        for index, case_id in enumerate(mine):
            at = bisect_left(theirs, case_id, at)
            if at < len(theirs) and theirs[at] == case_id:
                mine[index] = theirs[at]

    @classmethod
    def in_order(
        cls, ids: list[str], values: list[CaseValue], ordered: list[str] | None = None
    ) -> JUnitCases:
        """Distinct ``ids`` and their ``values``, both in document order (the lists are used
        up); ``ordered``: the same ids already sorted, when the caller has them."""
        if ordered is None:
            ordered = sorted(ids)
        tests = cls(ordered, [], ids)
        ids.clear()
        tests._values = values[:]  # filled in sorted order below
        for position, value in zip(tests._order, values, strict=True):
            tests._values[position] = value
        values.clear()
        return tests

    @classmethod
    def from_dict(cls, tests: dict[str, CaseValue]) -> JUnitCases:
        """Tests in document order (the dict is emptied: its table is the largest part)."""
        ids = list(tests)
        values = list(tests.values())
        tests.clear()
        return cls.in_order(ids, values)

    def _at(self, case_id: object) -> int:
        position = bisect_left(self._ids, case_id) if isinstance(case_id, str) else -1
        if 0 <= position < len(self._ids) and self._ids[position] == case_id:
            return position
        return -1

    def __getitem__(self, case_id: str) -> JUnitCase:
        position = self._at(case_id)
        if position < 0:
            raise KeyError(case_id)
        return expand(self._values[position])

    def get(self, case_id: str, default: Any = None) -> Any:
        """The test of ``case_id``, else ``default`` (one bisection, no exception: the diff
        looks up every id of both files)."""
        position = self._at(case_id)
        return expand(self._values[position]) if position >= 0 else default

    def __contains__(self, case_id: object) -> bool:
        return self._at(case_id) >= 0

    def __iter__(self) -> Iterator[str]:
        ids = self._ids
        return (ids[position] for position in self._order)

    def __len__(self) -> int:
        return len(self._ids)

    def items(self) -> ItemsView[str, JUnitCase]:
        return _TestItems(self)

    def values(self) -> ValuesView[JUnitCase]:
        return _TestValues(self)

    def in_document_order(self) -> Iterator[tuple[str, JUnitCase]]:
        """Each (id, test), in document order, without looking any id up."""
        ids = self._ids
        values = self._values
        for position in self._order:
            yield ids[position], expand(values[position])


class _TestItems(ItemsView[str, JUnitCase]):
    _mapping: JUnitCases

    def __iter__(self) -> Iterator[tuple[str, JUnitCase]]:
        return self._mapping.in_document_order()


class _TestValues(ValuesView[JUnitCase]):
    _mapping: JUnitCases

    def __iter__(self) -> Iterator[JUnitCase]:
        return (test for _, test in self._mapping.in_document_order())


_LAST_READ: list[weakref.ref[JUnitCases]] = []
"""The tests of the last JUnit file read, while something still holds them."""


class JUnitMetas(Mapping[str, Sequence[SampleMeta]]):
    """The per-attempt facts of a file's tests (:attr:`evalarc.formats.model.Run.samples`),
    made from :class:`JUnitCases` when read."""

    __slots__ = ("_cases",)

    def __init__(self, cases: JUnitCases) -> None:
        self._cases = cases

    def __getitem__(self, case_id: str) -> tuple[SampleMeta, ...]:
        return self._cases[case_id].metas

    def get(self, case_id: str, default: Any = None) -> Any:
        test = self._cases.get(case_id)
        return test.metas if test is not None else default

    def __contains__(self, case_id: object) -> bool:
        return case_id in self._cases

    def __iter__(self) -> Iterator[str]:
        return iter(self._cases)

    def __len__(self) -> int:
        return len(self._cases)


@dataclass(slots=True)
class Records:
    """The ``<testcase>`` elements of one file in document order, as columns (a file may hold
    half a million): each element's shared :class:`Context`, its id by the common rule
    (:func:`default_id`, which most producers use as it is and from which the name is got back),
    and its outcome as the value a one-element test is kept as. :func:`read_cases` releases them
    as it uses them."""

    ids: list[str | None] = field(default_factory=list)
    values: list[CaseValue | None] = field(default_factory=list)
    runs: list[tuple[int, Context]] = field(default_factory=list)
    """(first element, context) wherever the context changes: neighbours share one."""

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, context: Context, name: str, value: CaseValue) -> None:
        if not self.runs or self.runs[-1][1] is not context:
            self.runs.append((len(self.ids), context))
        self.ids.append(default_id(context, name))
        self.values.append(value)

    def contexts(self) -> Iterator[Context]:
        """Each element's context, in document order."""
        for number, (start, context) in enumerate(self.runs):
            end = self.runs[number + 1][0] if number + 1 < len(self.runs) else len(self.ids)
            for _ in range(end - start):
                yield context


def _owner(context: Context) -> str:
    return context.classname or (context.suite_path[-1] if context.suite_path else "")


def default_id(context: Context, name: str) -> str:
    """``classname::name`` (the enclosing suite's name for an empty classname), or the name
    alone when neither is written: the case id of every producer without a rule of its own."""
    owner = _owner(context)
    return f"{owner}::{name}" if owner else name


def _name_in(context: Context, element_id: str) -> str:
    """The name a :func:`default_id` was made of."""
    owner = _owner(context)
    return element_id[len(owner) + 2 :] if owner else element_id


def element_value(
    outcomes: Sequence[Outcome], has_outcome: bool, seconds: float | None, bare: dict[Any, Attempt]
) -> CaseValue:
    """The value a test written by one element is kept as (see :data:`CaseValue`): an element
    with no outcome child is a bare pass; otherwise each outcome is an attempt (attempts after
    the first are reruns; attempts without evidence are shared objects, from ``bare``)."""
    if not has_outcome:
        return BARE_PASS if seconds is None else seconds
    attempts: list[Attempt] = []
    for position, outcome in enumerate(outcomes):
        rerun = position > 0
        if outcome.evidence is None:
            key = (outcome.passed, rerun)
            attempt = bare.get(key)
            if attempt is None:
                attempt = bare[key] = Attempt(passed=outcome.passed, rerun=rerun)
        else:
            attempt = Attempt(
                passed=outcome.passed, evidence=cut_evidence(outcome.evidence), rerun=rerun
            )
        attempts.append(attempt)
    durations = (seconds,) + (None,) * (len(attempts) - 1)
    return JUnitCase(
        tuple(attempts), durations if seconds is not None or len(attempts) > 1 else _NO_SECONDS
    )


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
    catch2_host: bool = False
    """A suite writes ``hostname="tbd"``, as Catch2 does (ctest writes its host or nothing)."""
    reruns: int = 0
    """Rerun elements :func:`read_cases` found (pytest-rerunfailures)."""
    disagreements: Disagreements = field(default_factory=Disagreements)
    """Suites whose declared counters differ from the reading (see :mod:`junit_counts`)."""

    def note_suite(self, element: ElementTree.Element, root: bool) -> None:
        keys = {_local(key) for key in element.attrib}
        if root:
            self.root_tag = _local(element.tag)
            self.root_name = element.get("name")
            self.root_attributes = keys
        if element.get("hostname") == "tbd":
            self.catch2_host = True
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
    "cargo-libtest",
    "ctest",
    "googletest",
    "catch2",
    "rspec",
    "robot",
    "phpunit",
    "playwright",
    "junit",
)
"""Every producer name :func:`identify_producer` returns (``junit``: not recognised)."""


def identify_producer(facts: Facts) -> str:
    """Name the tool that wrote the file from its own markers and shape. pytest's files are
    ``pytest`` here; :func:`read_cases` tells pytest-rerunfailures' apart by their elements."""
    root_name = facts.root_name or ""
    if root_name == "pytest tests" or (
        facts.root_tag == "testsuites" and "pytest" in facts.suite_names
    ):
        return "pytest"
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
    if facts.root_tag == "testsuites" and {"package", "id"} <= facts.suite_attributes:
        return "cargo-libtest"
    if root_name == "nextest-run" or "uuid" in facts.root_attributes:
        return "cargo-nextest"
    if "go.version" in facts.property_names:
        # go-junit-report v2 names the host, gotestsum only stamps the time, v1 does neither.
        if "hostname" not in facts.suite_attributes and "timestamp" in facts.suite_attributes:
            return "gotestsum"
        return "go-junit-report"
    if root_name == "AllTests" or {"status", "result"} <= facts.testcase_attributes:
        return "googletest"
    if "status" in facts.testcase_attributes:
        # ctest writes one root <testsuite>; Catch2 a <testsuites> around one per binary.
        return "catch2" if facts.catch2_host else "ctest"
    if "assertions" in facts.testcase_attributes and "assertions" in facts.suite_attributes:
        return "phpunit"
    if facts.suite_names == {"rspec"} and "seed" in facts.property_names:
        return "rspec"
    if (
        facts.root_tag == "testsuites"
        and "id" in facts.root_attributes
        and ("hostname" in facts.suite_attributes)
    ):
        return "playwright"
    if (
        facts.root_tag == "testsuite"
        and facts.root_attributes == _ROBOT_ROOT
        and facts.testcase_attributes <= {"classname", "name", "time"}
    ):
        return "robot"
    if (
        "surefire" in facts.schema_location
        or any(name.startswith(("java.", "surefire.")) for name in facts.property_names)
        or (facts.rerun_children and facts.root_tag == "testsuite")
    ):
        return "surefire"
    if facts.root_tag == "testsuite" and {"hostname", "timestamp"} <= facts.suite_attributes:
        return "gradle"
    return "junit"


def base_id(producer: str, context: Context, name: str) -> str:
    """The case id a producer's stable fields give one element (before disambiguation)."""
    if producer == "node":
        return " > ".join((*context.suite_path, name))
    if producer == "playwright":
        # Playwright keeps the project only as the suite's hostname.
        project = f"[{context.project}] " if context.project else ""
        return f"{project}{default_id(context, name)}"
    if producer == "googletest" and context.suite_path:
        # GoogleTest's suite is the test's own suite (``TEST(Suite, Name)``): its name, not the
        # classname written beside it, is the id's owner, so a same-named test under another
        # suite element is never this test (equal in every file GoogleTest writes).
        return f"{context.suite_path[-1]}::{name}"
    if producer in ("jest-junit", "mocha-junit-reporter", "ctest"):
        if producer == "jest-junit" and context.classname not in ("", name):
            return f"{context.classname}::{name}"
        return name
    return default_id(context, name)


_OWN_RULES = frozenset(
    {"node", "jest-junit", "mocha-junit-reporter", "ctest", "playwright", "googletest"}
)
"""Producers whose case id is not :func:`default_id`."""


POOLING = frozenset({"pytest", RERUNFAILURES, "gotestsum"})
"""Producers whose repeated element of one test in one suite is a rerun of it: pytest-
rerunfailures (bare elements before the last), gotestsum ``--rerun-fails``. Every other
producer's reruns are children (Surefire, nextest) or never written, so a repeated id is
another test with the same name (RSpec one-liners, Robot tests sharing a name)."""


def pools_attempts(producer: str) -> bool:
    """Whether repeated elements of one test inside one suite are attempts of that test."""
    return producer in POOLING


_VERDICTS: dict[bool | None, dict[str, bool | None]] = {
    value: {CHECK_NAME: value} for value in (True, False, None)
}
"""One verdict mapping per outcome, shared by every attempt's SampleMeta (nothing writes to a
run's verdicts after it is read; a large file holds hundreds of thousands of them)."""


_NO_USAGE: dict[str, float] = {}
"""The usage of every attempt without a recorded duration (shared and read-only, as above)."""
_BARE_METAS = (SampleMeta(usage=_NO_USAGE, verdicts=_VERDICTS[True]),)
"""The facts of :data:`BARE_PASS`, made once."""


def read_cases(facts: Facts, records: Records) -> tuple[str, JUnitCases]:
    """The producer and the tests of one file, by case id. The records are released as they
    are used, so memory holds the ids and one compact value per test, not the elements."""
    producer = identify_producer(facts)
    _own_rule_ids(producer, records)
    ids: list[Any] = records.ids
    ordered = _sorted_if_distinct(ids)
    if ordered is not None:
        # The usual file names every test once: each element is a test of its own, and no dict
        # of all ids is ever made.
        records.runs.clear()
        values: list[Any] = records.values
        return producer, JUnitCases.in_order(ids, values, ordered)
    return _read_repeated(producer, records, facts)


def _sorted_if_distinct(ids: list[Any]) -> list[str] | None:
    """The ids sorted when no id occurs twice, else None (one sorted copy, no set of them)."""
    ordered = sorted(ids)
    if all(ordered[index] != ordered[index - 1] for index in range(1, len(ordered))):
        return ordered
    return None


def _own_rule_ids(producer: str, records: Records) -> None:
    """Turn the records' default ids into the producer's own case ids where it has a rule."""
    if producer not in _OWN_RULES:
        return
    for index, context in enumerate(records.contexts()):
        element_id = records.ids[index]
        assert element_id is not None
        records.ids[index] = base_id(producer, context, _name_in(context, element_id))


def _read_repeated(producer: str, records: Records, facts: Facts) -> tuple[str, JUnitCases]:
    """:func:`read_cases` for a file that writes some base id more than once (reruns, or the
    same test name under two suites)."""
    keys = _keys(producer, records, release=True)
    namer = _Namer(keys)
    # The dict of first sightings becomes the dict of tests: each base id that names its first
    # test keeps its slot (and its place in document order) and gets the test's value.
    values: dict[str, Any] = keys.first
    pending = _PENDING
    for case_id in values:
        values[case_id] = pending
    if keys.later:
        values = {}  # tests named ``base #N`` too: made again in document order below
    repeated: dict[str, bool] = {}
    """Tests written by more than one element: whether the latest had no outcome child."""
    for index, value in enumerate(records.values):
        records.values[index] = None
        assert value is not None
        case_id = namer.name(index)
        keys.bases[index] = None
        earlier = values.get(case_id, pending)
        if earlier is pending:
            values[case_id] = value
            continue
        # Another element of a test already read: its attempts follow the earlier ones. An
        # element of a pytest test before its last with no outcome child is a rerun attempt
        # of pytest-rerunfailures >= 16.6.1 (it writes no detail for it): a failed attempt. The
        # first such element makes the file that plugin's (none came before it to correct).
        test = expand(earlier)
        before_bare = repeated.get(case_id)
        if before_bare is None:
            before_bare = _no_outcome(earlier)
        if before_bare and producer in ("pytest", RERUNFAILURES):
            producer = RERUNFAILURES
            test = test.last_failed()
            facts.reruns += 1
        repeated[case_id] = _no_outcome(value)
        values[case_id] = test.then(expand(value))
    tests = JUnitCases.from_dict(values)
    tests.groups = namer.groups()
    return producer, tests


_PENDING = object()
"""A test whose first element is still to come."""


@dataclass(frozen=True, slots=True)
class _Keys:
    bases: list[str | None]
    """Per element in document order: the case id its producer's fields give."""
    ordinals: dict[int, int]
    """Elements (by index) whose base id was seen under an earlier suite element first: 2, 3,
    ... in document order (every other element's ordinal is 1)."""
    first: dict[str, Any]
    """Every base id, in the order first seen (values: bookkeeping of :func:`_keys`)."""

    @property
    def later(self) -> bool:
        """Some element has an ordinal above 1."""
        return bool(self.ordinals)


def _keys(producer: str, records: Records, release: bool = False) -> _Keys:
    """Which (base id, ordinal) each element belongs to, from the records' case ids (see
    :func:`_own_rule_ids`). A later element with a base id already seen is another attempt of
    that test only where the producer's own rerun marker says so (:func:`pools_attempts`: in
    the same suite element, and for pytest only after a bare element, which is how
    pytest-rerunfailures writes a rerun); otherwise it is a distinct test, numbered 2, 3, ...
    in document order. ``release``: the records' ids list becomes the base ids (no second
    list) and the contexts are dropped once used."""
    bases: list[str | None] = records.ids if release else list(records.ids)
    ordinals: dict[int, int] = {}
    first: dict[str, Any] = {}
    """Per base id, in the order first seen: how many distinct tests it names so far."""
    last: dict[str, tuple[int, int, bool]] = {}
    """Per base id seen more than once so far: (suite, ordinal, bare) of its latest element."""
    pools = pools_attempts(producer)
    pytest = producer in ("pytest", RERUNFAILURES)
    values = records.values
    for index, context in enumerate(records.contexts()):
        base = bases[index]
        assert base is not None
        tests = first.get(base)
        if tests is None:
            first[base] = 1
            if pools:
                last[base] = (context.suite_index, 1, _bare(values, index))
            continue
        seen = last.get(base)
        if (
            pools
            and seen is not None
            and seen[0] == context.suite_index
            and (seen[2] or not pytest)
        ):
            ordinal = seen[1]
        else:
            ordinal = first[base] = tests + 1
        if pools:
            last[base] = (context.suite_index, ordinal, _bare(values, index))
        if ordinal > 1:
            ordinals[index] = ordinal
    if release:
        records.runs.clear()
    return _Keys(bases, ordinals, first)


def _bare(values: list[CaseValue | None], index: int) -> bool:
    value = values[index] if index < len(values) else None
    return value is not None and _no_outcome(value)


class _Namer:
    """The case id of each element: its base id for the first test of that name, ``base #N``
    (never one already taken) for a later one."""

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Each base id that names more than one test: the ids of its tests in order."""
        found: dict[str, list[str]] = {}
        for (base, _ordinal), name in sorted(self._names.items()):
            found.setdefault(base, [base]).append(name)
        return {base: tuple(names) for base, names in found.items()}

    def __init__(self, keys: _Keys) -> None:
        self._keys = keys
        self._used: set[str] = set(keys.first) if keys.later else set()
        self._names: dict[tuple[str, int], str] = {}

    def name(self, index: int) -> str:
        base = self._keys.bases[index]
        assert base is not None
        ordinal = self._keys.ordinals.get(index, 1)
        if ordinal == 1:
            return base
        key = (base, ordinal)
        known = self._names.get(key)
        if known is None:
            known = self._names[key] = _distinct_name(key, self._used)
        return known


def record_case_ids(facts: Facts, records: Records) -> list[str]:
    """The case id of each element, in document order, exactly as :func:`read_cases` names the
    tests (for readers of the same file that show more than the model keeps)."""
    producer = identify_producer(facts)
    copy = Records(list(records.ids), records.values, list(records.runs))
    _own_rule_ids(producer, copy)
    ids: list[Any] = copy.ids
    if _sorted_if_distinct(ids) is not None:
        return ids  # every element is a test of its own, named by its base id
    keys = _keys(producer, copy)
    namer = _Namer(keys)
    return [namer.name(index) for index in range(len(keys.bases))]


def _distinct_name(key: tuple[str, int], used: set[str]) -> str:
    base, number = key
    while True:
        candidate = f"{base} #{number}"
        if candidate not in used:
            used.add(candidate)
            return candidate
        number += 1


def _passes(test: Mapping[str, Sequence[Attempt]] | None) -> bool:
    return test is not None and all(
        attempt.passed is True for attempts in test.values() for attempt in attempts
    )


def ambiguous_group(
    baseline: Mapping[str, Mapping[str, Sequence[Attempt]]],
    current: Mapping[str, Mapping[str, Sequence[Attempt]]],
    blocked: Collection[str],
) -> str | None:
    """Why pairing tests that share one id in document order could hide a change, or None.

    Tests the producer names alike are paired ``id`` with ``id``, ``id #2`` with ``id #2``.
    When every current member passes and there are at least as many as in the baseline, no
    pass can have been lost whatever the order. Otherwise a member may have regressed while
    another was fixed and the order changed: unless a blocking row (``blocked``: case ids)
    already names the group, the pair is refused with how to tell the tests apart."""
    groups: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for side, tests in enumerate((baseline, current)):
        found = getattr(tests, "groups", None)
        if not isinstance(found, dict):
            continue
        for base, members in found.items():
            pair = groups.get(base, ((base,), (base,)))
            groups[base] = (members, pair[1]) if side == 0 else (pair[0], members)
    for base, (before, now) in sorted(groups.items()):
        if all(_passes(current.get(member)) for member in now) and len(now) >= len(before):
            continue
        if any(member in blocked for member in (*before, *now)):
            continue
        return (
            f"{len(now)} tests are named {base[:200]!r} (the baseline has {len(before)}), and "
            "not every one passes now; EvalArc pairs them in document order, which cannot tell "
            "a fixed test from a broken one if their order changed, so the pair is refused; "
            "give the tests distinct names (or a suite, class or file that tells them apart)"
        )
    return None
