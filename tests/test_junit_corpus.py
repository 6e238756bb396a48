"""The JUnit corpus made by the real tools (tests/corpus/junit/): the diff agrees with each
tool's own verdicts, every producer is identified and named by its own stable fields, and the
two false passes of rerun attempts and node's describe names now fail the gate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import InputError
from evalarc.formats.junit import read_junit_bytes
from evalarc.formats.junit_producers import Context, base_id
from evalarc.formats.load import load_results
from evalarc.formats.model import Run, Source
from evalarc.review.diff import BLOCKING_KINDS, DiffOptions, compute_diff

CORPUS = Path(__file__).resolve().parent / "corpus" / "junit"
PAIRS = sorted(path.parent.name for path in CORPUS.glob("*/truth.json"))
CREATED = "2026-01-01T00:00:00Z"
CHECK = "passed"

PRODUCER = {
    "pytest": "pytest",
    "pytest-rerunfailures": "pytest-rerunfailures>=16.6.1",
    "pytest-rerunfailures-fixture": "pytest-rerunfailures>=16.6.1",
    "pytest-teardown": "pytest",
    "node": "node",
    "node-same-name": "node",
    "node-todo": "node",
    "jest": "jest-junit",
    "vitest": "vitest",
    "mocha": "mocha-junit-reporter",
    "mocha-hook": "mocha-junit-reporter",
    "ctest": "ctest",
}


def _truth(pair: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / pair / "truth.json").read_text(encoding="utf-8"))
    return data


def _diff(pair: str) -> dict[str, Any]:
    folder = CORPUS / pair
    return compute_diff(
        load_results(folder / "baseline.xml"),
        load_results(folder / "current.xml"),
        DiffOptions(threshold=1.0),
        created_at=CREATED,
    )


def test_the_corpus_holds_every_generated_producer() -> None:
    assert set(PAIRS) == set(PRODUCER)


@pytest.mark.parametrize("pair", PAIRS)
def test_every_change_the_truth_names_is_reported_and_nothing_else(pair: str) -> None:
    truth = _truth(pair)
    report = _diff(pair)
    reported = sorted((row["kind"], row["case_id"]) for row in report["changes"])
    expected = sorted((change["kind"], change["case_id"]) for change in truth["changes"])
    assert reported == expected
    blocking = {(k, c) for k, c in reported if k in BLOCKING_KINDS}
    assert blocking == {(c["kind"], c["case_id"]) for c in truth["changes"] if c["blocking"]}
    assert report["counts"]["regressed"] >= 1 and report["gate_passed"] is False
    assert report["format"] == "junit"
    assert len(blocking) == truth["blocking"]


@pytest.mark.parametrize("pair", PAIRS)
def test_every_test_the_tool_ran_is_one_case_with_its_attempts(pair: str) -> None:
    truth = _truth(pair)
    for side in ("baseline", "current"):
        run = load_results(CORPUS / pair / f"{side}.xml")
        if side == "current" or pair != "pytest-rerunfailures-fixture":
            assert run.identity["producer"] == PRODUCER[pair]
        verdicts = {
            case: [a["outcome"] for a in attempts] for case, attempts in truth[side].items()
        }
        # mocha-junit-reporter and jest-junit write a skipped test like any other; the tool's
        # skip/pending and errors are unassessed here, RERUN lines are failed attempts.
        read = {
            case: [
                "pass" if a.passed else "fail" if a.passed is False else "unassessed"
                for a in checks[CHECK]
            ]
            for case, checks in run.cases.items()
        }
        told = {
            case: ["unassessed" if o in ("skip", "error") else o for o in outcomes]
            for case, outcomes in verdicts.items()
        }
        assert read == told, side


# -- the two false passes of the issue, through the CLI ----------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_fixture_erroring_on_every_rerun_fails_the_gate() -> None:
    # The only change in this pair: the fixture now errors on every try (EvalArc used to read
    # the two empty rerun elements as passes: "0 lost", exit 0).
    folder = CORPUS / "pytest-rerunfailures-fixture"
    # pytest itself: RERUN, RERUN, ERROR for the test whose fixture broke.
    log = (folder / "current.log").read_text(encoding="utf-8").splitlines()
    prefix = "tests/test_ledger.py::test_uses_ledger "
    words = [line.split()[1] for line in log if line.startswith(prefix)]
    assert words == ["RERUN", "RERUN", "ERROR"]
    done = _cli("diff", str(folder / "baseline.xml"), str(folder / "current.xml"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regressed: tests.test_ledger::test_uses_ledger / passed" in done.stdout
    report = _diff("pytest-rerunfailures-fixture")
    assert [r["case_id"] for r in report["changes"]] == ["tests.test_ledger::test_uses_ledger"]
    row = report["changes"][0]
    assert row["kind"] == "regressed"
    assert (row["baseline"]["passed"], row["current"]["passed"]) == (1, 0)


def test_rerun_shapes_fixed_flaky_and_strict_xfail() -> None:
    report = _diff("pytest-rerunfailures")
    kinds = {row["case_id"].split("::", 1)[1]: row["kind"] for row in report["changes"]}
    assert kinds["test_mul"] == "improved"  # failed on every try, now passes: not less_covered
    assert kinds["test_flaky_io"] == "less_reliable"  # a rerun then a pass: not unchanged
    assert "test_div_zero_inf" not in kinds  # xfail -> strict XPASS failing 3 times: no gain


def test_node_same_names_one_broken_one_fixed_fail_the_gate() -> None:
    # The only change in this pair: the same describe and test in two files, one broken and
    # one fixed (EvalArc used to pool both into "test::handles blanks": unchanged, exit 0).
    folder = CORPUS / "node-same-name"
    done = _cli("diff", str(folder / "baseline.xml"), str(folder / "current.xml"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regressed: parse > handles blanks / passed" in done.stdout
    same = _diff("node-same-name")
    assert [(r["kind"], r["case_id"]) for r in same["changes"]] == [
        ("regressed", "parse > handles blanks"),
        ("improved", "parse > handles blanks #2"),
    ]
    report = _diff("node")
    kinds = {row["case_id"]: row["kind"] for row in report["changes"]}
    # The same describe and test name in two files: one broke, one was fixed.
    assert kinds["parse > handles blanks"] == "regressed"
    assert kinds["parse > handles blanks #2"] == "improved"
    # The same test name in two describe blocks of one file: one broke, one was fixed.
    assert kinds["format > handles blanks"] == "improved"


def test_node_shape_alone_one_broken_one_fixed_is_not_a_pass(tmp_path: Path) -> None:
    def node_file(first: str, second: str) -> str:
        def case(outcome: str) -> str:
            if outcome == "fail":
                return (
                    '<testcase name="works" classname="test">'
                    '<failure type="testCodeFailure" message="no"/></testcase>'
                )
            return '<testcase name="works" classname="test"/>'

        return (
            '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>'
            f'<testsuite name="api" disabled="0">{case(first)}</testsuite>'
            f'<testsuite name="api" disabled="0">{case(second)}</testsuite>'
            "<!-- tests 2 --></testsuites>"
        )

    (tmp_path / "b.xml").write_text(node_file("pass", "fail"))
    (tmp_path / "c.xml").write_text(node_file("fail", "pass"))
    done = _cli("diff", str(tmp_path / "b.xml"), str(tmp_path / "c.xml"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regressed: api > works" in done.stdout


# -- one test per producer: its id rule, which would fail if the rule were reverted -----------


def _read_bytes(data: str) -> Run:
    return read_junit_bytes(data.encode("utf-8"), Source(name="x.xml", sha256="0" * 64), 1.0)


def test_pytest_ids_are_classname_and_name_and_reruns_are_failed_attempts() -> None:
    run = load_results(CORPUS / "pytest-rerunfailures" / "current.xml")
    assert "tests.test_calc.TestParse::test_blank" in run.cases
    flaky = run.cases["tests.test_calc::test_flaky_io"][CHECK]
    assert [(a.passed, a.rerun) for a in flaky] == [(False, False), (True, True)]
    ledger = run.cases["tests.test_calc::test_uses_ledger"][CHECK]
    assert [a.passed for a in ledger] == [False, False, None]
    # Without the plugin the same project writes one element per test.
    plain = load_results(CORPUS / "pytest" / "current.xml")
    assert all(len(checks[CHECK]) == 1 for checks in plain.cases.values())
    assert plain.identity["producer"] == "pytest"


def test_node_ids_are_the_describe_path() -> None:
    run = load_results(CORPUS / "node" / "baseline.xml")
    assert {
        "parse > handles blanks",
        "format > handles blanks",
        "round > negative > half down",
    } <= set(run.cases)
    assert "parse > handles blanks #2" in run.cases  # the same path in the second file
    assert all(len(checks[CHECK]) == 1 for checks in run.cases.values())
    assert not any(case.startswith("test::") for case in run.cases)


def test_jest_junit_ids_are_the_full_name_and_files_never_pool() -> None:
    run = load_results(CORPUS / "jest" / "baseline.xml")
    assert "parse handles blanks" in run.cases and "parse handles blanks #2" in run.cases
    assert all(len(checks[CHECK]) == 1 for checks in run.cases.values())


def test_vitest_ids_are_file_and_describe_path() -> None:
    run = load_results(CORPUS / "vitest" / "baseline.xml")
    assert "calc.test.mjs::parse > handles blanks" in run.cases
    assert "strings.test.mjs::parse > handles blanks" in run.cases


def test_mocha_ids_are_the_full_title() -> None:
    run = load_results(CORPUS / "mocha" / "baseline.xml")
    assert "parse handles blanks" in run.cases and "parse handles blanks #2" in run.cases
    assert "top level works" in run.cases
    assert not any("::" in case for case in run.cases)


def test_ctest_ids_are_the_test_name() -> None:
    run = load_results(CORPUS / "ctest" / "current.xml")
    assert {"add", "sub", "mul", "needs_network", "new_check", "stays_red"} == set(run.cases)
    assert [a.passed for a in run.cases["needs_network"][CHECK]] == [None]  # SKIP_RETURN_CODE


REALWORLD = CORPUS / "realworld"


def _realworld_expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REALWORLD / "expected.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", sorted(_realworld_expected()))
def test_realworld_files_producer_ids_and_attempts(name: str) -> None:
    # expected.json was read off each file's elements by hand (see SOURCE.md), not from EvalArc.
    expected = _realworld_expected()[name]
    if "refused" in expected:
        # Issue 23: a file whose counters disagree with its testcases is refused (exit 2).
        with pytest.raises(InputError, match=re.escape(expected["refused"])):
            load_results(REALWORLD / name)
        return
    run = load_results(REALWORLD / name)
    assert run.identity["producer"] == expected["producer"]
    read = {
        case: [
            "pass" if a.passed else "fail" if a.passed is False else "unassessed"
            for a in checks[CHECK]
        ]
        for case, checks in run.cases.items()
    }
    assert len(read) == expected["cases"]
    counted = {"pass": 0, "fail": 0, "unassessed": 0}
    for outcomes in read.values():
        for outcome in outcomes:
            counted[outcome] += 1
    assert counted == expected["attempts"]
    for case, outcomes in expected["spot"].items():
        assert read[case] == outcomes, case
    same = compute_diff(run, run, DiffOptions(threshold=1.0), created_at=CREATED)
    assert same["changes"] == [] and same["gate_passed"] is True


def test_surefire_and_nextest_flaky_children_are_attempts_in_a_diff() -> None:
    # A test that passed only on a retry is less reliable than one that passed at once.
    passed = (
        '<testsuites name="nextest-run" uuid="u"><testsuite name="core">'
        '<testcase name="io::reads" classname="core"/></testsuite></testsuites>'
    )
    flaky = passed.replace(
        '<testcase name="io::reads" classname="core"/>',
        '<testcase name="io::reads" classname="core">'
        '<flakyFailure type="test failure">timed out</flakyFailure></testcase>',
    )
    base, cur = _read_bytes(passed), _read_bytes(flaky)
    assert cur.identity["producer"] == "cargo-nextest"
    report = compute_diff(base, cur, DiffOptions(threshold=1.0), created_at=CREATED)
    assert [(r["kind"], r["case_id"]) for r in report["changes"]] == [
        ("less_reliable", "core::io::reads")
    ]
    # ... and one that failed on every try but now passes is improved, not less covered.
    failing = passed.replace(
        '<testcase name="io::reads" classname="core"/>',
        '<testcase name="io::reads" classname="core"><failure>1</failure>'
        "<rerunFailure>2</rerunFailure><rerunFailure>3</rerunFailure></testcase>",
    )
    report = compute_diff(
        _read_bytes(failing), base, DiffOptions(threshold=1.0), created_at=CREATED
    )
    assert [(r["kind"], r["case_id"]) for r in report["changes"]] == [
        ("improved", "core::io::reads")
    ]


def test_the_same_id_in_two_suites_is_two_tests_for_every_producer() -> None:
    two = (
        '<testsuites name="{root}"><testsuite name="a"><testcase classname="k" name="t"/>'
        '</testsuite><testsuite name="a"><testcase classname="k" name="t"><failure/></testcase>'
        "</testsuite></testsuites>"
    )
    for root in ("jest tests", "vitest tests", "Mocha Tests", "nextest-run", "other"):
        run = _read_bytes(two.format(root=root))
        assert len(run.cases) == 2, root
        assert [len(checks[CHECK]) for checks in run.cases.values()] == [1, 1], root


PRODUCER_MARKERS = [
    (
        '<testsuites name="pytest tests"><testsuite name="pytest">{case}</testsuite></testsuites>',
        "pytest",
    ),
    (
        '<testsuites><testsuite name="s" disabled="0"><testcase name="n" classname="test"/>'
        "</testsuite><!-- tests 1 --></testsuites>",
        "node",
    ),
    (
        '<testsuites name="jest tests"><testsuite name="s">{case}</testsuite></testsuites>',
        "jest-junit",
    ),
    (
        '<testsuites name="vitest tests"><testsuite name="s">{case}</testsuite></testsuites>',
        "vitest",
    ),
    (
        '<testsuites name="Mocha Tests"><testsuite name="Root Suite">{case}</testsuite>'
        "</testsuites>",
        "mocha-junit-reporter",
    ),
    (
        '<testsuites name="nextest-run"><testsuite name="s">{case}</testsuite></testsuites>',
        "cargo-nextest",
    ),
    (
        '<testsuites><testsuite name="p" timestamp="t">{go}{case}</testsuite></testsuites>',
        "gotestsum",
    ),
    (
        '<testsuites><testsuite name="p" hostname="h" timestamp="t">{go}{case}</testsuite>'
        "</testsuites>",
        "go-junit-report",
    ),
    ('<testsuite name="s" hostname="h" timestamp="t"><properties/>{case}</testsuite>', "gradle"),
    (
        '<testsuite name="s"><testcase name="n" classname="n"><flakyFailure/></testcase>'
        "</testsuite>",
        "surefire",
    ),
    (
        '<testsuites><testsuite name="s"><testcase name="n" classname="n" status="run"/>'
        "</testsuite></testsuites>",
        "ctest",
    ),
    ('<testsuites><testsuite name="s">{case}</testsuite></testsuites>', "junit"),
]


@pytest.mark.parametrize(("template", "producer"), PRODUCER_MARKERS)
def test_producer_markers(template: str, producer: str) -> None:
    go = '<properties><property name="go.version" value="go1.22"/></properties>'
    data = template.format(case='<testcase classname="c" name="n"/>', go=go)
    assert _read_bytes(data).identity["producer"] == producer


def test_node_rule_is_the_describe_path_never_the_constant_classname() -> None:
    context = Context(1, ("a", "b"), "test")
    assert base_id("node", context, "n") == "a > b > n"
    assert base_id("pytest", context, "n") == "test::n"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('<testsuites><testsuite name="s" tests="3"/></testsuites>', "has no <testcase>"),
        (
            '<testsuite name="s"><testcase name="t"><failed/></testcase></testsuite>',
            "<failed> inside <testcase> is not a JUnit shape EvalArc can assess",
        ),
    ],
)
def test_nothing_assessable_is_refused_never_passed(tmp_path: Path, body: str, reason: str) -> None:
    (tmp_path / "empty.xml").write_text(body)
    good = CORPUS / "node-same-name" / "baseline.xml"
    for args in (("empty.xml", str(good)), (str(good), "empty.xml"), ("empty.xml", "empty.xml")):
        done = subprocess.run(
            [sys.executable, "-m", "evalarc.cli", "diff", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("evalarc: empty.xml")
        assert reason in lines[0] and "nothing in" in lines[0]


# -- scenarios of their own: teardown errors, XPASS, node todo failures, mocha hooks ------------


def _log_words(pair: str, side: str, prefix: str) -> list[str]:
    log = (CORPUS / pair / f"{side}.log").read_text(encoding="utf-8").splitlines()
    return [line[len(prefix) :].split()[0] for line in log if line.startswith(prefix)]


def test_pytest_teardown_error_after_a_pass_is_unassessed_and_blocks() -> None:
    # pytest itself: PASSED for the call, then ERROR for the fixture's teardown.
    node_id = "tests/test_store.py::test_uses_temp_resource "
    assert _log_words("pytest-teardown", "current", node_id) == ["PASSED", "ERROR"]
    run = load_results(CORPUS / "pytest-teardown" / "current.xml")
    [attempt] = run.cases["tests.test_store::test_uses_temp_resource"][CHECK]
    assert attempt.passed is None
    assert attempt.evidence is not None
    assert attempt.evidence.startswith('error: failed on teardown with "OSError')
    report = _diff("pytest-teardown")
    kinds = {row["case_id"].split("::", 1)[1]: row["kind"] for row in report["changes"]}
    assert kinds["test_uses_temp_resource"] == "unassessed"  # a pass lost to the teardown
    assert "unassessed" in BLOCKING_KINDS and report["gate_passed"] is False


def test_pytest_non_strict_xpass_is_a_pass_and_an_improvement() -> None:
    node_id = "tests/test_store.py::test_slug_punctuation "
    assert _log_words("pytest-teardown", "baseline", node_id) == ["XFAIL"]
    assert _log_words("pytest-teardown", "current", node_id) == ["XPASS"]
    baseline = load_results(CORPUS / "pytest-teardown" / "baseline.xml")
    current = load_results(CORPUS / "pytest-teardown" / "current.xml")
    case = "tests.test_store::test_slug_punctuation"
    [before] = baseline.cases[case][CHECK]
    [after] = current.cases[case][CHECK]
    assert before.passed is None and before.evidence == "skipped: punctuation is not stripped yet"
    assert after.passed is True  # non-strict XPASS: pytest writes an empty <testcase>
    kinds = {row["case_id"]: row["kind"] for row in _diff("pytest-teardown")["changes"]}
    assert kinds[case] == "improved"


def test_node_todo_that_fails_stays_unassessed_and_changes_nothing() -> None:
    # node: "# TODO" on both sides, passing before and failing now; not counted as a failure.
    current_log = (CORPUS / "node-todo" / "current.log").read_text(encoding="utf-8")
    assert "✖ empty input" in current_log and "ℹ fail 1" in current_log
    xml = (CORPUS / "node-todo" / "current.xml").read_text(encoding="utf-8")
    assert '<skipped type="todo"' in xml and "<failure" in xml.split("empty input", 1)[1]
    case = "edge cases > empty input"
    for side in ("baseline", "current"):
        [attempt] = load_results(CORPUS / "node-todo" / f"{side}.xml").cases[case][CHECK]
        assert attempt.passed is None, side
    [todo] = load_results(CORPUS / "node-todo" / "current.xml").cases[case][CHECK]
    assert todo.evidence is not None and todo.evidence.startswith("skipped: true")
    assert "failure: 'empty input' == 'ok'" in todo.evidence
    report = _diff("node-todo")
    assert [(r["kind"], r["case_id"]) for r in report["changes"]] == [
        ("regressed", "even length"),
        ("improved", "odd length"),
    ]


def test_mocha_failing_before_each_hook_removes_its_tests_and_blocks() -> None:
    hook = 'audit log "before each" hook for "records restocks"'
    current = load_results(CORPUS / "mocha-hook" / "current.xml")
    [attempt] = current.cases[hook][CHECK]
    assert attempt.passed is False
    assert attempt.evidence == "failure: audit store is not reachable"
    assert "audit log records restocks" not in current.cases
    assert hook not in load_results(CORPUS / "mocha-hook" / "baseline.xml").cases
    done = _cli(
        "diff",
        str(CORPUS / "mocha-hook" / "baseline.xml"),
        str(CORPUS / "mocha-hook" / "current.xml"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = _diff("mocha-hook")
    assert [(r["kind"], r["case_id"]) for r in report["changes"]] == [
        ("regressed", "inventory labels items"),
        ("removed", "audit log records removals"),
        ("removed", "audit log records restocks"),
        ("added", hook),
    ]
