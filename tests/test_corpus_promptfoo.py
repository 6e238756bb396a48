"""Every pair of the in-repo promptfoo corpus (made by the real promptfoo CLI, see
tests/corpus/promptfoo/README.md) against its truth, which was computed from promptfoo's own
verdicts: every check the truth says lost passes or coverage (a test's own verdict, `success`, or
one of its assertions, told apart by content) is a blocking row, and nothing else blocks."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalarc.cli import main
from evalarc.formats import load_results
from evalarc.review.diff import BLOCKING_KINDS, DiffOptions, compute_diff

CORPUS = Path(__file__).resolve().parent / "corpus" / "promptfoo" / "generated"
TRUTH: dict[str, Any] = json.loads((CORPUS / "truth.json").read_text(encoding="utf-8"))
PAIRS = sorted(TRUTH["pairs"])


def _diff(pair: dict[str, Any]) -> dict[str, Any]:
    baseline = load_results(CORPUS / pair["baseline"])
    current = load_results(CORPUS / pair["current"])
    return compute_diff(baseline, current, DiffOptions(), created_at="2026-01-01T00:00:00Z")


def expected_case_id(lost: dict[str, Any], pair: dict[str, Any]) -> str:
    """The documented id rule over both files: description, then `` · provider`` and
    `` · prompt <label>`` when the two files together hold more than one of them."""
    case_id = lost["test"]
    providers = set(
        pair["matrix"]["providers"]["baseline"] + pair["matrix"]["providers"]["current"]
    )
    prompts = set(pair["matrix"]["prompts"]["baseline"] + pair["matrix"]["prompts"]["current"])
    if len(providers) > 1:
        case_id += f" · {lost['provider']}"
    if len(prompts) > 1:
        case_id += f" · prompt {lost['prompt']}"
    return case_id


OLDER = {"echo", "qa", "repeat", "provider_errors", "metrics", "matrix_drop_provider"}
NEWEST = {"threshold", "scoring_function", "default_metric"}


def test_truth_names_the_producer_and_every_scenario() -> None:
    assert TRUTH["producer"] == "promptfoo" and TRUTH["versions"] == ["0.121.20", "0.123.1"]
    assert set(PAIRS) == OLDER | NEWEST
    for name in PAIRS:
        assert TRUTH["pairs"][name]["version"] == ("0.123.1" if name in NEWEST else "0.121.20")
    for pair in TRUTH["pairs"].values():
        assert pair["lost"], "every pair has something that must block"


@pytest.mark.parametrize("name", PAIRS)
def test_every_lost_assertion_blocks_and_nothing_else(name: str) -> None:
    pair = TRUTH["pairs"][name]
    report = _diff(pair)
    blocking = Counter(row["case_id"] for row in report["changes"] if row["kind"] in BLOCKING_KINDS)
    expected = Counter(expected_case_id(lost, pair) for lost in pair["lost"])
    assert blocking == expected
    assert report["blocking_changes"] == len(pair["lost"])
    assert report["gate_passed"] is False
    # The headline is promptfoo's own pass rate from its stats.
    for side in ("baseline", "current"):
        stats = pair["stats"][side]
        rate = stats["successes"] / (stats["successes"] + stats["failures"] + stats["errors"])
        assert report[side]["headline"]["value"] == pytest.approx(rate)


def test_provider_errors_are_unassessed_on_the_declared_checks() -> None:
    # Before: each errored test was `removed` on both assertions plus a green
    # "added: provider error" row.
    report = _diff(TRUTH["pairs"]["provider_errors"])
    assert all(row["check"] != "provider error" for row in report["changes"])
    assert report["counts"]["added"] == 0 and report["counts"]["removed"] == 0
    lost = [row for row in report["changes"] if row["case_id"] == "P1 capital of Norway"]
    assert sorted(row["check"] for row in lost) == [
        "(test)",
        "brevity · javascript: output.length < 80",
        "icontains: Oslo",
    ]
    for row in lost:
        assert row["kind"] == "unassessed"
        assert row["current"] == {"passed": 0, "assessed": 0, "attempts": 1}
        assert "HTTP 503" in row["current_detail"][0]["evidence"]
    # Errored in the baseline, fixed now: improved, not "added".
    fixed = [row for row in report["changes"] if row["case_id"] == "P3 capital of Canada"]
    assert {row["kind"] for row in fixed} == {"improved"}


def test_dropping_a_provider_keeps_the_other_cells_paired() -> None:
    # Before: the current file had one provider, so its ids lost the " · alpha" suffix and
    # every cell was removed + added (0 paired).
    report = _diff(TRUTH["pairs"]["matrix_drop_provider"])
    assert report["matrix"]["providers"]["baseline_only"] == ["beta"]
    assert report["matrix"]["providers"]["current_only"] == []
    assert report["matrix"]["prompts"]["baseline_only"] == []
    rows = report["changes"]
    assert report["counts"]["added"] == 0
    assert {row["kind"] for row in rows if "· alpha" in row["case_id"]} <= {"regressed", "improved"}
    assert all(row["kind"] == "removed" for row in rows if "· beta" in row["case_id"])
    assert report["counts"]["unchanged"] >= 6


def test_cli_names_one_sided_providers_and_exits_1() -> None:
    pair = TRUTH["pairs"]["matrix_drop_provider"]
    result = CliRunner().invoke(
        main, ["diff", str(CORPUS / pair["baseline"]), str(CORPUS / pair["current"])]
    )
    assert result.exit_code == 1, result.output
    assert "  Provider only in the baseline run: beta (their cases are removed)" in (
        result.output.splitlines()
    )


def test_named_metrics_and_list_valued_contains_any_are_the_checks() -> None:
    pair = TRUTH["pairs"]["metrics"]
    baseline = load_results(CORPUS / pair["baseline"])
    current = load_results(CORPUS / pair["current"])

    def verdicts(run: Any, case: str) -> dict[str, list[bool | None]]:
        return {check: [a.passed for a in attempts] for check, attempts in run.cases[case].items()}

    # an assertion's `metric:` prefixes its check's name (its content names the rest)
    assert verdicts(baseline, "M1 sum") == {"(test)": [True], "accuracy · contains: 4": [True]}
    assert verdicts(current, "M1 sum") == {"(test)": [False], "accuracy · contains: 4": [False]}
    sql, safety = "sql · starts-with: SELECT", "safety · not-icontains: drop table"
    assert verdicts(baseline, "M2 sql") == {"(test)": [True], sql: [True], safety: [True]}
    assert verdicts(current, "M2 sql") == {"(test)": [False], sql: [True], safety: [False]}
    # a list-valued contains-any shows its list as JSON; its score is kept
    refusal = 'contains-any: ["cannot","can\'t","won\'t"]'
    assert verdicts(current, "M4 refusal") == {"(test)": [True], refusal: [True]}
    assert current.cases["M4 refusal"][refusal][0].value == 1
    fruit = 'contains-any: ["apples","pears"]'
    assert verdicts(current, "M5 fruit") == {"(test)": [False], fruit: [False]}
    failed = current.cases["M1 sum"]["accuracy · contains: 4"][0]
    assert failed.value == 0 and failed.evidence
    # M3 fails in both runs by promptfoo's own row verdicts; one assertion regresses inside it
    rows = {
        side: {r["testCase"]["description"]: r["success"] for r in doc["results"]["results"]}
        for side, doc in (
            ("baseline", json.loads((CORPUS / pair["baseline"]).read_text(encoding="utf-8"))),
            ("current", json.loads((CORPUS / pair["current"]).read_text(encoding="utf-8"))),
        )
    }
    assert rows["baseline"]["M3 greeting"] is False and rows["current"]["M3 greeting"] is False
    assert verdicts(baseline, "M3 greeting") == {
        "(test)": [False],
        "starts-with: Hello": [False],
        "contains: Ada": [True],
        "javascript: output.length < 40": [True],
    }
    assert verdicts(current, "M3 greeting") == {
        "(test)": [False],
        "starts-with: Hello": [True],
        "contains: Ada": [True],
        "javascript: output.length < 40": [False],
    }
    report = _diff(pair)
    kinds = {(r["case_id"], r["check"]): r["kind"] for r in report["changes"]}
    assert kinds[("M3 greeting", "javascript: output.length < 40")] == "regressed"
    assert kinds[("M3 greeting", "starts-with: Hello")] == "improved"


# -- the test's own verdict beyond its assertions (promptfoo 0.123.1) --------------------------


def _blocking(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted(
        (row["kind"], row["case_id"], row["check"])
        for row in report["changes"]
        if row["kind"] in BLOCKING_KINDS
    )


def test_a_test_level_threshold_failing_while_every_assertion_passes_blocks() -> None:
    # Before: no check carried the row's own verdict, so TH1 (success true -> false, every
    # assertion passing in both runs) changed nothing and the diff exited 0.
    pair = TRUTH["pairs"]["threshold"]
    report = _diff(pair)
    assert _blocking(report) == [
        ("regressed", "TH1 threshold lost while every assertion passes", "(test)")
    ]
    current = load_results(CORPUS / pair["current"])
    th1 = current.cases["TH1 threshold lost while every assertion passes"]
    assert [a.passed for a in th1["(test)"]] == [False]
    assert th1["(test)"][0].evidence == "Aggregate score 0.75 < 0.9 threshold"
    assert all(a.passed for name, x in th1.items() if name != "(test)" for a in x)
    # TH2: one assertion fails in both runs, the test passes (aggregate 0.5 >= 0.5)
    th2 = current.cases["TH2 threshold met with a failing assertion"]
    assert [a.passed for a in th2["(test)"]] == [True]
    assert [a.passed for a in th2["contains: appendix"]] == [False]


def test_an_assert_scoring_function_failure_blocks() -> None:
    # promptfoo writes no trace of the scoring function in the row (it was a loaded function):
    # only the row's own verdict says the test failed.
    report = _diff(TRUTH["pairs"]["scoring_function"])
    assert _blocking(report) == [
        ("regressed", "SF1 scoring function fails while every assertion passes", "(test)")
    ]


def test_a_prepended_default_assertion_sharing_the_metric_renames_nothing() -> None:
    # Before: both assertions were named `quality`, numbered by position; the prepended default
    # took `quality`, the regressed one became `quality #2`, "added", and the diff exited 0.
    report = _diff(TRUTH["pairs"]["default_metric"])
    d1 = "D1 quality regresses behind a default assertion"
    assert _blocking(report) == [
        ("regressed", d1, "(test)"),
        ("regressed", d1, "quality · contains: Ada"),
    ]
    added = sorted(
        (row["case_id"], row["check"]) for row in report["changes"] if row["kind"] == "added"
    )
    assert added == [
        (case, "quality · icontains: welcome")
        for case in (d1, "D2 quality kept", "D3 identical assertions")
    ]
    # Two identical assertions are two checks (an ordinal among the identical ones), never
    # two attempts of one.
    current = load_results(CORPUS / TRUTH["pairs"]["default_metric"]["current"])
    d3 = current.cases["D3 identical assertions"]
    assert list(d3) == [
        "(test)",
        "quality · icontains: welcome",
        "quality · contains: Hi",
        "quality · contains: Hi #2",
    ]
    assert all(len(attempts) == 1 for attempts in d3.values())


@pytest.mark.parametrize("name", sorted(NEWEST))
def test_cli_exits_1_on_the_newest_pairs(name: str) -> None:
    pair = TRUTH["pairs"][name]
    result = CliRunner().invoke(
        main, ["diff", str(CORPUS / pair["baseline"]), str(CORPUS / pair["current"])]
    )
    assert result.exit_code == 1, result.output
