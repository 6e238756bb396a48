"""eval-health compute: the spec's numbers, every finding's trigger, triage, size/plan, case
manifests, and the Markdown/terminal/page renderings of a report.

Most inputs are the real files in recordings/examples/results-diff/ and tests/corpus; a
trigger no real file shows (truncation, self-grading, a judge on few distinct outputs, thinking
not applied, an inconsistent grader) is made by editing one field of a copy of a real Inspect log.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import IncomparableError, InputError, UsageError
from evalarc.formats import load_results
from evalarc.formats.manifest import MAX_MANIFEST_BYTES, CaseManifest, load_manifest, parse_manifest
from evalarc.formats.model import Attempt, Run, SampleMeta, Source
from evalarc.pages.health import build_health_page, render_health_page
from evalarc.reports.health_text import markdown_summary, terminal_lines
from evalarc.review import health as review_health
from evalarc.review.health import (
    FINDING_IDS,
    HEALTH_SCHEMA,
    MAX_FINDING_ITEMS,
    TRIAGE_NEXT_STEPS,
    HealthOptions,
    attempts_for_effect,
    resolvable_change,
)
from evalarc.review.health_model import HealthReport
from evalarc.review.manifest import assign_rules

EXAMPLES = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "results-diff"
INSPECT = EXAMPLES / "inspect"
CREATED = "2026-01-01T00:00:00Z"


def compute_health(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The report as health.json holds it (the compute returns the typed model)."""
    return review_health.compute_health(*args, **kwargs).to_json()


def typed(report: dict[str, Any]) -> HealthReport:
    """What the renderers take: the typed report, read back from its JSON."""
    return HealthReport.from_json(report, "health.json")


def health(*paths: Path, manifest: CaseManifest | None = None, **options: Any) -> dict[str, Any]:
    runs = [load_results(path) for path in paths]
    return compute_health(runs, HealthOptions(**options), manifest=manifest, created_at=CREATED)


def finding(report: dict[str, Any], finding_id: str) -> dict[str, Any] | None:
    found = [f for f in report["findings"] if f["id"] == finding_id]
    assert len(found) <= 1
    return found[0] if found else None


def ids(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["id"], f["severity"]) for f in report["findings"]]


def triage(report: dict[str, Any]) -> dict[str, str]:
    return {entry["case_id"]: entry["category"] for entry in report["triage"]}


def edited_log(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], source: Path = INSPECT / "baseline.json"
) -> Path:
    """A copy of a real Inspect JSON log with one edit applied. Its ``results`` are left out:
    an edited score would disagree with the log's own metrics and scorer list, which the reader
    refuses (issue 23), and no finding here reads them."""
    document = json.loads(source.read_text(encoding="utf-8"))
    edit(document)
    document.pop("results", None)
    path = tmp_path / f"edited-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def samples_of(document: dict[str, Any], case_id: str) -> list[dict[str, Any]]:
    return [sample for sample in document["samples"] if sample["id"] == case_id]


# -- the spec's numbers ----------------------------------------------------------------------


def test_noise_formula_matches_the_spec_example() -> None:
    assert round(resolvable_change(20, 40), 4) == 0.3099
    assert attempts_for_effect(20, 40, 0.05) == 1537
    # All-pass and all-fail runs are clamped to p = n/(n+1) and 1/(n+1), never zero width.
    assert resolvable_change(40, 40) == pytest.approx(resolvable_change(0, 40))
    assert resolvable_change(40, 40) > 0
    assert resolvable_change(0, 0) == 1.0
    assert resolvable_change(1, 1) == 1.0  # one attempt resolves nothing


def test_recorded_example_ordered_with_min_effect() -> None:
    report = health(
        INSPECT / "baseline.json", INSPECT / "current.json", ordered=True, min_effect=0.05
    )
    assert report["schema_version"] == HEALTH_SCHEMA
    assert [run["pass_rate"] for run in report["runs"]] == [0.625, 0.84375]
    assert [(run["passed"], run["assessed"]) for run in report["runs"]] == [(20, 32), (27, 32)]
    assert report["warnings"] == 1 and report["healthy"] is False
    assert ids(report) == [("flaky_checks", "info"), ("noise_exceeds_min_effect", "warning")]
    flaky = finding(report, "flaky_checks")
    assert flaky is not None
    assert flaky["value"] == 1 / 32
    assert "1 of 32 repeated checks" in flaky["message"]
    assert flaky["items"] == [
        {
            "file": "current.json",
            "case_id": "cancel-pending",
            "check": "match",
            "passed": 1,
            "assessed": 2,
            "attempts": 2,
        }
    ]
    noise = report["noise"]
    assert noise["assessed_attempts"] == 32
    assert noise["pass_rate"] == 0.84375
    assert round(noise["resolvable_change"], 3) == 0.252
    assert noise["attempts_for_min_effect"] == 811
    message = finding(report, "noise_exceeds_min_effect")["message"]  # type: ignore[index]
    assert "84.4%" in message and "25.2%" in message and "811" in message
    assert report["capability_order"] == [
        {
            "weaker": "baseline.json",
            "stronger": "current.json",
            "delta": 0.21875,
            "within_sampling_noise": True,
        }
    ]
    assert report["runs"][1]["interval_95"] == [0.682459, 0.931356]
    assert report["recorded_outputs"] == 32
    assert report["graders"] == {
        "subject_models": ["mockllm/model"],
        "grader_models": [],
        "self_graded": [],
    }
    assert report["provenance"] is None and "plan" not in report


