"""Every pair of the in-repo promptfoo corpus (made by the real promptfoo CLI, see
tests/corpus/promptfoo/README.md) against its truth, which was computed from promptfoo's own
verdicts: every assertion the truth says lost passes or coverage is a blocking row, and nothing
else blocks."""

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


def test_truth_names_the_producer_and_every_scenario() -> None:
    assert TRUTH["producer"] == "promptfoo" and TRUTH["version"] == "0.121.20"
    assert set(PAIRS) == {
        "echo",
        "qa",
        "repeat",
        "provider_errors",
        "metrics",
        "matrix_drop_provider",
    }
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
    assert sorted(row["check"] for row in lost) == ["brevity", "icontains: Oslo"]
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

    # an assertion's `metric:` names its check (never the assertion type)
    assert verdicts(baseline, "M1 sum") == {"accuracy": [True]}
    assert verdicts(current, "M1 sum") == {"accuracy": [False]}
    assert verdicts(baseline, "M2 sql") == {"sql": [True], "safety": [True]}
    assert verdicts(current, "M2 sql") == {"sql": [True], "safety": [False]}
    # a list-valued contains-any is named by its type; its score is kept
    assert verdicts(current, "M4 refusal") == {"contains-any": [True]}
    assert current.cases["M4 refusal"]["contains-any"][0].value == 1
    assert verdicts(current, "M5 fruit") == {"contains-any": [False]}
    failed = current.cases["M1 sum"]["accuracy"][0]
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
        "starts-with: Hello": [False],
        "contains: Ada": [True],
        "javascript: output.length < 40": [True],
    }
    assert verdicts(current, "M3 greeting") == {
        "starts-with: Hello": [True],
        "contains: Ada": [True],
        "javascript: output.length < 40": [False],
    }
    report = _diff(pair)
    kinds = {(r["case_id"], r["check"]): r["kind"] for r in report["changes"]}
    assert kinds[("M3 greeting", "javascript: output.length < 40")] == "regressed"
    assert kinds[("M3 greeting", "starts-with: Hello")] == "improved"
