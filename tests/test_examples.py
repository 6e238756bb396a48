"""The bundled examples in recordings/examples/results-diff/ give the outcomes their README
states.

The result files were made by the real tools (Inspect AI, promptfoo, pytest) from the generators
in recordings/examples/results-diff/make/; these tests read them with EvalArc's own readers and
diff.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalarc.cli import main
from evalarc.errors import UsageError
from evalarc.formats import load_results
from evalarc.formats.harness import collect_harness
from evalarc.formats.split import load_split
from evalarc.review.diff import DiffOptions, compute_diff

EXAMPLES = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "results-diff"
INSPECT = EXAMPLES / "inspect"
INSPECT_CASES = {
    "refund-small",
    "refund-large",
    "refund-duplicate",
    "status-open",
    "status-missing",
    "cancel-shipped",
    "cancel-pending",
    "address-change",
}


def diff(baseline: Path, current: Path, **extra: Any) -> dict[str, Any]:
    return compute_diff(
        load_results(baseline), load_results(current), DiffOptions(), created_at="x", **extra
    )


def rows(report: dict[str, Any], *kinds: str) -> set[tuple[str, str, str]]:
    return {
        (row["kind"], row["case_id"], row["check"])
        for row in report["changes"]
        if not kinds or row["kind"] in kinds
    }


def counts(**non_zero: int) -> dict[str, int]:
    kinds = ("regressed", "less_reliable", "unassessed", "removed", "improved", "added")
    return {**dict.fromkeys(kinds, 0), **non_zero}


@pytest.mark.parametrize(
    ("baseline", "current"),
    [
        ("baseline.json", "current.json"),
        ("baseline.eval", "current.eval"),
        ("baseline.json", "current.eval"),
        ("baseline.eval", "current.json"),
    ],
)
def test_inspect_pair_gives_the_documented_diff(baseline: str, current: str) -> None:
    report = diff(INSPECT / baseline, INSPECT / current)

    assert report["format"] == "inspect"
    assert report["counts"] == counts(regressed=2, less_reliable=1, improved=6, unchanged=7)
    assert report["blocking_changes"] == 3
    assert report["blocking_changes_within_sampling_noise"] == 1
    assert report["gate_passed"] is False
    assert report["current_incomplete"] is False
    assert "baseline_incomplete" not in report

    assert report["baseline"]["headline"] == {"name": "match accuracy", "value": 0.625}
    assert report["current"]["headline"] == {"name": "match accuracy", "value": 0.8125}
    for side, passed in (("baseline", 20), ("current", 27)):
        summary = report[side]
        assert summary["cases"] == 8
        assert summary["checks"] == 16
        rate = summary["check_pass_rate"]
        assert (rate["passed"], rate["assessed"]) == (passed, 32)
        assert rate["value"] == passed / 32
        assert summary["identity"]["task"] == "refund_policy"
        assert summary["identity"]["epochs"] == 2

    assert rows(report, "regressed", "less_reliable") == {
        ("regressed", "refund-duplicate", "includes"),
        ("regressed", "refund-duplicate", "match"),
        ("less_reliable", "cancel-pending", "match"),
    }
    assert rows(report, "improved") == {
        ("improved", case, check)
        for case in ("refund-large", "status-missing", "cancel-shipped")
        for check in ("match", "includes")
    }
    # Blocking rows come first, sorted by kind order, then case and check.
    assert [(row["kind"], row["case_id"], row["check"]) for row in report["changes"][:3]] == [
        ("regressed", "refund-duplicate", "includes"),
        ("regressed", "refund-duplicate", "match"),
        ("less_reliable", "cancel-pending", "match"),
    ]

    [flaky] = [row for row in report["changes"] if row["kind"] == "less_reliable"]
    assert flaky["baseline"] == {"passed": 2, "assessed": 2, "attempts": 2}
    assert flaky["current"] == {"passed": 1, "assessed": 2, "attempts": 2}
    assert flaky["within_sampling_noise"] is True
    assert flaky["current_detail"] == [
        {"passed": False, "value": "I", "evidence": "cancel:1006:queued"}
    ]
    for row in report["changes"]:
        if row["kind"] == "regressed":
            assert row["within_sampling_noise"] is False  # a clean 2/2 -> 0/2 swing


def test_inspect_json_and_eval_logs_hold_the_same_attempts() -> None:
    for revision in ("baseline", "current"):
        from_json = load_results(INSPECT / f"{revision}.json")
        from_eval = load_results(INSPECT / f"{revision}.eval")
        assert set(from_json.cases) == INSPECT_CASES
        verdicts = {
            case: {check: [a.passed for a in attempts] for check, attempts in checks.items()}
            for case, checks in from_json.cases.items()
        }
        assert verdicts == {
            case: {check: [a.passed for a in attempts] for check, attempts in checks.items()}
            for case, checks in from_eval.cases.items()
        }


def test_inspect_split_and_harness_give_the_documented_review() -> None:
    report = diff(
        INSPECT / "baseline.eval",
        INSPECT / "current.json",
        split=load_split(INSPECT / "split.json"),
        harness=collect_harness([INSPECT / "harness"]),
    )

    generalization = report["generalization"]
    assert generalization["state"] == "held_out_gain_within_noise"
    assert generalization["split"]["held_out_cases"] == [
        "address-change",
        "status-missing",
        "status-open",
    ]
    held_out = generalization["partitions"]["held_out"]
    tuning = generalization["partitions"]["tuning"]
    assert (held_out["cases"], held_out["blocking_changes"]) == (3, 0)
    assert (held_out["baseline"]["passed"], held_out["baseline"]["assessed"]) == (8, 12)
    assert (held_out["current"]["passed"], held_out["current"]["assessed"]) == (12, 12)
    assert held_out["delta"] == pytest.approx(1 / 3)
    assert (tuning["cases"], tuning["blocking_changes"]) == (5, 3)
    assert (tuning["baseline"]["passed"], tuning["baseline"]["assessed"]) == (12, 20)
    assert (tuning["current"]["passed"], tuning["current"]["assessed"]) == (15, 20)
    assert tuning["delta"] == pytest.approx(0.15)

    leakage = report["leakage"]
    assert len(leakage["files_scanned"]) == 1
    assert leakage["held_out_hits"] == 2
    assert leakage["truncated"] is False
    assert {
        (hit["case_id"], hit["role"], hit["line"], hit["partition"]) for hit in leakage["hits"]
    } == {
        ("status-missing", "input", 9, "held_out"),
        ("status-missing", "expected", 9, "held_out"),
    }
    line_9 = (INSPECT / "harness" / "system-prompt.md").read_text().splitlines()[8]
    assert "status:9999:unknown" in line_9


def test_inspect_case_manifest_covers_every_case_once() -> None:
    manifest = json.loads((INSPECT / "cases.json").read_text())
    assert manifest["schema_version"] == "evalarc.case-manifest.v1"
    declared: dict[str, dict[str, Any]] = {}
    for rule in manifest["cases"]:
        pattern = re.compile(re.escape(rule["match"]).replace(r"\*", ".*") + r"\Z")
        matched = {case for case in INSPECT_CASES if pattern.match(case)}
        assert matched, f"{rule['match']} matches no case"
        for case in matched:
            declared.setdefault(case, rule)
    assert set(declared) == INSPECT_CASES
    sources = {case: rule["source"] for case, rule in declared.items()}
    assert sources == {
        "refund-small": "support_ticket",
        "refund-large": "support_ticket",
        "refund-duplicate": "support_ticket",
        "status-open": "production",
        "status-missing": "production",
        "cancel-shipped": "bug_report",
        "cancel-pending": "model_failure",
        "address-change": "synthetic",
    }
    assert "difficulty" in declared["refund-small"]
    assert "difficulty" not in declared["cancel-pending"]


def test_promptfoo_pair_gives_the_documented_diff() -> None:
    folder = EXAMPLES / "promptfoo"
    report = diff(folder / "baseline.json", folder / "current.json")

    assert report["format"] == "promptfoo"
    # 7 assertions and, per test, its own verdict (promptfoo's `success`) as the check (test)
    assert report["counts"] == counts(regressed=3, improved=3, unchanged=5)
    assert report["blocking_changes"] == 3
    assert report["gate_passed"] is False
    for side in ("baseline", "current"):
        assert report[side]["headline"] == {"name": "promptfoo pass rate", "value": 0.75}
        assert report[side]["cases"] == 4
        assert report[side]["checks"] == 11
        rate = report[side]["check_pass_rate"]
        assert (rate["passed"], rate["assessed"]) == (8, 11)
    assert rows(report) == {
        ("regressed", "duplicate refund is rejected", "(test)"),
        ("improved", "large refund is escalated", "(test)"),
        ("regressed", "duplicate refund is rejected", "icontains: already refunded"),
        ("regressed", "duplicate refund is rejected", "not-icontains: refund approved"),
        ("improved", "large refund is escalated", "icontains: escalated"),
        ("improved", "large refund is escalated", "not-icontains: refund approved"),
    }


def test_promptfoo_pair_records_no_cost_to_gate() -> None:
    folder = EXAMPLES / "promptfoo"
    baseline = load_results(folder / "baseline.json")
    current = load_results(folder / "current.json")
    with pytest.raises(UsageError, match="no attempt records cost or total tokens in both runs"):
        compute_diff(baseline, current, DiffOptions(max_cost_ratio=1.0), created_at="x")


def test_promptfoo_prompt_files_leak_only_positive_expectations() -> None:
    folder = EXAMPLES / "promptfoo"
    prompts = EXAMPLES / "make" / "promptfoo" / "prompts"
    report = diff(
        folder / "baseline.json", folder / "current.json", harness=collect_harness([prompts])
    )
    hits = {
        (Path(hit["file"]).name, hit["case_id"], hit["role"], hit["text"])
        for hit in report["leakage"]["hits"]
    }
    assert hits == {
        ("baseline.txt", "duplicate refund is rejected", "expected", "already refunded"),
        ("baseline.txt", "small refund is approved", "expected", "refund approved"),
        ("current.txt", "small refund is approved", "expected", "refund approved"),
    }


def test_junit_pair_gives_the_documented_diff() -> None:
    folder = EXAMPLES / "junit"
    report = diff(folder / "baseline.xml", folder / "current.xml")

    assert report["format"] == "junit"
    assert report["counts"] == counts(regressed=1, unassessed=1, improved=1, unchanged=5)
    assert report["blocking_changes"] == 2
    assert report["gate_passed"] is False
    assert report["baseline"]["headline"] is None
    assert report["current"]["headline"] is None
    for side, passed, assessed in (("baseline", 7, 8), ("current", 6, 7)):
        assert report[side]["cases"] == 8
        rate = report[side]["check_pass_rate"]
        assert (rate["passed"], rate["assessed"]) == (passed, assessed)
    case = "refund_checks::test_{}".format
    assert rows(report) == {
        ("regressed", case("policy_outcome[refund-duplicate]"), "passed"),
        ("unassessed", case("names_the_order[status-open]"), "passed"),
        ("improved", case("policy_outcome[refund-large]"), "passed"),
    }
    [skipped] = [row for row in report["changes"] if row["kind"] == "unassessed"]
    [attempt] = skipped["current_detail"]
    assert attempt["passed"] is None
    assert "order lookup service unavailable" in attempt["evidence"]
    assert set(report["usage"]["metrics"]) == {"duration_seconds"}


@pytest.mark.parametrize(
    ("baseline", "current", "extra", "exit_code"),
    [
        ("inspect/baseline.json", "inspect/current.eval", [], 1),
        ("promptfoo/baseline.json", "promptfoo/current.json", [], 1),
        ("junit/baseline.xml", "junit/current.xml", [], 1),
        ("promptfoo/baseline.json", "promptfoo/current.json", ["--max-cost-ratio", "1"], 2),
    ],
)
def test_evalarc_diff_exit_codes_on_the_examples(
    baseline: str, current: str, extra: list[str], exit_code: int
) -> None:
    result = CliRunner().invoke(
        main, ["diff", str(EXAMPLES / baseline), str(EXAMPLES / current), "--json", *extra]
    )
    assert result.exit_code == exit_code, result.output


def _readme_sums() -> dict[str, str]:
    text = (EXAMPLES / "README.md").read_text()
    table = text.split("<!-- files:start -->", 1)[1].split("<!-- files:end -->", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", table, re.MULTILINE))


def test_readme_and_redaction_record_match_the_committed_bytes() -> None:
    sums = _readme_sums()
    assert len(sums) == 11
    for name, digest in sums.items():
        assert hashlib.sha256((EXAMPLES / name).read_bytes()).hexdigest() == digest, name
    record = json.loads((EXAMPLES / "redactions.json").read_text())
    assert set(record["files"]) == {name for name in sums if not name.startswith("inspect/")} | {
        f"inspect/{revision}.{suffix}"
        for revision in ("baseline", "current")
        for suffix in ("json", "eval")
    }
    for name, entry in record["files"].items():
        assert entry["published_sha256"] == sums[name], name
    for name in ("junit/baseline.xml", "junit/current.xml"):
        assert 'hostname="redacted"' in (EXAMPLES / name).read_text()