def test_json_and_eval_logs_give_the_same_findings() -> None:
    from_json = health(INSPECT / "baseline.json", INSPECT / "current.json", min_effect=0.05)
    from_eval = health(INSPECT / "baseline.eval", INSPECT / "current.eval", min_effect=0.05)
    assert from_json["findings"] == [
        {**f, "items": [{**i, "file": i["file"].replace(".eval", ".json")} for i in f["items"]]}
        if "items" in f
        else {**f, "message": f["message"].replace(".eval", ".json")}
        for f in from_eval["findings"]
    ]
    assert from_json["triage"] == from_eval["triage"]


def test_junit_current_alone() -> None:
    report = health(EXAMPLES / "junit" / "current.xml")
    assert ids(report) == [("unassessed_attempts", "warning"), ("single_attempt", "info")]
    unassessed = finding(report, "unassessed_attempts")
    assert unassessed is not None and unassessed["value"] == 1 / 8
    assert [item["case_id"] for item in unassessed["items"]] == [
        "refund_checks::test_names_the_order[status-open]"
    ]
    assert triage(report) == {
        "refund_checks::test_names_the_order[status-open]": "pipeline",
        "refund_checks::test_policy_outcome[refund-duplicate]": "consistent_failure",
    }
    assert report["recorded_outputs"] == 0
    assert report["size"]["attempts_per_case"] == 1


# -- findings on real files ------------------------------------------------------------------


def test_always_failing_and_flaky_warning_on_repeated_epochs(corpus: Path) -> None:
    base = corpus / "inspect/capitals_epochs.baseline.json"
    cur = corpus / "inspect/capitals_epochs.current.json"
    alone = health(base)
    always = finding(alone, "always_failing")
    assert always is not None and always["severity"] == "warning"
    assert [(i["case_id"], i["passed"], i["assessed"]) for i in always["items"]] == [
        ("11", 0, 3),
        ("8", 0, 3),
    ]
    flaky = finding(alone, "flaky_checks")
    assert flaky is not None
    assert (flaky["severity"], flaky["value"]) == ("warning", 3 / 12)
    # Pooled over both files case 8 passed (current), so only 11 is always failing.
    pair = health(base, cur)
    always_pair = finding(pair, "always_failing")
    assert always_pair is not None
    assert [(i["case_id"], i["passed"], i["assessed"]) for i in always_pair["items"]] == [
        ("11", 0, 6)
    ]
    pair_flaky = finding(pair, "flaky_checks")
    assert pair_flaky is not None and pair_flaky["value"] == 7 / 24
    assert triage(pair) == {
        "10": "variable",
        "11": "never_passes",
        "12": "variable",
        "6": "variable",
        "7": "variable",
    }
    # Read the other way round, case 8 failed in the last file but passed in the other one.
    reverse = health(cur, base)
    assert triage(reverse)["8"] == "regressed"
    assert triage(reverse)["11"] == "never_passes"


def test_errored_samples_are_unassessed_and_pipeline_failures(corpus: Path) -> None:
    report = health(corpus / "inspect/flaky_errors.current.json")
    unassessed = finding(report, "unassessed_attempts")
    assert unassessed is not None and unassessed["value"] == 2 / 10
    assert {(i["case_id"], i["check"]) for i in unassessed["items"]} == {
        ("q07", "match"),
        ("q10", "match"),
    }
    assert triage(report) == {
        "q06": "consistent_failure",
        "q07": "pipeline",
        "q08": "consistent_failure",
        "q10": "pipeline",
    }
    assert finding(report, "single_attempt") is not None


