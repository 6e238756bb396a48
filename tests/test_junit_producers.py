"""Issue 23 on real files of the producers EvalArc had not read before (GoogleTest, Catch2,
RSpec, Robot Framework, cargo libtest; see tests/fixtures/junit_producers/README.md): each is
recognised from its own markers, named by its own stable fields, reconciled with its own
counters, and none of the shapes that used to pass a regression passes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import evalarc.formats.junit as junit_reader
from evalarc.errors import InputError
from evalarc.formats.junit_producers import Outcome
from evalarc.formats.load import load_results
from evalarc.formats.model import Run
from evalarc.review.diff import DiffOptions, compute_diff

if TYPE_CHECKING:
    from conftest import Cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "junit_producers"
CHECK = "passed"
CREATED = "2026-01-01T00:00:00Z"


def _read(name: str) -> Run:
    return load_results(FIXTURES / name)


def _outcomes(run: Run) -> dict[str, list[bool | None]]:
    return {case: [a.passed for a in checks[CHECK]] for case, checks in run.cases.items()}


def _changes(baseline: str, current: str) -> tuple[list[tuple[str, str]], bool]:
    report: dict[str, Any] = compute_diff(
        _read(baseline), _read(current), DiffOptions(threshold=1.0), created_at=CREATED
    )
    rows = [(row["kind"], row["case_id"]) for row in report["changes"]]
    return rows, bool(report["gate_passed"])


# --- GoogleTest --------------------------------------------------------------------------


def test_googletest_is_not_ctest_and_its_ids_keep_suite_and_value() -> None:
    run = _read("googletest.current.xml")
    assert run.identity["producer"] == "googletest"
    # googletest.current.log: [  FAILED  ] Beta.Works, Neg/Sq.NonNegative/0 (GetParam() = -1);
    # [ SKIPPED ] Alpha.Skipped; "YOU HAVE 1 DISABLED TEST".
    assert _outcomes(run) == {
        "Alpha::Works": [True],
        "Alpha::DISABLED_Later": [None],
        "Alpha::Skipped": [None],
        "Beta::Works": [False],
        "Neg/Sq::NonNegative/0 [-1]": [False],
        "Neg/Sq::NonNegative/1 [2]": [True],
        "Pos/Sq::NonNegative/0 [1]": [True],
        "Pos/Sq::NonNegative/1 [2]": [True],
    }
    disabled = run.cases["Alpha::DISABLED_Later"][CHECK][0]
    assert disabled.evidence == "not run: status=notrun result=suppressed"


def test_googletest_same_name_in_two_suites_and_a_new_instantiation_block() -> None:
    rows, passed = _changes("googletest.baseline.xml", "googletest.current.xml")
    assert passed is False
    assert ("regressed", "Beta::Works") in rows
    assert ("added", "Neg/Sq::NonNegative/0 [-1]") in rows
    # Alpha.Works still passes, and no Pos/Sq case moved: nothing else changed.
    assert {case for _, case in rows} == {
        "Beta::Works",
        "Neg/Sq::NonNegative/0 [-1]",
        "Neg/Sq::NonNegative/1 [2]",
    }


def test_an_unknown_status_or_result_value_is_refused_naming_it(tmp_path: Path) -> None:
    data = (FIXTURES / "googletest.current.xml").read_text(encoding="utf-8")
    path = tmp_path / "odd.xml"
    path.write_text(data.replace('result="suppressed"', 'result="quarantined"'))
    with pytest.raises(InputError, match=r"odd\.xml: a testcase states result='quarantined'"):
        load_results(path)


# --- Catch2, RSpec, Robot, cargo libtest --------------------------------------------------


def test_catch2_mayfail_and_shouldfail_are_expected_failures_sections_are_tests() -> None:
    run = _read("catch2.xml")
    assert run.identity["producer"] == "catch2"
    # catch2.log: "test cases: 5 | 2 passed | 1 failed | 2 failed as expected".
    assert _outcomes(run) == {
        "t.global::adds": [True],
        "t.global::subtracts/small": [True],
        "t.global::subtracts/big": [False],
        "t.global::may fail": [None],
        "t.global::should fail": [None],
    }


def test_rspec_one_liners_with_one_description_are_two_tests_and_block() -> None:
    run = _read("rspec-same-name.current.xml")
    assert run.identity["producer"] == "rspec"
    # rspec-same-name.current.log: "F.." (the first example fails, the second passes).
    assert _outcomes(run) == {
        "spec.calc_spec::Calc is expected to eq 2": [False],
        "spec.calc_spec::Calc is expected to eq 2 #2": [True],
        "spec.calc_spec::Calc adds": [True],
    }
    rows, passed = _changes("rspec-same-name.baseline.xml", "rspec-same-name.current.xml")
    assert passed is False
    assert rows == [
        ("regressed", "spec.calc_spec::Calc is expected to eq 2"),
        ("improved", "spec.calc_spec::Calc is expected to eq 2 #2"),
    ]


def test_robot_tests_sharing_a_name_are_distinct_never_attempts() -> None:
    for name in ("robot.xml", "robot-merged.xml"):
        assert _read(name).identity["producer"] == "robot", name
    run = _read("robot.xml")
    assert all(len(checks[CHECK]) == 1 for checks in run.cases.values())
    # rebot --merge folds the earlier run into the message ("Old status: FAIL"): Robot's own
    # rerun marker, so it is an attempt before the final one.
    merged = _read("robot-merged.xml").cases["Suite::Html Fail"][CHECK]
    assert [(a.passed, a.rerun) for a in merged] == [(False, False), (False, True)]
    assert merged[0].evidence == "an earlier run (rebot --merge): FAIL"
    # robot.log: "Same Name | PASS", "Same Name | FAIL 1 != 2".
    assert _outcomes(_read("robot.xml"))["Suite::Same Name"] == [True]
    assert _outcomes(_read("robot.xml"))["Suite::Same Name #2"] == [False]


def test_cargo_libtest_documents_of_every_binary_are_read() -> None:
    run = _read("cargo-libtest.xml")
    assert run.identity["producer"] == "cargo-libtest"
    # test result lines: lib "1 passed; 1 failed; 1 ignored", tests/it.rs "1 passed".
    assert _outcomes(run) == {
        "tests::it_works": [True],
        "tests::it_fails": [False],
        "integration::integration": [True],
    }


# --- reconciliation must show: a broken reading is refused ---------------------------------


def _failure_read_as_pass(
    real: Any,
) -> Any:
    def broken(testcase: ElementTree.Element, name: str = "") -> tuple[Outcome, ...]:
        outcomes: tuple[Outcome, ...] = real(testcase, name)
        return tuple(
            Outcome(True, None, "") if outcome.kind == "failure" else outcome
            for outcome in outcomes
        )

    return broken


def test_a_reading_that_takes_a_failure_for_a_pass_is_refused(
    monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    """The reader's outcome function is deliberately broken: every failure reads as a pass.
    The file's own counters disagree with that reading, so the diff exits 2 naming the file,
    the suite and both figures instead of passing Beta.Works' regression."""
    monkeypatch.setattr(
        junit_reader, "testcase_outcomes", _failure_read_as_pass(junit_reader.testcase_outcomes)
    )
    baseline = FIXTURES / "googletest.baseline.xml"
    current = FIXTURES / "googletest.current.xml"
    result = cli("diff", baseline, current)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines == [
        f'evalarc: {current}: <testsuite name="Beta"> declares failures=1 but its testcases '
        "hold 0 failing as EvalArc reads them (producer: googletest); the file disagrees with "
        "itself or with this reading, so it is refused"
    ]


