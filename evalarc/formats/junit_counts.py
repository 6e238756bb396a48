"""Reconcile a JUnit reading with the counters the file declares about itself.

Every ``<testsuite>`` (and the root ``<testsuites>``) may declare ``tests``, ``failures``,
``errors``, ``skipped`` and ``disabled``. While the reader streams the file it counts, per suite
element and over everything nested in it, what it read itself: testcase elements, and each
element's final outcome as the reader's own outcome function classed it (failure, error,
skipped). A reading that disagrees with the file is refused (exit 2) naming the file, the suite
and both figures, never passed: if the reader took a failure for a pass, the file's own
``failures`` says so.

Each producer's counting rules are applied, and only where its real files show them (see
:data:`RULES`); a file of an unknown producer must agree exactly. Only disagreeing suites are
kept while streaming (at most :data:`MAX_DISAGREEMENTS`), so a file of half a million suites costs
nothing here.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

from evalarc.errors import InputError

COUNTERS = ("tests", "failures", "errors", "skipped", "disabled")
MAX_DISAGREEMENTS = 10_000
"""Disagreeing suites kept for the producer's rules; more than this refuses the file."""
_MAX_COUNTER = 10**12


@dataclass(slots=True)
class SuiteCount:
    """One suite element: what it declares, and what the reader counted inside it."""

    label: str
    """How messages name it: ``<testsuite name="calc">`` or ``<testsuites>`` (the root)."""
    root: bool
    declared: dict[str, int]
    """The counters the element writes (only those it writes)."""
    tests: int = 0
    failed: int = 0
    """Elements whose final outcome the reader read as a failure."""
    errored: int = 0
    skipped: int = 0
    """Elements the reader read as skipped, not run or disabled."""
    expected: int = 0
    """Expected failures the producer does not count (Catch2 ``[!mayfail]``)."""
    failure_and_error: int = 0
    """Elements that hold both a failure and an error (pytest counts each)."""
    flaky: int = 0
    """Surefire's ``flakyFailure``/``flakyError`` children (failed runs before a pass)."""
    package_failures: int = 0
    """gotestsum's synthetic failing ``TestMain`` of a package that failed outside its tests."""
    failure_elements: int = 0
    """``<failure>`` children of the elements read as failing (Catch2 writes one per failed
    assertion and counts those)."""

    def add(
        self, kind: str, both: bool, flaky: int, package_failure: bool, failures: int = 1
    ) -> None:
        self.tests += 1
        self.flaky += flaky
        self.package_failures += package_failure
        if kind in ("failure", "rerunFailure"):
            self.failure_elements += failures
        if kind in ("failure", "rerunFailure"):
            self.failed += 1
        elif kind in ("error", "rerunError"):
            self.errored += 1
        elif kind in ("skipped", "todo failure"):
            self.skipped += 1
        elif kind == "expected failure":
            self.expected += 1
        if both:
            self.failure_and_error += 1

    def merge(self, nested: SuiteCount) -> None:
        """Take a finished nested suite's figures (a suite's counters cover its nested ones)."""
        self.tests += nested.tests
        self.failed += nested.failed
        self.errored += nested.errored
        self.skipped += nested.skipped
        self.expected += nested.expected
        self.failure_and_error += nested.failure_and_error
        self.flaky += nested.flaky
        self.package_failures += nested.package_failures
        self.failure_elements += nested.failure_elements

    def agrees(self) -> bool:
        """Whether every declared counter equals the reader's own figure."""
        declared = self.declared
        counted = {
            "tests": self.tests,
            "failures": self.failed,
            "errors": self.errored,
        }
        for key, value in counted.items():
            if key in declared and declared[key] != value:
                return False
        skips = declared.get("skipped", 0) + declared.get("disabled", 0)
        return not (("skipped" in declared or "disabled" in declared) and skips != self.skipped)


def declared_counters(element: ElementTree.Element, name: str, label: str) -> dict[str, int]:
    """The counters a suite element writes; a value that is not a whole number is refused."""
    found: dict[str, int] = {}
    for key in COUNTERS:
        text = element.get(key)
        if text is None:
            continue
        text = text.strip()
        if not text.isdigit() or len(text) > 12:
            raise InputError(
                f"{name}: {label} declares {key}={text[:40]!r}, not a count; "
                "the file cannot be reconciled with its own counters, so it is refused"
            )
        found[key] = min(int(text), _MAX_COUNTER)
    return found


@dataclass(slots=True)
class Disagreements:
    """The suites whose counters differ from the reading, in document order (bounded), and
    node's root comments with the reader's own totals."""

    suites: list[SuiteCount] = field(default_factory=list)
    comments: dict[str, int] = field(default_factory=dict)
    """node's ``<!-- tests N -->`` ... comments at the root."""
    totals: SuiteCount | None = None
    """The reader's figures over the whole file (for node's comments)."""

    overflow: bool = False
    """More suites disagreed than are kept (only node's, whose suite counters are not used,
    may)."""

    def note(self, suite: SuiteCount, name: str) -> None:
        if suite.agrees():
            return
        if len(self.suites) >= MAX_DISAGREEMENTS:
            self.overflow = True
            return
        self.suites.append(suite)


def _figures(suite: SuiteCount) -> list[tuple[str, int, int, str]]:
    """(counter, declared, counted, what was counted) for each counter that differs."""
    declared = suite.declared
    out: list[tuple[str, int, int, str]] = []
    for key, value, what in (
        ("tests", suite.tests, "testcases"),
        ("failures", suite.failed, "failing"),
        ("errors", suite.errored, "erroring"),
    ):
        if key in declared and declared[key] != value:
            out.append((key, declared[key], value, what))
    if "skipped" in declared or "disabled" in declared:
        skips = declared.get("skipped", 0) + declared.get("disabled", 0)
        if skips != suite.skipped:
            key = "+".join(k for k in ("skipped", "disabled") if k in declared)
            out.append((key, skips, suite.skipped, "skipped or not run"))
    return out