def test_saturation(corpus: Path) -> None:
    assert finding(health(INSPECT / "current.json"), "saturated") is None
    saturated = finding(health(INSPECT / "current.json", saturation=0.8), "saturated")
    assert saturated is not None and saturated["severity"] == "warning"
    assert saturated["value"] == 0.84375
    assert "--max-cost-ratio" in saturated["message"]
    # The best file decides: 0.625 and 0.84375 against 0.84375 exactly.
    best = health(INSPECT / "baseline.json", INSPECT / "current.json", saturation=0.84375)
    assert finding(best, "saturated") is not None
    assert finding(health(corpus / "inspect/realworld/log_read_sample.json"), "saturated")


def test_single_attempt_absent_when_anything_repeats(corpus: Path) -> None:
    assert finding(health(corpus / "inspect/capitals.current.json"), "single_attempt")
    assert finding(health(INSPECT / "current.json"), "single_attempt") is None
    # promptfoo --repeat 3 rows collapse into attempts of one case
    repeat = corpus / "promptfoo/generated/repeat.current.json"
    assert finding(health(repeat), "single_attempt") is None


def test_min_effect_finding_only_when_noise_is_larger() -> None:
    assert finding(health(INSPECT / "current.json"), "noise_exceeds_min_effect") is None
    assert "attempts_for_min_effect" not in health(INSPECT / "current.json")["noise"]
    relaxed = health(INSPECT / "current.json", min_effect=0.3)
    assert finding(relaxed, "noise_exceeds_min_effect") is None
    assert relaxed["noise"]["attempts_for_min_effect"] == math.ceil(
        (2 * 1.959963984540054) ** 2 * 0.84375 * 0.15625 / 0.09
    )


def test_capability_inversion_within_noise_is_info() -> None:
    report = health(INSPECT / "current.json", INSPECT / "baseline.json", ordered=True)
    inversion = finding(report, "capability_inversion")
    assert inversion is not None and inversion["severity"] == "info"
    assert inversion["value"] == -0.21875
    assert report["capability_order"][0]["within_sampling_noise"] is True
    # Without --ordered the order carries no claim.
    unordered = health(INSPECT / "current.json", INSPECT / "baseline.json")
    assert unordered["capability_order"] == []
    assert finding(unordered, "capability_inversion") is None


def test_provenance_with_the_example_manifest() -> None:
    manifest = load_manifest(INSPECT / "cases.json")
    report = health(INSPECT / "baseline.json", INSPECT / "current.json", manifest=manifest)
    provenance = report["provenance"]
    assert provenance["manifest"]["name"] == "cases.json"
    assert provenance["counts"] == {
        "production": 2,
        "bug_report": 1,
        "support_ticket": 3,
        "synthetic": 1,
        "model_failure": 1,
    }
    assert provenance["declared"] == 8 and provenance["real"] == 6
    assert provenance["undeclared"] == []
    assert provenance["unexplained_model_failures"] == ["cancel-pending"]
    assert ids(report) == [("flaky_checks", "info"), ("adversarial_sampling", "warning")]


# -- findings from edited copies of a real log ------------------------------------------------


def test_inconsistent_grading_and_its_triage(tmp_path: Path) -> None:
    def flip(document: dict[str, Any]) -> None:
        # Both epochs of cancel-pending answered "cancel:1006"; grade the second one a fail.
        second = samples_of(document, "cancel-pending")[1]
        second["scores"]["match"]["value"] = "I"

    path = edited_log(tmp_path, flip)
    report = health(path)
    inconsistent = finding(report, "inconsistent_grading")
    assert inconsistent is not None and inconsistent["severity"] == "warning"
    (item,) = inconsistent["items"]
    assert (item["case_id"], item["check"], item["passed"], item["assessed"]) == (
        "cancel-pending",
        "match",
        1,
        2,
    )
    assert item["file"] == path.name and item["detail"].startswith("output sha256 ")
    assert triage(report)["cancel-pending"] == "grader_inconsistent"
    # The same output graded differently by two checks is not inconsistent (current example).
    assert finding(health(INSPECT / "current.json"), "inconsistent_grading") is None


def test_inconsistent_grading_across_files_has_no_file(tmp_path: Path) -> None:
    def fail_all(document: dict[str, Any]) -> None:
        for sample in samples_of(document, "address-change"):
            sample["scores"]["match"]["value"] = "I"

    report = health(INSPECT / "baseline.json", edited_log(tmp_path, fail_all))
    inconsistent = finding(report, "inconsistent_grading")
    assert inconsistent is not None
    (item,) = inconsistent["items"]
    assert "file" not in item and (item["passed"], item["assessed"]) == (2, 4)


