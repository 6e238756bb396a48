"""`evalarc diff --junit FILE`: blocking changes as failed tests, every other check a pass."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as SafeElementTree
import pytest
from click.testing import CliRunner

from evalarc.cli import main
from evalarc.formats import load_results
from evalarc.reports.diff import DiffRequest, run_diff
from evalarc.reports.diff_junit import GATES_CLASSNAME, gate_cases, xml_safe
from evalarc.review.diff import BLOCKING_KINDS, DiffOptions
from evalarc.review.diff_model import CostGate, MissingUsage

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "recordings" / "examples" / "results-diff" / "inspect"


def _diff(
    tmp_path: Path, baseline: Path, current: Path, *extra: str
) -> tuple[int, Path, dict[str, Any]]:
    junit = tmp_path / "diff.junit.xml"
    report_json = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["diff", str(baseline), str(current), "--junit", str(junit), "--json", *extra]
    )
    report_json.write_text(result.stdout)
    report = json.loads(result.stdout) if result.exit_code in (0, 1) else {}
    return result.exit_code, junit, report


def _testcases(junit: Path) -> dict[tuple[str, str], Any]:
    root = SafeElementTree.parse(junit).getroot()
    found: dict[tuple[str, str], Any] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname"), case.get("name"))
        assert key not in found, f"duplicate testcase {key}"
        found[key] = case
    return found


def _failed(cases: dict[tuple[str, str], Any]) -> dict[tuple[str, str], str]:
    return {
        key: case.find("failure").get("type")
        for key, case in cases.items()
        if case.find("failure") is not None
    }


def test_inspect_example_blocking_changes_are_the_failed_tests(tmp_path: Path) -> None:
    code, junit, report = _diff(tmp_path, EXAMPLE / "baseline.json", EXAMPLE / "current.json")
    assert code == 1
    cases = _testcases(junit)
    checks = {key: case for key, case in cases.items() if key[0] != GATES_CLASSNAME}
    assert len(checks) == 16  # 8 cases x 2 scorers: every compared check, unchanged ones too
    assert _failed(cases) == {
        ("refund-duplicate", "includes"): "regressed",
        ("refund-duplicate", "match"): "regressed",
        ("cancel-pending", "match"): "less_reliable",
    }
    failure = cases[("cancel-pending", "match")].find("failure")
    assert failure.get("message") == (
        "less reliable: 2/2 passed -> 1/2 passed; within sampling noise (the gate still fails)"
    )
    assert "evidence cancel:1006:queued" in failure.text
    improved = cases[("refund-large", "match")]
    assert improved.find("failure") is None
    assert improved.find("system-out").text.startswith("improved: 0/2 passed -> 2/2 passed")
    root = SafeElementTree.parse(junit).getroot()
    assert root.get("tests") == "18" and root.get("failures") == "3"
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert suites["evalarc checks"].get("tests") == "16"
    assert suites["evalarc checks"].get("failures") == "3"
    assert suites["evalarc gates"].get("failures") == "0"
    properties = {
        prop.get("name"): prop.get("value") for prop in suites["evalarc checks"].iter("property")
    }
    assert properties["gate_passed"] == "false"
    assert properties["baseline_sha256"] == report["baseline"]["source"]["sha256"]


@pytest.mark.parametrize(
    ("baseline", "current"),
    [
        ("junit/pytest/baseline.xml", "junit/pytest/current.xml"),
        ("junit/mocha/baseline.xml", "junit/mocha/current.xml"),
        ("promptfoo/generated/qa.baseline.json", "promptfoo/generated/qa.current.json"),
        ("inspect/capitals_epochs.baseline.eval", "inspect/capitals_epochs.current.json"),
        ("inspect/flaky_errors.baseline.json", "inspect/flaky_errors.current.json"),
    ],
)
def test_every_compared_check_is_one_testcase_on_the_corpus(
    tmp_path: Path, corpus: Path, baseline: str, current: str
) -> None:
    code, junit, report = _diff(tmp_path, corpus / baseline, corpus / current)
    assert code == 1
    cases = _testcases(junit)
    checks = {key for key in cases if key[0] != GATES_CLASSNAME}
    base_run = load_results(corpus / baseline, "auto", 1.0)
    cur_run = load_results(corpus / current, "auto", 1.0)
    expected = {
        (case_id, check)
        for run in (base_run, cur_run)
        for case_id, case_checks in run.cases.items()
        for check in case_checks
    }
    assert checks == expected
    assert len(checks) == sum(report["counts"].values())
    blocking = {
        (row["case_id"], row["check"]): row["kind"]
        for row in report["changes"]
        if row["kind"] in BLOCKING_KINDS
    }
    assert len(blocking) == report["blocking_changes"] > 0
    assert _failed(cases) == blocking


def test_pytest_corpus_shows_removed_and_skipped_checks_as_failures(
    tmp_path: Path, corpus: Path
) -> None:
    code, junit, _ = _diff(
        tmp_path,
        corpus / "junit/pytest/baseline.xml",
        corpus / "junit/pytest/current.xml",
    )
    assert code == 1
    failed = _failed(_testcases(junit))
    # the kinds pytest's own output implies (tests/corpus/junit/pytest/truth.json)
    assert failed[("tests.test_calc::test_legacy_round", "passed")] == "removed"
    assert failed[("tests.test_calc::test_uses_ledger", "passed")] == "unassessed"
    assert failed[("tests.test_calc::test_sub", "passed")] == "regressed"
    cases = _testcases(junit)
    added = cases[("tests.test_calc::test_new_round", "passed")]
    assert added.find("failure") is None


def test_our_junit_reads_back_through_evalarcs_own_reader(tmp_path: Path, corpus: Path) -> None:
    code, junit, report = _diff(
        tmp_path,
        corpus / "inspect/capitals.baseline.json",
        corpus / "inspect/capitals.current.json",
    )
    assert code == 1
    run = load_results(junit, "junit", 1.0)
    failing = {
        case_id
        for case_id, checks in run.cases.items()
        if any(attempt.passed is False for attempt in checks["passed"])
    }
    assert failing == {
        f"{row['case_id']}::{row['check']}"
        for row in report["changes"]
        if row["kind"] in BLOCKING_KINDS
    }
    assert len(run.cases) == 60 + 2  # 30 cases x 2 scorers, and the two run-finished gates


def test_hostile_case_id_is_escaped_and_the_file_still_parses(tmp_path: Path, corpus: Path) -> None:
    # Through the library call: the terminal output of a lone surrogate is another module's job.
    hostile = 'cap-02"/></testcase><testcase name="forged">&amp;]]>\x00\x1b[31m\ud800'
    encoded = json.dumps(hostile).encode()
    paths = []
    for side in ("baseline", "current"):
        data = (corpus / f"inspect/capitals.{side}.json").read_bytes()
        path = tmp_path / f"{side}.json"
        path.write_bytes(data.replace(b'"cap-02"', encoded))
        paths.append(path)
    junit = tmp_path / "hostile.xml"
    report = run_diff(DiffRequest(paths[0], paths[1], DiffOptions()), junit=junit)
    assert report.blocking_changes == 6
    junit.read_bytes().decode("utf-8")  # valid UTF-8 even with a lone surrogate in the id
    cases = _testcases(junit)
    assert ("forged", "includes") not in cases
    safe = xml_safe(hostile)
    assert "\\x00" in safe and "\\x1b" in safe and "\\ud800" in safe
    failed = _failed(cases)
    assert failed[(safe, "includes")] == "regressed"
    assert failed[(safe, "match")] == "regressed"
    assert len([key for key in cases if key[0] != GATES_CLASSNAME]) == 60


def test_gates_without_a_change_row_fail_a_testcase(tmp_path: Path) -> None:
    code, junit, report = _diff(
        tmp_path,
        EXAMPLE / "baseline.json",
        EXAMPLE / "current.json",
        "--held-out",
        str(EXAMPLE / "split.json"),
        "--require-generalization",
        "--max-cost-ratio",
        "100",
        "--cost-metric",
        "duration",
    )
    assert code == 1
    assert report["cost_gate"]["passed"] is True
    failed = _failed(_testcases(junit))
    assert failed[(GATES_CLASSNAME, "required generalization")] == "generalization_not_shown"
    assert (GATES_CLASSNAME, "cost gate") not in failed
    assert (GATES_CLASSNAME, "cost gate") in _testcases(junit)


def test_gate_cases_name_unfinished_runs_and_a_failed_cost_gate() -> None:
    report = run_diff(
        DiffRequest(EXAMPLE / "baseline.json", EXAMPLE / "current.json", DiffOptions())
    )
    assert report.baseline.status == "success"
    cancelled = {**report.current.identity, "status": "cancelled"}
    report = dataclasses.replace(
        report,
        current=dataclasses.replace(report.current, identity=cancelled, incomplete=True),
        current_incomplete=True,
        cost_gate=CostGate("cost_usd", 2.0, 1.0, 3.0, 3.0, 4, MissingUsage(0, 0), False),
    )
    cases = {case.name: case for case in gate_cases(report)}
    assert cases["baseline run finished"].failure_type is None
    assert cases["current run finished"].failure_type == "current_incomplete"
    assert "'cancelled'" in cases["current run finished"].message
    assert cases["cost gate"].failure_type == "cost_gate_failed"
    assert "required generalization" not in cases


def test_clean_pair_has_no_failures_and_output_is_deterministic(
    tmp_path: Path, corpus: Path
) -> None:
    baseline = corpus / "inspect/capitals.baseline.json"
    current = corpus / "inspect/capitals.baseline.eval"
    first_dir = tmp_path / "a"
    second_dir = tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    code, first, _ = _diff(first_dir, baseline, current)
    assert code == 0
    _, second, _ = _diff(second_dir, baseline, current)
    assert first.read_bytes() == second.read_bytes()
    assert _failed(_testcases(first)) == {}
    assert len(_testcases(first)) == 62


def test_existing_file_is_replaced_and_no_partial_file_is_left(
    tmp_path: Path, corpus: Path
) -> None:
    junit = tmp_path / "diff.junit.xml"
    junit.write_text("old contents")
    code, written, _ = _diff(
        tmp_path, corpus / "junit/mocha/baseline.xml", corpus / "junit/mocha/current.xml"
    )
    assert code == 1 and written == junit
    assert junit.read_bytes().startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    assert sorted(path.name for path in tmp_path.iterdir()) == ["diff.junit.xml", "report.json"]


def test_unusable_input_writes_no_junit_and_a_folder_target_is_refused(
    tmp_path: Path, corpus: Path
) -> None:
    code, junit, _ = _diff(tmp_path, tmp_path / "missing.json", tmp_path / "missing.json")
    assert code == 2
    assert not junit.exists()
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = CliRunner().invoke(
        main,
        [
            "diff",
            str(corpus / "junit/mocha/baseline.xml"),
            str(corpus / "junit/mocha/current.xml"),
            "--junit",
            str(folder),
        ],
    )
    assert result.exit_code == 2
    assert list(folder.iterdir()) == []


def test_ids_that_differ_only_by_an_escape_stay_two_testcases(tmp_path: Path, corpus: Path) -> None:
    # Issue 24 item 10: ESC is written as the four characters \x1b, so a case id holding ESC and
    # one spelling \x1b became one JUnit name; backslashes are doubled in names now.
    ids = {b'"cap-02"': "cap\x1b", b'"cap-03"': "cap\\x1b", b'"cap-04"': "cap\\\\x1b"}
    paths = []
    for side in ("baseline", "current"):
        data = (corpus / f"inspect/capitals.{side}.json").read_bytes()
        for old, new in ids.items():
            assert data.count(old) >= 1
            data = data.replace(old, json.dumps(new).encode())
        path = tmp_path / f"{side}.json"
        path.write_bytes(data)
        paths.append(path)
    junit = tmp_path / "escapes.xml"
    run_diff(DiffRequest(paths[0], paths[1], DiffOptions()), junit=junit)
    cases = _testcases(junit)  # no duplicate (classname, name)
    names = {classname for classname, _ in cases if classname.startswith("cap\\")}
    assert names == {"cap\\x1b", "cap\\\\x1b", "cap\\\\\\\\x1b"}
    assert len([key for key in cases if key[0] != GATES_CLASSNAME]) == 60