def test_the_same_files_read_unbroken_pass_reconciliation(cli: Cli) -> None:
    result = cli("diff", FIXTURES / "googletest.baseline.xml", FIXTURES / "googletest.current.xml")
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ('name="Beta" tests="1" failures="1"', 'name="Beta" tests="2" failures="1"'),
            '<testsuite name="Beta"> declares tests=2 but its testcases hold 1 testcases',
        ),
        (
            (
                'name="Alpha" tests="3" failures="0" disabled="1" skipped="1"',
                'name="Alpha" tests="3" failures="0" disabled="2" skipped="1"',
            ),
            '<testsuite name="Alpha"> declares skipped+disabled=3 but its testcases hold 2',
        ),
    ],
)
def test_counters_that_disagree_are_refused(
    tmp_path: Path, edit: tuple[str, str], expected: str
) -> None:
    data = (FIXTURES / "googletest.current.xml").read_text(encoding="utf-8")
    assert edit[0] in data
    path = tmp_path / "edited.xml"
    path.write_text(data.replace(edit[0], edit[1]))
    with pytest.raises(InputError, match="edited.xml: " + expected.replace("+", r"\+")):
        load_results(path)


def test_an_unknown_producer_must_agree_exactly(tmp_path: Path) -> None:
    path = tmp_path / "plain.xml"
    path.write_text(
        '<testsuite name="calc" tests="2" failures="0"><testcase name="a"/>'
        '<testcase name="b"><failure message="x"/></testcase></testsuite>'
    )
    with pytest.raises(InputError) as refused:
        load_results(path)
    assert str(refused.value).endswith(
        'plain.xml: <testsuite name="calc"> declares failures=0 but its testcases hold 1 '
        "failing as EvalArc reads them (producer: junit); the file disagrees with itself or "
        "with this reading, so it is refused"
    )