def test_truncated_outputs_and_triage(tmp_path: Path) -> None:
    def cut(document: dict[str, Any]) -> None:
        for sample in samples_of(document, "refund-large"):
            sample["output"]["stop_reason"] = "max_tokens"

    report = health(edited_log(tmp_path, cut))
    truncated = finding(report, "truncated_outputs")
    assert truncated is not None and truncated["value"] == 2
    assert {(i["case_id"], i["check"], i["attempts"]) for i in truncated["items"]} == {
        ("refund-large", "includes", 2),
        ("refund-large", "match", 2),
    }
    assert truncated["items"][0]["detail"] == "stopped by max_tokens"
    assert report["runs"][0]["truncated_attempts"] == 2
    assert triage(report)["refund-large"] == "truncated"


def test_self_graded_by_a_default_grader(tmp_path: Path) -> None:
    def judge(document: dict[str, Any]) -> None:
        document["eval"]["scorers"].append({"name": "model_graded_qa", "options": {}})

    report = health(edited_log(tmp_path, judge))
    self_graded = finding(report, "self_graded")
    assert self_graded is not None and self_graded["severity"] == "warning"
    assert "mockllm/model" in self_graded["message"]
    assert "model_graded_qa" in self_graded["message"]
    assert report["graders"]["self_graded"] == ["mockllm/model"]


def test_model_judge_on_few_distinct_outputs(tmp_path: Path) -> None:
    def judge(document: dict[str, Any]) -> None:
        document["eval"]["scorers"].append(
            {"name": "model_graded_fact", "options": {"model": "openai/gpt-4o"}}
        )
        for sample in document["samples"]:
            sample["scores"]["model_graded_fact"] = {"value": "C"}

    report = health(edited_log(tmp_path, judge))
    replaceable = finding(report, "model_judge_replaceable")
    assert replaceable is not None and replaceable["severity"] == "info"
    assert "model_graded_fact" in replaceable["message"]
    assert report["graders"]["grader_models"] == ["openai/gpt-4o"]
    assert finding(report, "self_graded") is None


def test_model_judge_needs_ten_outputs(tmp_path: Path) -> None:
    def judge_few(document: dict[str, Any]) -> None:
        document["eval"]["scorers"].append(
            {"name": "model_graded_fact", "options": {"model": "openai/gpt-4o"}}
        )
        for sample in document["samples"][:9]:
            sample["scores"]["model_graded_fact"] = {"value": "C"}

    assert finding(health(edited_log(tmp_path, judge_few)), "model_judge_replaceable") is None


def test_model_judge_on_many_distinct_json_outputs(tmp_path: Path) -> None:
    def judge_json(document: dict[str, Any]) -> None:
        document["eval"]["scorers"].append(
            {"name": "model_graded_qa", "options": {"model": "openai/gpt-4o"}}
        )
        for index, sample in enumerate(document["samples"]):
            sample["output"]["completion"] = json.dumps({"answer": index})
            sample["scores"]["model_graded_qa"] = {"value": "C"}

    report = health(edited_log(tmp_path, judge_json))
    assert finding(report, "model_judge_replaceable") is not None


@pytest.mark.parametrize(
    ("config", "reasoning", "expected"),
    [
        ({"reasoning_effort": "high"}, 0, True),
        ({"reasoning_tokens": 2048}, 0, True),
        ({"reasoning_effort": "high"}, 37, False),
        ({"reasoning_effort": "minimal"}, 0, False),
        ({"reasoning_effort": "none"}, 0, False),
        ({"reasoning_effort": "high"}, None, False),  # nothing recorded proves nothing
    ],
)
def test_config_not_applied(
    tmp_path: Path, config: dict[str, Any], reasoning: int | None, expected: bool
) -> None:
    def think(document: dict[str, Any]) -> None:
        document["eval"]["model_generate_config"] = config
        if reasoning is not None:
            for sample in document["samples"]:
                sample["model_usage"]["mockllm/model"]["reasoning_tokens"] = reasoning

    report = health(edited_log(tmp_path, think))
    found = finding(report, "config_not_applied")
    assert (found is not None) is expected
    if found is not None:
        assert found["severity"] == "warning"


# -- findings on constructed runs (pure compute) ----------------------------------------------


def _run(name: str, cases: dict[str, dict[str, list[bool | None]]], task: str = "t") -> Run:
    return Run(
        format="inspect",
        source=Source(name=name, sha256="0" * 64),
        threshold=1.0,
        cases={
            case: {
                check: [Attempt(passed=v) for v in verdicts] for check, verdicts in checks.items()
            }
            for case, checks in cases.items()
        },
        identity={"task": task},
    )


