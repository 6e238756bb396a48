"""compute_hillclimb on the scripted ticket_routing example (spec §8.3) and on variants of it
written by the same builder, plus every decision and recommendation rule."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from evalarc.errors import IncomparableError, UsageError
from evalarc.formats import Run, load_results
from evalarc.formats.harness import collect_harness
from evalarc.formats.split import CaseSplit, load_split
from evalarc.review import hillclimb as review_hillclimb
from evalarc.review.diff_model import Leakage, Pool
from evalarc.review.hillclimb import HillclimbOptions, compute_hillclimb, decide
from evalarc.review.hillclimb_model import Cost, Final, Side

EXAMPLE = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "hillclimb-review"
RESULTS = sorted((EXAMPLE / "results").glob("0*.json"))


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hillclimb_example_build", EXAMPLE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _builder()


@pytest.fixture(scope="module")
def runs() -> list[Run]:
    return [load_results(path) for path in RESULTS]


@pytest.fixture(scope="module")
def split() -> CaseSplit:
    return load_split(EXAMPLE / "split.json")


def review(
    runs: list[Run], split: CaseSplit, harness: Path | None = None, **options: Any
) -> dict[str, Any]:
    labels = [run.source.name for run in runs]
    return compute_hillclimb(
        runs,
        labels,
        split,
        HillclimbOptions(**options),
        harness=None if harness is None else collect_harness([harness]),
        created_at="2026-10-02T09:00:00Z",
    ).to_json()


def variant(
    tmp_path: Path,
    name: str,
    cost: float,
    tuning: list[int],
    held_out: list[int],
    *,
    usage: bool = True,
) -> Run:
    """A result file written by the example's own builder with other outcomes or costs."""
    document = BUILD.log_document(name, "example/variant", cost, tuning, held_out)
    if not usage:
        for sample in document["samples"]:
            del sample["model_usage"]
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return load_results(path)


def decisions(report: dict[str, Any]) -> list[str]:
    return [step["decision"] for step in report["steps"]]


def pp(delta: float) -> float:
    return round(delta * 100, 1)


# -- the recorded example (spec §8.3) -------------------------------------------------------


def test_builder_is_byte_reproducible(tmp_path: Path) -> None:
    written = BUILD.build(tmp_path)
    assert [path.relative_to(tmp_path).as_posix() for path in written] == [
        *(f"results/{path.name}" for path in RESULTS),
        "split.json",
    ]
    for path in written:
        committed = EXAMPLE / path.relative_to(tmp_path)
        assert path.read_bytes() == committed.read_bytes(), committed


def test_example_shape(runs: list[Run], split: CaseSplit) -> None:
    report = review(runs, split, objective="cost")
    assert report["split"]["tuning_cases"] == 12
    assert report["split"]["held_out_cases"] == [f"holdout-{n:02d}" for n in range(1, 9)]
    assert report["baseline"]["tuning"]["assessed"] == 48
    assert report["baseline"]["held_out"]["assessed"] == 32
    assert all(run.identity["task"] == "ticket_routing" for run in runs)
    assert {check for run in runs for checks in run.cases.values() for check in checks} == {"route"}


def test_cost_objective_decisions_and_merge(runs: list[Run], split: CaseSplit) -> None:
    report = review(runs, split, objective="cost", min_effect=0.05)
    notes = report["notes"]
    assert len(notes) == 2
    assert "27.1%" in notes[0] and "tuning" in notes[0]
    assert "31.2%" in notes[1] and "held-out" in notes[1]
    assert round(report["noise"]["tuning"]["resolvable_change"], 3) == 0.271
    assert round(report["noise"]["held_out"]["resolvable_change"], 3) == 0.312
    steps = report["steps"]
    assert decisions(report) == [
        "keep",
        "rollback_overfit",
        "keep",
        "rollback_regression",
        "keep",
    ]
    assert [(pp(s["tuning"]["delta"]), pp(s["held_out"]["delta"])) for s in steps] == [
        (20.8, 18.8),
        (14.6, 0.0),
        (0.0, 0.0),
        (-10.4, -12.5),
        (0.0, 0.0),
    ]
    assert [round(s["cost"]["ratio"], 3) for s in steps] == [0.891, 1.049, 0.463, 0.211, 0.526]
    assert [s["compared_with"] for s in steps] == [
        "00-opus-5-high.json",
        "01-opus-5-medium.json",
        "01-opus-5-medium.json",
        "03-sonnet-5-high.json",
        "03-sonnet-5-high.json",
    ]
    assert steps[3]["held_out_blocking_changes"][0] == {
        "case_id": "holdout-01",
        "check": "route",
        "kind": "less_reliable",
    }
    assert report["stalls"] == []
    assert not any("stalled" in step for step in steps)
    final = report["final"]
    assert final["label"] == "05-sonnet-5-low.json"
    assert final["index"] == 5
    assert round(final["held_out"]["baseline"]["pass_rate"], 3) == 0.719
    assert round(final["held_out"]["current"]["pass_rate"], 3) == 0.906
    assert final["held_out"]["within_sampling_noise"] is True
    assert round(final["cost"]["ratio"], 3) == 0.217
    assert report["recommendation"] == "merge_cost"
    assert report["merge_recommended"] is True
    assert report["leakage"] is None
    failing = {(row["case_id"], row["failed_attempts"]) for row in report["tuning_failures"]}
    assert failing == {("route-01", 2), ("route-02", 2), ("route-03", 2), ("route-04", 1)}