def test_robot_html_messages_are_text_and_gotestsum_failed_is_not_a_cause() -> None:
    merged = _read("robot-merged.xml").cases["Suite::Html Fail"][CHECK][-1]
    assert merged.evidence is not None and "<" not in merged.evidence
    assert "New message: bold failure" in merged.evidence
    gotestsum = load_results(
        Path(__file__).resolve().parent / "corpus/junit/realworld/gotestsum-junitxml-report.xml"
    )
    main = gotestsum.cases["gotest.tools/gotestsum/testjson/internal/badmain::TestMain"]
    # message="Failed" on every gotestsum failure; the body says what failed.
    assert main[CHECK][0].evidence == (
        "failure: sometimes main can exit 2\nFAIL\tgotest.tools/gotestsum/testjson/internal/"
        "badmain\t0.001s"
    )


# --- tests sharing one id: paired in document order, refused where that could hide a change --


def _same_name_pair(tmp_path: Path, before: str, now: str) -> tuple[Path, Path]:
    """Two RSpec files from the real baseline, its two same-named examples set to ``before``
    and ``now`` ("P"/"F" in document order)."""
    data = (FIXTURES / "rspec-same-name.baseline.xml").read_text(encoding="utf-8")
    head, first, second, tail = re.split(
        r'(?=<testcase classname="spec.calc_spec" name="Calc (?:is expected to eq 2|adds)")',
        data,
    )
    passing = re.sub(r"><failure.*?</failure></testcase>", "></testcase>", first, flags=re.S)
    failing = second if "<failure" in second else first
    examples = {"P": passing, "F": failing}
    paths = []
    for side, outcomes in (("b", before), ("c", now)):
        body = "".join(examples[o] for o in outcomes)
        fails = outcomes.count("F")
        text = (head + body + tail).replace('failures="1"', f'failures="{fails}"')
        text = text.replace('tests="3"', f'tests="{len(outcomes) + 1}"')
        path = tmp_path / f"{side}.xml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


@pytest.mark.parametrize(
    ("before", "now", "exit_code"),
    [
        ("PF", "PF", 2),  # a swap of a fix and a break reads the same: refused
        ("PF", "FP", 1),  # position pairing already blocks (regressed)
        ("PP", "P", 1),  # one fewer: removed blocks
        ("PF", "PP", 0),  # every member passes, as many as before: no pass lost
        ("PP", "PPP", 0),
    ],
)
def test_same_id_groups_never_pass_a_change_they_could_hide(
    tmp_path: Path, cli: Cli, before: str, now: str, exit_code: int
) -> None:
    baseline, current = _same_name_pair(tmp_path, before, now)
    result = cli("diff", baseline, current)
    assert result.exit_code == exit_code, result.output
    if exit_code == 2:
        assert result.output.strip().splitlines() == [
            f"evalarc: {current.name}: 2 tests are named "
            "'spec.calc_spec::Calc is expected to eq 2' "
            "(the baseline has 2), and not every one passes now; EvalArc pairs them in document "
            "order, which cannot tell a fixed test from a broken one if their order changed, so "
            "the pair is refused; give the tests distinct names (or a suite, class or file that "
            "tells them apart)"
        ]


def test_phpunit_data_sets_are_named_and_nested_suites_reconcile() -> None:
    run = _read("phpunit.xml")
    assert run.identity["producer"] == "phpunit"
    # phpunit.log: "Tests: 7, Assertions: 3, Errors: 1, Failures: 1, Skipped: 1, Incomplete: 1,
    # Risky: 1" (risky is written as an error, incomplete as a skip).
    assert _outcomes(run) == {
        "CalcTest::testAdd with data set #0": [True],
        "CalcTest::testAdd with data set #1": [False],
        'CalcTest::testAdd with data set "named"': [True],
        "CalcTest::testSkip": [None],
        "CalcTest::testIncomplete": [None],
        "CalcTest::testRisky": [None],
        "CalcTest::testError": [None],
    }