def test_capability_inversion_beyond_noise_is_a_warning() -> None:
    strong = _run("strong.json", {f"c{i}": {"k": [True, True]} for i in range(10)})
    weak = _run("weak.json", {f"c{i}": {"k": [False, False]} for i in range(10)})
    report = compute_health([strong, weak], HealthOptions(ordered=True), created_at=CREATED)
    inversion = finding(report, "capability_inversion")
    assert inversion is not None and inversion["severity"] == "warning"
    assert "weak.json < strong.json" in inversion["message"]
    assert report["capability_order"][0]["within_sampling_noise"] is False
    # Equal rates are not an inversion.
    same = compute_health([strong, strong], HealthOptions(ordered=True), created_at=CREATED)
    assert finding(same, "capability_inversion") is None


def test_flaky_share_boundary_and_severity() -> None:
    # 1 flaky of 10 repeated checks is exactly 10%: info; 2 of 10 is a warning.
    cases: dict[str, dict[str, list[bool | None]]] = {
        f"c{i}": {"k": [True, True]} for i in range(9)
    }
    unsaturated = HealthOptions(saturation=1.0)
    one = compute_health(
        [_run("a.json", {**cases, "x": {"k": [True, False]}})], unsaturated, created_at=CREATED
    )
    assert ids(one) == [("flaky_checks", "info")]
    cases.pop("c0")
    two = compute_health(
        [_run("a.json", {**cases, "x": {"k": [True, False]}, "y": {"k": [False, True]}})],
        unsaturated,
        created_at=CREATED,
    )
    assert ids(two) == [("flaky_checks", "warning")]


def test_always_failing_needs_two_assessed_attempts() -> None:
    report = compute_health(
        [
            _run(
                "a.json",
                {"once": {"k": [False]}, "skipped": {"k": [False, None]}, "ok": {"k": [True]}},
            )
        ],
        HealthOptions(),
        created_at=CREATED,
    )
    assert finding(report, "always_failing") is None
    assert triage(report) == {"once": "consistent_failure", "skipped": "pipeline"}


def test_triage_precedence_between_variable_and_never_passes() -> None:
    last = _run(
        "b.json",
        {
            "mixed": {"a": [True, False], "b": [False, False]},
            "never": {"a": [False, False]},
            "never_single": {"a": [False]},
        },
    )
    report = compute_health([last], HealthOptions(), created_at=CREATED)
    assert triage(report) == {
        "mixed": "variable",
        "never": "never_passes",
        "never_single": "consistent_failure",
    }
    assert set(TRIAGE_NEXT_STEPS) == {
        "pipeline",
        "truncated",
        "grader_inconsistent",
        "regressed",
        "never_passes",
        "variable",
        "consistent_failure",
    }


def test_findings_follow_the_spec_order() -> None:
    run = _run("a.json", {"c": {"k": [False, False]}, "d": {"k": [None]}})
    report = compute_health([run], HealthOptions(min_effect=0.01), created_at=CREATED)
    reported = [f["id"] for f in report["findings"]]
    assert reported == sorted(reported, key=FINDING_IDS.index)
    assert reported == ["always_failing", "unassessed_attempts", "noise_exceeds_min_effect"]


def test_no_assessed_attempt_cannot_resolve_anything() -> None:
    report = compute_health(
        [_run("a.json", {"c": {"k": [None, None]}})],
        HealthOptions(min_effect=0.5),
        created_at=CREATED,
    )
    assert report["noise"] == {
        "assessed_attempts": 0,
        "pass_rate": None,
        "resolvable_change": 1.0,
        "attempts_for_min_effect": math.ceil((2 * 1.959963984540054) ** 2 * 0.25 / 0.25),
    }
    assert report["runs"][0]["interval_95"] is None


# -- size and plan ----------------------------------------------------------------------------


def test_size_and_plan_from_the_last_file() -> None:
    report = health(INSPECT / "baseline.json", INSPECT / "current.json", plan_attempts=4)
    size = report["size"]
    last = report["runs"][1]
    assert size["configurations"] == 2 and size["cases"] == 8
    assert size["attempts_per_case"] == 2
    assert size["case_attempts_per_configuration"] == 16
    assert size["recorded_seconds_per_configuration"] == last["total_duration_seconds"]
    assert size["mean_seconds_per_attempt"] == pytest.approx(last["total_duration_seconds"] / 16)
    assert size["recorded_cost_usd_per_configuration"] is None
    plan = report["plan"]
    assert plan["attempts_per_case"] == 4 and plan["configurations"] == 2
    assert plan["case_attempts"] == 8 * 4 * 2
    assert plan["serial_seconds"] == pytest.approx(size["mean_seconds_per_attempt"] * 64)
    assert plan["cost_usd"] is None