def _explained(
    producer: str, suite: SuiteCount, key: str, declared: int, counted: int, reruns: int
) -> bool:
    """Whether ``producer``'s own counting rules explain one differing counter.

    Only the rules its real files show are applied; a difference that could hide a failure (the
    file declares more failures or errors than the reader found) is explained only where the
    producer's own marker accounts for every one of them."""
    bad_declared = suite.declared.get("failures", 0) + suite.declared.get("errors", 0)
    bad_counted = suite.failed + suite.errored
    if producer == "node":
        # node counts a nested describe as one test of its parent and a failing todo as a
        # failure of its suite; its own totals are the root comments (checked on their own).
        return True
    if producer.startswith("pytest"):
        if key in ("failures", "errors"):
            # A test that failed and then errored in teardown is counted once in each.
            return bad_declared == bad_counted + suite.failure_and_error
        if key == "tests":
            # pytest-rerunfailures writes each rerun as an element of its own, uncounted.
            return declared <= counted <= declared + reruns
    if producer == "googletest" and suite.root and key == "disabled":
        # The root writes disabled but not skipped: its GTEST_SKIP tests are the rest.
        return declared <= counted
    if producer == "mocha-junit-reporter":
        # Pending tests (and the tests a failed hook kept from running) are counted but not
        # written unless includePending; they are absent from the reading, never passes.
        return key in ("tests", "skipped") and counted <= declared
    if producer == "surefire":
        # Surefire 3.0 counts each flaky run as a test and each flaky failure as a failure.
        if key == "tests":
            return declared == counted + suite.flaky
        if key in ("failures", "errors"):
            return bad_declared == bad_counted + suite.flaky
    if producer == "catch2":
        # Catch2 counts assertions: ``tests`` is every assertion (the passing ones are not
        # written) and ``failures`` every failed one, each written as a <failure> of its test
        # case (an expected [!mayfail] failure is not counted). A [!shouldfail] test that
        # passed is a failure Catch2 counts but writes no <failure> for: refused.
        if key == "tests":
            return True
        if key == "failures":
            return declared == suite.failure_elements
    if producer == "cargo-libtest":
        # libtest counts an ignored test as a skipped test but writes no element for it.
        unwritten = suite.declared.get("skipped", 0) - suite.skipped
        if key == "tests":
            return unwritten >= 0 and declared == counted + unwritten
        if key == "skipped":
            return counted <= declared
    if producer == "gotestsum":
        # A package that failed outside any test is a synthetic failing ``TestMain`` (with an
        # empty classname) that its suite does not count; the root counts it as an error.
        if key == "tests":
            return declared == counted - suite.package_failures
        if key == "failures" and not suite.root:
            return declared == counted - suite.package_failures
        if key == "errors" and suite.root:
            return declared == counted + suite.package_failures
    return False


_HINTS = {
    "catch2": (
        " (Catch2 counts a [!shouldfail] test that passed as a failure but writes no <failure> "
        "for it, so which test failed cannot be told from this file)"
    ),
}


def reconcile(producer: str, disagreements: Disagreements, name: str, reruns: int = 0) -> None:
    """Refuse the file unless every disagreement is one ``producer``'s counting explains.
    ``reruns``: the rerun elements the reader found (pytest-rerunfailures)."""
    if producer == "node" and (disagreements.comments or disagreements.suites):
        _reconcile_node(disagreements, name)
    for suite in disagreements.suites:
        for key, declared, counted, what in _figures(suite):
            if _explained(producer, suite, key, declared, counted, reruns):
                continue
            if producer == "catch2" and key == "failures":
                counted, what = suite.failure_elements, "failed assertions"
            raise InputError(
                f"{name}: {suite.label} declares {key}={declared} but its testcases hold "
                f"{counted} {what} as EvalArc reads them (producer: {producer}); the file "
                "disagrees with itself or with this reading, so it is refused"
                + _HINTS.get(producer, "")
            )
    if disagreements.overflow and producer != "node":
        raise InputError(
            f"{name}: more than {MAX_DISAGREEMENTS:,} suites disagree with their own counters "
            f"(producer: {producer}); the file is refused"
        )


def _reconcile_node(disagreements: Disagreements, name: str) -> None:
    """node's own totals are its root comments: tests, fail (+ cancelled), skipped + todo."""
    comments = disagreements.comments
    totals = disagreements.totals
    if totals is None or not comments:
        raise InputError(
            f"{name}: node's root comments (<!-- tests N -->, <!-- fail N -->) are missing, so "
            "its suite counters (which count describes as tests) cannot be reconciled; refused"
        )
    figures = (
        ("tests", comments.get("tests", 0), totals.tests, "testcases"),
        (
            "fail",
            comments.get("fail", 0) + comments.get("cancelled", 0),
            totals.failed + totals.errored,
            "failing",
        ),
        (
            "skipped+todo",
            comments.get("skipped", 0) + comments.get("todo", 0),
            totals.skipped,
            "skipped or todo",
        ),
    )
    present = {"tests": "tests" in comments, "fail": "fail" in comments}
    present["skipped+todo"] = "skipped" in comments or "todo" in comments
    for key, declared, counted, what in figures:
        if present[key] and declared != counted:
            raise InputError(
                f"{name}: node's root comments declare {key} {declared} but its testcases hold "
                f"{counted} {what} as EvalArc reads them; the file disagrees with itself or "
                "with this reading, so it is refused"
            )