def test_case_evidence_reads_every_cargo_document_and_robot_html_as_text() -> None:
    from evalarc.evidence.junit import read_junit_evidence

    cargo = FIXTURES / "cargo-libtest.xml"
    evidence = read_junit_evidence(cargo, run=load_results(cargo))
    assert set(evidence) == {"tests::it_works", "tests::it_fails", "integration::integration"}
    robot = FIXTURES / "robot-merged.xml"
    shown = read_junit_evidence(robot, run=load_results(robot))["Suite::Html Fail"]
    messages = [
        entry.text
        for section in shown.sections
        for entry in section.items
        if entry.label == "message"
    ]
    assert messages and all("<span" not in text for text in messages)


def test_gotestsum_rerun_fails_repeats_are_attempts_of_one_test() -> None:
    run = _read("gotestsum-rerun.xml")
    assert run.identity["producer"] == "gotestsum"
    # gotestsum-rerun.log: "=== FAIL: . TestFlaky", "TestBroken", "(re-run 1)", "(re-run 2)";
    # "DONE 3 runs, 7 tests, 1 skipped, 4 failures".
    attempts = {
        case: [(a.passed, a.rerun) for a in checks[CHECK]] for case, checks in run.cases.items()
    }
    assert attempts == {
        "example.com/calc::TestFlaky": [(False, False), (True, True)],
        "example.com/calc::TestBroken": [(False, False), (False, True), (False, True)],
        "example.com/calc::TestSkipped": [(None, False)],
        "example.com/calc::TestStable": [(True, False)],
    }
    evidence = run.cases["example.com/calc::TestFlaky"][CHECK][0].evidence
    assert evidence is not None and "first try fails" in evidence


def test_playwright_project_is_part_of_the_id_so_a_new_project_hides_nothing() -> None:
    run = _read("playwright.current.xml")
    assert run.identity["producer"] == "playwright"
    # playwright.current.log: "1 failed [api] › tests/calc.spec.js:4:1 › api only breaks",
    # "3 flaky" (passed on retry), "3 skipped", "8 passed"; test.fail() passes as expected.
    outcomes = _outcomes(run)
    assert outcomes["[api] calc.spec.js::api only breaks"] == [False]
    assert outcomes["[web] calc.spec.js::api only breaks"] == [True]
    assert outcomes["[unit] calc.spec.js::expected to fail"] == [True]
    assert outcomes["[api] calc.spec.js::skipped"] == [None]
    rows, passed = _changes("playwright.baseline.xml", "playwright.current.xml")
    assert passed is False
    assert [row for row in rows if row[0] != "added"] == [
        ("regressed", "[api] calc.spec.js::api only breaks")
    ]
    assert sorted(case for kind, case in rows if kind == "added") == [
        f"[web] calc.spec.js::{name}"
        for name in ("adds", "api only breaks", "expected to fail", "flaky once", "skipped")
    ]


def test_catch2_counts_assertions_and_a_passing_shouldfail_test_is_refused() -> None:
    """Catch2's counters count assertions; each failed one is a <failure> of its test case. A
    [!shouldfail] test that passes is a failure Catch2 counts (catch2-shouldfail.log: "test
    cases: 2 | 2 failed") but writes nothing for, so the file is refused, never a pass."""
    with pytest.raises(InputError) as refused:
        _read("catch2-shouldfail.xml")
    message = str(refused.value)
    assert '<testsuite name="sf"> declares failures=3 but its testcases hold 2 failed' in message
    assert "[!shouldfail]" in message


def test_many_disagreeing_suites_are_bounded_and_refused_unless_node() -> None:
    """Only disagreeing suites are kept, at most MAX_DISAGREEMENTS; past that a file is refused
    unless it is node's (whose describes are counted as tests; its root comments decide)."""
    from evalarc.formats.junit import read_junit_bytes
    from evalarc.formats.junit_counts import MAX_DISAGREEMENTS
    from evalarc.formats.model import Source

    count = MAX_DISAGREEMENTS + 10
    suite = '<testsuite name="d{n}" tests="2" failures="0"{extra}><testcase name="t" {cls}/>'
    node = "".join(
        suite.format(n=n, extra=' disabled="0"', cls='classname="test"') + "</testsuite>"
        for n in range(count)
    )
    comments = f"<!-- tests {count} --><!-- pass {count} --><!-- fail 0 -->"
    run = read_junit_bytes(
        f"<testsuites>{node}{comments}</testsuites>".encode(), Source("n.xml", "0"), 1.0
    )
    assert run.identity["producer"] == "node" and len(run.cases) == count
    plain = "".join(
        suite.format(n=n, extra="", cls='classname="c"') + "</testsuite>" for n in range(count)
    )
    with pytest.raises(InputError, match=r'p\.xml: <testsuite name="d0"> declares tests=2'):
        read_junit_bytes(f"<testsuites>{plain}</testsuites>".encode(), Source("p.xml", "0"), 1.0)