def test_plan_cost_scales_recorded_cost(tmp_path: Path) -> None:
    def priced(document: dict[str, Any]) -> None:
        for sample in document["samples"]:
            sample["model_usage"]["mockllm/model"]["total_cost"] = 0.01

    report = health(edited_log(tmp_path, priced), plan_configs=3)
    assert report["size"]["recorded_cost_usd_per_configuration"] == pytest.approx(0.16)
    assert report["runs"][0]["mean_cost_usd"] == pytest.approx(0.01)
    plan = report["plan"]
    assert (plan["attempts_per_case"], plan["configurations"]) == (2, 3)
    assert plan["case_attempts"] == 48
    assert plan["cost_usd"] == pytest.approx(0.16 / 16 * 48)


# -- option and input validation --------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"saturation": 0.0}, "--saturation"),
        ({"saturation": 1.01}, "--saturation"),
        ({"saturation": math.nan}, "--saturation"),
        ({"min_effect": 0.0}, "--min-effect"),
        ({"min_effect": 1.0}, "--min-effect"),
        ({"plan_attempts": 0}, "--plan-attempts"),
        ({"plan_configs": -1}, "--plan-configs"),
        ({"threshold": math.inf}, "--threshold"),
    ],
)
def test_out_of_range_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        HealthOptions(**options).validate(1)


def test_saturation_of_one_is_allowed() -> None:
    HealthOptions(saturation=1.0).validate(1)


def test_input_count_and_ordered() -> None:
    run = load_results(INSPECT / "current.json")
    with pytest.raises(UsageError, match="1 to 20"):
        compute_health([run] * 21, HealthOptions(), created_at=CREATED)
    with pytest.raises(UsageError, match="1 to 20"):
        compute_health([], HealthOptions(), created_at=CREATED)
    with pytest.raises(UsageError, match="--ordered"):
        compute_health([run], HealthOptions(ordered=True), created_at=CREATED)
    assert len(compute_health([run] * 20, HealthOptions(), created_at=CREATED)["runs"]) == 20


def test_incomparable_inputs(corpus: Path) -> None:
    with pytest.raises(IncomparableError, match="different formats"):
        health(INSPECT / "current.json", EXAMPLES / "junit" / "current.xml")
    with pytest.raises(IncomparableError, match="not comparable"):
        health(corpus / "inspect/capitals.current.json", corpus / "inspect/keywords.current.json")


# -- case manifests ---------------------------------------------------------------------------


def manifest_of(*rules: dict[str, Any], **top: Any) -> CaseManifest:
    document = {"schema_version": "evalarc.case-manifest.v1", "cases": list(rules), **top}
    return parse_manifest(document, Source("m.json", "0" * 64))


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "must hold a JSON object"),
        ({"cases": [{"match": "a", "source": "manual"}]}, "schema_version"),
        ({"schema_version": "evalarc.case-manifest.v2", "cases": []}, "newer than"),
        ({"schema_version": "evalarc.case-manifest.v1", "cases": []}, "non-empty list"),
        ({"schema_version": "evalarc.case-manifest.v1", "cases": {}}, "non-empty list"),
        (
            {"schema_version": "evalarc.case-manifest.v1", "cases": [], "extra": 1},
            "unknown fields",
        ),
        ({"schema_version": "evalarc.case-manifest.v1", "cases": ["a"]}, "must be an object"),
        (
            {"schema_version": "evalarc.case-manifest.v1", "cases": [{"source": "manual"}]},
            "match must be",
        ),
        (
            {"schema_version": "evalarc.case-manifest.v1", "cases": [{"match": "a"}]},
            "source 'None' is not one of",
        ),
        (
            {
                "schema_version": "evalarc.case-manifest.v1",
                "cases": [{"match": "a", "source": "scraped"}],
            },
            "source 'scraped'",
        ),
        (
            {
                "schema_version": "evalarc.case-manifest.v1",
                "cases": [{"match": "a", "source": "manual", "difficulty": " "}],
            },
            "difficulty must be",
        ),
        (
            {
                "schema_version": "evalarc.case-manifest.v1",
                "cases": [{"match": "a", "source": "manual", "note": 3}],
            },
            "note must be",
        ),
        (
            {
                "schema_version": "evalarc.case-manifest.v1",
                "cases": [{"match": "a", "source": "manual", "weight": 2}],
            },
            "cases\\[1\\] has unknown fields",
        ),
    ],
)
def test_manifest_validation(document: object, message: str) -> None:
    with pytest.raises(InputError, match=message) as raised:
        parse_manifest(document, Source("m.json", "0" * 64))
    assert raised.value.message.startswith("m.json")