def test_quality_objective_stalls_and_stays_within_noise(runs: list[Run], split: CaseSplit) -> None:
    report = review(runs, split, objective="quality", min_effect=0.05)
    assert decisions(report) == [
        "keep",
        "rollback_overfit",
        "rollback_no_gain",
        "rollback_regression",
        "rollback_no_gain",
    ]
    assert [step.get("stalled", False) for step in report["steps"]] == [
        False,
        False,
        True,
        False,
        False,
    ]
    (stall,) = report["stalls"]
    assert stall["after_step"] == 3
    assert stall["kept"] == "01-opus-5-medium.json"
    assert stall["categories"] == {"variable": 4}
    assert stall["remaining_tuning_failures"] == 4
    assert [row["case_id"] for row in stall["triage"]] == [
        "route-01",
        "route-02",
        "route-03",
        "route-04",
    ]
    assert round(stall["tuning_headroom"], 4) == round(7 / 48, 4)
    assert stall["headroom_below_noise"] is True
    assert stall["advice"].startswith("Stop tuning")
    assert report["final"]["label"] == "01-opus-5-medium.json"
    assert report["recommendation"] == "do_not_merge_within_noise"
    assert report["merge_recommended"] is False


def test_unrelated_harness_has_no_hits(runs: list[Run], split: CaseSplit) -> None:
    harness = EXAMPLE.parent / "results-diff" / "inspect" / "harness"
    report = review(runs, split, harness=harness, objective="cost")
    assert report["leakage"]["hits"] == []
    assert report["leakage"]["materials_considered"] == 20
    assert report["recommendation"] == "merge_cost"


def test_held_out_text_in_the_harness_blocks_the_merge(
    runs: list[Run], split: CaseSplit, tmp_path: Path
) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text(
        "Route tickets.\nExample: Password reset emails never arrive in my inbox or spam folder.\n",
        encoding="utf-8",
    )
    report = review(runs, split, harness=prompt, objective="cost")
    assert report["leakage"]["held_out_hits"] == 1
    assert report["leakage"]["hits"][0]["case_id"] == "holdout-02"
    assert report["recommendation"] == "do_not_merge_leakage"
    assert report["merge_recommended"] is False


def test_tuning_failures_never_list_held_out_cases(runs: list[Run], split: CaseSplit) -> None:
    report = review([runs[0], runs[0]], split, objective="quality")
    # Nothing is kept; the final result is the baseline, which fails held-out cases too.
    assert report["final"]["label"] == "00-opus-5-high.json"
    assert report["final"]["held_out"]["current"]["passed"] < 32
    cases = {row["case_id"] for row in report["tuning_failures"]}
    assert cases == {f"route-{n:02d}" for n in range(1, 9)}


# -- decision rules ---------------------------------------------------------------------------


def cost(ratio: float) -> Cost:
    return Cost(metric="cost_usd", baseline_mean=1.0, current_mean=ratio, ratio=ratio)


def recommend(
    objective: str,
    kept_any: bool,
    leakage: dict[str, Any] | None,
    final: dict[str, Any],
    max_cost_ratio: float,
) -> str:
    """The recommendation for a final part given by the fields the rule reads."""
    empty = Pool(0, 0, 0, None)

    def side(part: dict[str, Any]) -> Side:
        return Side(empty, empty, part["delta"], part.get("within_sampling_noise", False), 0)

    typed = Final(
        label="kept",
        index=1,
        tuning=side(final["tuning"]),
        held_out=side(final["held_out"]),
        baseline_held_out_interval_95=None,
        held_out_blocking_changes=final["held_out_blocking_changes"],
        cost=final["cost"],
    )
    scan = None if leakage is None else Leakage((), 0, 12, (), leakage["held_out_hits"], False, "")
    return review_hillclimb.recommend(objective, kept_any, scan, typed, max_cost_ratio)


@pytest.mark.parametrize(
    ("objective", "tuning", "held", "blocking", "ratio", "expected", "fragment"),
    [
        ("quality", 0.1, 0.1, 1, 1.0, "rollback_regression", "held-out check(s) lost passes"),
        ("quality", 0.1, -0.05, 0, 1.0, "rollback_regression", "held-out pass rate fell"),
        ("quality", -0.05, 0.1, 0, 1.0, "rollback_regression", "tuning pass rate fell"),
        ("cost", -0.05, 0.0, 0, 0.5, "rollback_regression", "tuning pass rate fell"),
        ("quality", 0.1, 0.0, 0, 1.0, "rollback_overfit", "held-out pass rate did not"),
        ("cost", 0.1, 0.0, 0, 0.5, "rollback_overfit", "held-out pass rate did not"),
        ("quality", 0.1, None, 0, 1.0, "rollback_overfit", "n/a"),
        ("cost", 0.0, 0.0, 0, 0.99, "keep", "fell to 0.990x"),
        ("cost", 0.1, 0.1, 0, 1.0, "keep", "both pass rates rose"),
        ("cost", 0.1, 0.1, 0, 1.01, "rollback_no_gain", "did not fall (1.010x)"),
        ("cost", 0.0, 0.0, 0, 1.0, "rollback_no_gain", "did not fall"),
        ("quality", 0.01, 0.01, 0, 2.0, "keep", "both pass rates rose"),
        ("quality", 0.0, 0.2, 0, 1.0, "rollback_no_gain", "did not both rise"),
        ("quality", 0.0, 0.0, 0, 0.1, "rollback_no_gain", "did not both rise"),
    ],
)
def test_decision_rules(
    objective: str,
    tuning: float | None,
    held: float | None,
    blocking: int,
    ratio: float,
    expected: str,
    fragment: str,
) -> None:
    decision, reason = decide(objective, tuning, held, blocking, cost(ratio), "step.json")
    assert decision == expected
    assert fragment in reason


def test_cost_objective_without_recorded_cost_is_an_error() -> None:
    with pytest.raises(UsageError, match="--objective cost needs recorded cost"):
        decide("cost", 0.0, 0.0, 0, None, "step.json")
    # Regression and overfitting are decided before cost is needed.
    assert decide("cost", -0.1, 0.0, 0, None, "step.json")[0] == "rollback_regression"
    assert decide("cost", 0.1, 0.0, 0, None, "step.json")[0] == "rollback_overfit"


def test_cost_review_of_runs_without_usage_fails(split: CaseSplit, tmp_path: Path) -> None:
    base = variant(tmp_path, "a.json", 0.01, BUILD.BASELINE_TUNING, BUILD.BASELINE_HELD_OUT)
    bare = variant(
        tmp_path, "b.json", 0.01, BUILD.BASELINE_TUNING, BUILD.BASELINE_HELD_OUT, usage=False
    )
    with pytest.raises(UsageError, match="--objective cost needs recorded cost"):
        review([base, bare], split, objective="cost")
    # Recorded time still allows a cost review when asked for explicitly.
    report = review([base, bare], split, objective="cost", cost_metric="duration")
    assert decisions(report) == ["rollback_no_gain"]


def test_equal_cost_keep_needs_both_rates_up_and_does_not_merge(
    split: CaseSplit, tmp_path: Path
) -> None:
    base = variant(tmp_path, "a.json", 0.05, BUILD.BASELINE_TUNING, BUILD.BASELINE_HELD_OUT)
    better = variant(tmp_path, "b.json", 0.05, BUILD.KEPT_TUNING, BUILD.KEPT_HELD_OUT)
    report = review([base, better], split, objective="cost")
    assert decisions(report) == ["keep"]
    assert report["final"]["cost"]["ratio"] == pytest.approx(1.0)
    assert report["recommendation"] == "do_not_merge_cost"


def test_max_cost_ratio_bounds_the_merge(runs: list[Run], split: CaseSplit) -> None:
    assert review(runs, split, objective="cost", max_cost_ratio=0.2)["recommendation"] == (
        "do_not_merge_cost"
    )
    assert review(runs, split, objective="cost", max_cost_ratio=0.25)["recommendation"] == (
        "merge_cost"
    )


def test_quality_merge_needs_a_held_out_gain_beyond_noise(split: CaseSplit, tmp_path: Path) -> None:
    low = [0, 0, 1, 1, 2, 2, 2, 2]  # 10/32 held out
    base = variant(tmp_path, "a.json", 0.05, BUILD.BASELINE_TUNING, low)
    better = variant(tmp_path, "b.json", 0.05, BUILD.KEPT_TUNING, [4] * 8)
    report = review([base, better], split, objective="quality")
    assert decisions(report) == ["keep"]
    assert report["final"]["held_out"]["within_sampling_noise"] is False
    assert report["recommendation"] == "merge"
    assert report["merge_recommended"] is True