def test_manifest_file_errors_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": ', encoding="utf-8")
    with pytest.raises(InputError, match=r"broken\.json is not valid JSON"):
        load_manifest(broken)
    duplicated = tmp_path / "dup.json"
    duplicated.write_text('{"cases": [], "cases": []}', encoding="utf-8")
    with pytest.raises(InputError, match=r"dup\.json is not valid JSON"):
        load_manifest(duplicated)
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (MAX_MANIFEST_BYTES + 1))
    with pytest.raises(InputError, match="exceeds"):
        load_manifest(huge)
    with pytest.raises(InputError, match="does not exist"):
        load_manifest(tmp_path / "absent.json")


def test_manifest_first_matching_rule_wins() -> None:
    manifest = manifest_of(
        {"match": "refund-*", "source": "support_ticket"},
        {"match": "refund-large", "source": "bug_report"},
        {"match": "status-open", "source": "production"},
        {"match": "status-?pen", "source": "synthetic"},
    )
    assigned = assign_rules(manifest, ["refund-large", "refund-small", "status-open", "other"])
    assert {case: rule.source if rule else None for case, rule in assigned.items()} == {
        "refund-large": "support_ticket",
        "refund-small": "support_ticket",
        "status-open": "production",
        "other": None,
    }


def test_manifest_globs_are_case_sensitive_and_rules_must_match() -> None:
    manifest = manifest_of(
        {"match": "Refund-*", "source": "manual"}, {"match": "refund-*", "source": "manual"}
    )
    with pytest.raises(InputError, match="rule 1 \\('Refund-\\*'\\) matches no recorded case"):
        assign_rules(manifest, ["refund-small"])
    typo = manifest_of({"match": "refund-smal", "source": "manual"})
    with pytest.raises(InputError, match=r"m\.json: rule 1"):
        assign_rules(typo, ["refund-small"])


def test_provenance_findings(tmp_path: Path) -> None:
    run = load_results(INSPECT / "current.json")

    def review(*rules: dict[str, Any]) -> dict[str, Any]:
        return compute_health(
            [run], HealthOptions(), manifest=manifest_of(*rules), created_at=CREATED
        )

    all_synthetic = review({"match": "*", "source": "synthetic"})
    assert ids(all_synthetic)[-2:] == [
        ("no_real_cases", "warning"),
        ("mostly_synthetic", "warning"),
    ]
    # Exactly half synthetic is not "mostly".
    half = review(
        {"match": "refund-*", "source": "synthetic"},
        {"match": "address-change", "source": "synthetic"},
        {"match": "*", "source": "production"},
    )
    assert finding(half, "mostly_synthetic") is None and finding(half, "no_real_cases") is None
    traffic = review({"match": "*", "source": "user_traffic"})
    assert ("traffic_only", "info") in ids(traffic)
    assert finding(traffic, "no_real_cases") is None
    partial = review({"match": "refund-*", "source": "model_failure", "difficulty": "long policy"})
    undeclared = finding(partial, "provenance_undeclared")
    assert undeclared is not None and undeclared["severity"] == "info" and undeclared["value"] == 5
    assert partial["provenance"]["undeclared"] == [
        "address-change",
        "cancel-pending",
        "cancel-shipped",
        "status-missing",
        "status-open",
    ]
    assert finding(partial, "adversarial_sampling") is None  # a difficulty explains them
    assert finding(partial, "no_real_cases") is not None


# -- renderings -------------------------------------------------------------------------------


def test_terminal_lines_for_the_recorded_example() -> None:
    report = health(
        INSPECT / "baseline.json", INSPECT / "current.json", ordered=True, min_effect=0.05
    )
    lines = terminal_lines(typed(report), "out/health/")
    assert (
        lines[0] == "Eval health: 1 warning(s) | Pass rate: baseline.json 62.5%, current.json 84.4%"
    )
    assert lines[1].startswith("  info: flaky_checks — 1 of 32 repeated checks")
    assert lines[2].startswith("  warning: noise_exceeds_min_effect — ")
    assert lines[-1] == "Report: out/health/index.html"


def test_markdown_summary_sections(corpus: Path) -> None:
    report = health(
        INSPECT / "baseline.json",
        INSPECT / "current.json",
        manifest=load_manifest(INSPECT / "cases.json"),
        ordered=True,
        min_effect=0.05,
        plan_attempts=4,
    )
    text = markdown_summary(typed(report))
    assert text.startswith("### EvalArc eval health: 2 warning(s) before tuning\n")
    assert "| `current.json` | 8 | 16 | 84.4% | 68.2–93.1% | 2 | 0 |" in text
    assert "about 811 are needed to resolve 5.0%" in text
    assert "= 64 case attempts" in text
    assert "support\\_ticket 3" in text or "support_ticket 3" in text
    assert "| `refund-duplicate` | regressed | `includes`, `match` |" in text
    assert "- **warning** `adversarial_sampling`" in text
    healthy = markdown_summary(typed(health(corpus / "inspect/capitals.current.json")))
    assert healthy.startswith("### EvalArc eval health: no warnings\n")


def hostile_run() -> Run:
    case = "x|`<script>alert(1)</script>\nforged"
    meta = SampleMeta(output_text="<img src=x onerror=alert(1)>", verdicts={"k": False})
    return Run(
        format="inspect",
        source=Source(name="evil\x1b[31m.json", sha256="a" * 64),
        threshold=1.0,
        cases={case: {"k": [Attempt(passed=False), Attempt(passed=False)]}},
        identity={"task": "t"},
        samples={case: [meta, meta]},
    )


def test_untrusted_text_is_escaped_everywhere() -> None:
    run = hostile_run()
    report = compute_health([run], HealthOptions(), created_at=CREATED)
    markdown = markdown_summary(typed(report))
    # Identifiers stay inside code spans (backtick -> apostrophe, | escaped, newline folded)
    assert "| `x\\|'<script>alert(1)</script> forged` | never_passes |" in markdown
    assert "<script>" not in markdown.replace("`x\\|'<script>alert(1)</script> forged`", "")
    assert all("\n" not in line for line in terminal_lines(typed(report), None))
    assert "\x1b" not in "".join(terminal_lines(typed(report), None))
    page = render_health_page(typed(report), run)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


class _PageScan(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.sources: list[str] = []
        self.ids: set[str] = set()
        self.csp = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.links.append(str(values["href"]))
        if values.get("src"):
            self.sources.append(str(values["src"]))
        if tag == "meta" and values.get("http-equiv") == "Content-Security-Policy":
            self.csp = True


def test_page_links_stay_inside_and_resolve() -> None:
    runs = [load_results(INSPECT / "baseline.json"), load_results(INSPECT / "current.json")]
    report = compute_health(runs, HealthOptions(min_effect=0.05), created_at=CREATED)
    scan = _PageScan()
    scan.feed(render_health_page(typed(report), runs[-1]))
    assert scan.csp and not scan.sources
    for link in scan.links:
        assert not re.match(r"^[a-z]+:", link), link
        if link.startswith("#"):
            assert link[1:] in scan.ids, link
    assert "#case-1" in scan.links


def test_page_model(corpus: Path) -> None:
    runs = [load_results(INSPECT / "baseline.json"), load_results(INSPECT / "current.json")]
    report = compute_health(runs, HealthOptions(min_effect=0.05), created_at=CREATED)
    page = build_health_page(typed(report), runs[-1])
    assert page.verdict_title == "Fix 1 warning(s) before tuning"
    assert [(card.value, card.label) for card in page.cards] == [
        ("1", "warnings"),
        ("84.4%", "best pass rate"),
        ("25.2%", "resolvable change (last file)"),
        ("2", "result files"),
    ]
    assert page.runs[0].sha256_prefix == runs[0].source.sha256[:16]
    by_case = {case.case_id: case for case in page.cases}
    assert by_case["cancel-pending"].category == "variable"
    assert by_case["cancel-pending"].attempts[1].output == "cancel:1006:queued"
    assert by_case["cancel-pending"].attempts[1].verdicts == "includes: pass, match: fail"
    assert by_case["address-change"].category == "passing"
    healthy = build_health_page(typed(health(corpus / "inspect/capitals.current.json")), None)
    assert healthy.verdict_title == "Ready to tune against: no warnings"
    assert healthy.cases == []


def test_finding_items_are_capped_with_a_total() -> None:
    cases = {f"c{index:04d}": {"k": [None, True]} for index in range(MAX_FINDING_ITEMS + 5)}
    report = compute_health([_run("big.json", cases)], HealthOptions(), created_at=CREATED)
    unassessed = finding(report, "unassessed_attempts")
    assert unassessed is not None
    assert len(unassessed["items"]) == MAX_FINDING_ITEMS
    assert unassessed["items_total"] == MAX_FINDING_ITEMS + 5
    assert unassessed["value"] == 0.5
    text = markdown_summary(typed(report))
    assert f"  - {MAX_FINDING_ITEMS + 5 - 10} more in `health.json`" in text
    page = build_health_page(typed(report), None)
    block = next(b for b in page.findings if b.id == "unassessed_attempts")
    assert len(block.items) == 200 and block.hidden_items == MAX_FINDING_ITEMS + 5 - 200