def test_nothing_kept_and_stall_triage_from_one_version(runs: list[Run], split: CaseSplit) -> None:
    baseline = runs[0]
    report = review([baseline, baseline, baseline], split, stall_after=2)
    assert decisions(report) == ["rollback_no_gain", "rollback_no_gain"]
    assert report["recommendation"] == "no_change_kept"
    (stall,) = report["stalls"]
    # route-01 never passed, but one kept version cannot call it a ceiling.
    categories = {row["case_id"]: row["category"] for row in stall["triage"]}
    assert categories["route-01"] == "consistent_failure"
    assert categories["route-02"] == "variable"
    assert "never_passes" not in stall["categories"]


def test_stall_is_reported_when_the_streak_equals_stall_after(
    runs: list[Run], split: CaseSplit
) -> None:
    report = review(runs, split, objective="quality", stall_after=1)
    assert [step.get("stalled", False) for step in report["steps"]] == [
        False,
        True,
        False,
        False,
        False,
    ]
    assert [stall["after_step"] for stall in report["stalls"]] == [2]
    report = review(runs, split, objective="quality", stall_after=5)
    assert report["stalls"] == []


def test_recommendation_order() -> None:
    final: dict[str, Any] = {
        "tuning": {"delta": 0.1},
        "held_out": {"delta": 0.2, "within_sampling_noise": False},
        "held_out_blocking_changes": 0,
        "cost": cost(0.5),
    }
    leak = {"held_out_hits": 1}
    assert recommend("quality", False, leak, final, 1.0) == "no_change_kept"
    assert recommend("quality", True, leak, final, 1.0) == "do_not_merge_leakage"
    assert recommend("quality", True, {"held_out_hits": 0}, final, 1.0) == "merge"
    blocked = {**final, "held_out_blocking_changes": 1}
    assert recommend("cost", True, None, blocked, 1.0) == "do_not_merge_regression"
    worse_tuning = {**final, "tuning": {"delta": -0.01}}
    assert recommend("quality", True, None, worse_tuning, 1.0) == "do_not_merge_regression"
    assert recommend("cost", True, None, final, 1.0) == "merge_cost"
    assert recommend("cost", True, None, {**final, "cost": None}, 1.0) == "do_not_merge_cost"
    assert recommend("cost", True, None, {**final, "cost": cost(1.0)}, 2.0) == ("do_not_merge_cost")
    noisy = {**final, "held_out": {"delta": 0.2, "within_sampling_noise": True}}
    assert recommend("quality", True, None, noisy, 1.0) == "do_not_merge_within_noise"
    flat = {**final, "held_out": {"delta": 0.0, "within_sampling_noise": False}}
    assert recommend("quality", True, None, flat, 1.0) == "do_not_merge_within_noise"


# -- refused inputs ---------------------------------------------------------------------------


def test_results_must_share_cases_and_task(
    runs: list[Run], split: CaseSplit, tmp_path: Path
) -> None:
    document = BUILD.log_document("x.json", "m", 0.01, BUILD.KEPT_TUNING, BUILD.KEPT_HELD_OUT)
    document["samples"] = [s for s in document["samples"] if s["id"] != "route-12"]
    document.pop("results")  # its metrics counted route-12: the reader would refuse them
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(IncomparableError, match="same cases"):
        review([runs[0], load_results(fewer)], split)
    document = BUILD.log_document("y.json", "m", 0.01, BUILD.KEPT_TUNING, BUILD.KEPT_HELD_OUT)
    document["eval"]["task"] = "other_task"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(IncomparableError, match="not comparable"):
        review([runs[0], load_results(other)], split)


def test_step_count_limits(runs: list[Run], split: CaseSplit) -> None:
    with pytest.raises(UsageError, match="1 to 50 steps"):
        review(runs[:1], split)
    assert review(runs[:1], split, min_steps=0)["recommendation"] == "no_change_kept"
    with pytest.raises(UsageError, match="1 to 50 steps"):
        review(runs[:1] * 52, split)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"objective": "speed"}, "--objective"),
        ({"stall_after": 0}, "--stall-after"),
        ({"min_effect": 1.0}, "--min-effect"),
        ({"min_effect": 0.0}, "--min-effect"),
        ({"max_cost_ratio": 0.0}, "--max-cost-ratio"),
        ({"cost_metric": "watts"}, "--cost-metric"),
    ],
)
def test_invalid_options(
    runs: list[Run], split: CaseSplit, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        review(runs, split, **options)
