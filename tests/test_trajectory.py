"""The trajectory compute (evalarc.review.trajectory): exact left-step areas on hand-checked
cases, every refusal with its message, comparability field by field, and the real durable-kv
example in recordings/examples/trajectory/."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import EvalArcError, IncomparableError, InputError, UsageError
from evalarc.formats.model import Source
from evalarc.packs import load_pack, materialize_workspace
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from evalarc.review.trajectory import (
    CLOCK_SOURCE,
    INTERPRETATION,
    TRAJECTORY_SCHEMA,
    check_budget,
    format_seconds,
    parse_checkpoints,
    trajectory_from_document,
)
from evalarc.runtime.snapshot import snapshot_candidate

EXAMPLE = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "trajectory"
CHECKPOINTS = EXAMPLE / "checkpoints.json"
SOURCE = Source("run.json", "0" * 64)


def example() -> list[dict[str, Any]]:
    document: list[dict[str, Any]] = json.loads(CHECKPOINTS.read_text(encoding="utf-8"))
    return document


REAL = example()[2]["evaluation"]
"""A complete, real evaluation (the durable-kv reference); variants below change one field."""


def evaluation(score: float | None, resolved: bool = False, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = copy.deepcopy(REAL)
    value.update(score=score, resolved=resolved, **changes)
    return value


def points(*pairs: tuple[float, float], resolved_at: float | None = None) -> list[dict[str, Any]]:
    return [
        {"elapsed_seconds": t, "evaluation": evaluation(s, resolved=t == resolved_at)}
        for t, s in pairs
    ]


def compute(document: Any, budget: float = 100) -> dict[str, Any]:
    return trajectory_from_document(document, budget, SOURCE).to_json()


# -- the metric --------------------------------------------------------------------------------


def test_hand_checked_area_zero_before_first_and_last_held_to_budget() -> None:
    report = compute(points((10, 0.5), (60, 1.0), resolved_at=60))
    # (50 * 0.5 + 40 * 1.0) / 100: nothing before 10 s, 1.0 held from 60 s to the budget.
    assert report["normalized_score_area"] == 0.65
    assert report["score_area"] == 65.0
    assert report["final_score"] == 1.0
    assert report["final_resolved"] is True
    assert report["first_resolved_seconds"] == 60
    assert report["regressions"] == []
    assert report["checkpoint_count"] == 2
    assert [(row["held_until_seconds"], row["score_area"]) for row in report["checkpoints"]] == [
        (60, 25.0),
        (100.0, 40.0),
    ]


def test_regression_keeps_its_lower_score() -> None:
    report = compute(points((0, 1.0), (50, 0.25), (75, 0.5), resolved_at=0))
    # 50 * 1.0 + 25 * 0.25 + 25 * 0.5 = 68.75; best-so-far would have given 1.0.
    assert report["normalized_score_area"] == 0.6875
    assert report["regressions"] == [{"elapsed_seconds": 50, "from": 1.0, "to": 0.25}]
    assert report["final_score"] == 0.5
    assert report["first_resolved_seconds"] == 0
    assert report["final_resolved"] is False


def test_no_interpolation_between_checkpoints() -> None:
    # A straight line from (0, 0) to (100, 1) would give 0.5; the left step gives 0.
    assert compute(points((0, 0.0), (100, 1.0)))["normalized_score_area"] == 0.0
    assert compute(points((0, 0.0), (99, 1.0)))["normalized_score_area"] == 0.01


def test_single_checkpoint_at_zero_and_at_the_budget() -> None:
    assert compute(points((0, 0.4)))["normalized_score_area"] == 0.4
    at_budget = compute(points((100, 1.0), resolved_at=100))
    assert at_budget["normalized_score_area"] == 0.0
    assert at_budget["final_score"] == 1.0
    assert at_budget["first_resolved_seconds"] == 100


def test_area_is_summed_exactly_and_rounded_once() -> None:
    report = compute(points((0, 0.1), (1, 0.2), (2, 0.3)), budget=3)
    assert (0.1 + 0.2 + 0.3) / 3 == 0.20000000000000004  # what naive float sums give
    assert report["normalized_score_area"] == 0.2


def test_never_resolved_and_equal_scores_are_no_regression() -> None:
    report = compute(points((5, 0.5), (20, 0.5), (30, 0.0)), budget=40)
    assert report["first_resolved_seconds"] is None
    assert report["regressions"] == [{"elapsed_seconds": 30, "from": 0.5, "to": 0.0}]
    assert report["normalized_score_area"] == 0.3125  # (15 * 0.5 + 10 * 0.5) / 40


def test_report_fields_and_identity() -> None:
    report = compute(points((10, 0.5)))
    assert list(report)[:14] == [
        "schema_version",
        "evalarc_version",
        "source",
        "budget_seconds",
        "normalized_score_area",
        "score_area",
        "final_score",
        "final_resolved",
        "first_resolved_seconds",
        "regressions",
        "checkpoint_count",
        "clock_source",
        "interpretation",
        "identity",
    ]
    assert report["schema_version"] == TRAJECTORY_SCHEMA == "evalarc.trajectory.v1"
    assert report["clock_source"] == CLOCK_SOURCE == "caller-reported"
    assert report["interpretation"] == INTERPRETATION
    assert "not a METR time horizon" in INTERPRETATION
    assert report["source"] == {"name": "run.json", "sha256": "0" * 64}
    assert report["budget_seconds"] == 100.0
    assert report["identity"] == {
        **{
            field: REAL[field]
            for field in ("schema_version", "task", "grader_sha256", "cases_sha256", "runtime")
        },
        "seeds": [17, 41, 97],
        "weights": {
            "basic": 0.25,
            "validation": 0.15,
            "transactions": 0.2,
            "compare_swap": 0.15,
            "persistence": 0.15,
            "crash_recovery": 0.1,
        },
    }
    assert report["checkpoints"][0]["candidate_sha256"] == REAL["candidate_sha256"]


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [0, -1, 0.0, math.nan, math.inf, -math.inf, True, "100", None])
def test_budget_must_be_finite_and_positive(budget: Any) -> None:
    with pytest.raises(UsageError, match=r"^budget_seconds must be finite and positive"):
        check_budget(budget)
    with pytest.raises(UsageError, match=r"^budget_seconds must be finite and positive"):
        parse_checkpoints(points((1, 0.5)), budget, name="run.json")


def _with(entry_change: Any = None, evaluation_change: Any = None) -> list[dict[str, Any]]:
    """Two valid checkpoints with the second one changed."""
    document = points((10, 0.5), (20, 0.75))
    if entry_change is not None:
        entry_change(document[1])
    if evaluation_change is not None:
        evaluation_change(document[1]["evaluation"])
    return document


def _set(key: str, value: Any) -> Any:
    return lambda target: target.__setitem__(key, value)


def _drop(key: str) -> Any:
    return lambda target: target.pop(key)


TIMES = "run.json: checkpoint 2: checkpoint times must increase and stay within the budget"
SCORES = "run.json: checkpoint 2: checkpoint scores must be finite and between zero and one"
VALID = "run.json: checkpoint 2: checkpoint must have a valid evaluated score"

REFUSALS: list[tuple[str, Any, type[EvalArcError], str]] = [
    ("not a list", {"elapsed_seconds": 1}, InputError, "run.json: checkpoints must be an array"),
    ("empty list", [], InputError, "run.json: checkpoints must not be empty (nothing was "),
    ("entry not an object", [points((1, 0.5))[0], 3], InputError,
     "run.json: checkpoint 2: each checkpoint must contain an evaluation object"),
    ("evaluation missing", _with(_drop("evaluation")), InputError,
     "run.json: checkpoint 2: each checkpoint must contain an evaluation object"),
    ("evaluation not an object", _with(_set("evaluation", [])), InputError,
     "run.json: checkpoint 2: each checkpoint must contain an evaluation object"),
    ("newer schema", _with(None, _set("schema_version", "evalarc.evaluation.v3")), InputError,
     "run.json: checkpoint 2: evaluation schema_version 'evalarc.evaluation.v3' is not "
     "'evalarc.evaluation.v2'"),
    ("invalid", _with(None, _set("valid", False)), InputError, VALID + " (valid is False)"),
    ("validity missing", _with(None, _drop("valid")), InputError, VALID + " (valid is missing)"),
    ("environment error", _with(None, _set("status", "environment_error")), InputError,
     VALID + " (status is environment_error)"),
    ("unassessed score", _with(None, _set("score", None)), InputError, VALID + " (score is null)"),
    ("time missing", _with(_drop("elapsed_seconds")), InputError,
     TIMES + " (elapsed_seconds is missing)"),
    ("time not a number", _with(_set("elapsed_seconds", "20")), InputError,
     TIMES + " (elapsed_seconds '20')"),
    ("time Boolean", _with(_set("elapsed_seconds", True)), InputError,
     TIMES + " (elapsed_seconds True)"),
    ("time NaN", _with(_set("elapsed_seconds", math.nan)), InputError,
     TIMES + " (elapsed_seconds nan)"),
    ("time repeated", _with(_set("elapsed_seconds", 10)), InputError,
     TIMES + " (10 s is not after the previous 10 s)"),
    ("time decreasing", _with(_set("elapsed_seconds", 9.5)), InputError,
     TIMES + " (9.5 s is not after the previous 10 s)"),
    ("time beyond budget", _with(_set("elapsed_seconds", 100.5)), InputError,
     TIMES + " (100.5 s exceeds the budget 100 s)"),
    ("score above one", _with(None, _set("score", 1.5)), InputError, SCORES + " (score 1.5)"),
    ("score negative", _with(None, _set("score", -0.25)), InputError, SCORES + " (score -0.25)"),
    ("score text", _with(None, _set("score", "0.5")), InputError, SCORES + " (score '0.5')"),
    ("score Boolean", _with(None, _set("score", True)), InputError, SCORES + " (score True)"),
    ("score infinite", _with(None, _set("score", math.inf)), InputError, SCORES + " (score inf)"),
    ("resolved text", _with(None, _set("resolved", "true")), InputError,
     "run.json: checkpoint 2: checkpoint resolution must be Boolean (resolved is 'true')"),
    ("resolved missing", _with(None, _drop("resolved")), InputError,
     "run.json: checkpoint 2: checkpoint resolution must be Boolean (resolved is missing)"),
    ("candidate malformed", _with(None, _set("candidate_sha256", "ABC")), InputError,
     "run.json: checkpoint 2: evaluation candidate_sha256 must be 64 lowercase hexadecimal"),
    ("task missing", _with(None, _drop("task")), InputError,
     "run.json: checkpoint 2: evaluation task must be an object with a string id and version"),
    ("grader malformed", _with(None, _set("grader_sha256", "f" * 63)), InputError,
     "run.json: checkpoint 2: evaluation grader_sha256 must be 64 lowercase hexadecimal"),
    ("cases missing", _with(None, _drop("cases_sha256")), InputError,
     "run.json: checkpoint 2: evaluation cases_sha256 must be 64 lowercase hexadecimal"),
    ("runtime not an object", _with(None, _set("runtime", "local")), InputError,
     "run.json: checkpoint 2: evaluation runtime must be the complete runtime object"),
    ("seeds empty", _with(None, _set("seeds", [])), InputError,
     "run.json: checkpoint 2: evaluation seeds must be a non-empty list of distinct integers"),
    ("seeds repeated", _with(None, _set("seeds", [17, 17])), InputError,
     "run.json: checkpoint 2: evaluation seeds must be a non-empty list of distinct integers"),
    ("seeds Boolean", _with(None, _set("seeds", [True])), InputError,
     "run.json: checkpoint 2: evaluation seeds must be a non-empty list of distinct integers"),
    ("dimensions missing", _with(None, _drop("dimensions")), InputError,
     "run.json: checkpoint 2: evaluation dimensions must map each dimension to an object with a "
     "numeric weight"),
    ("weight not a number", _with(None, lambda e: e["dimensions"]["basic"].update(weight="1")),
     InputError, "run.json: checkpoint 2: evaluation dimensions must map each dimension to an "),
]  # fmt: skip


@pytest.mark.parametrize(
    ("document", "error", "message"),
    [refusal[1:] for refusal in REFUSALS],
    ids=[refusal[0] for refusal in REFUSALS],
)
def test_refusals_name_the_file_checkpoint_and_rule(
    document: Any, error: type[EvalArcError], message: str
) -> None:
    with pytest.raises(error) as caught:
        compute(document)
    assert type(caught.value) is error
    assert caught.value.message.startswith(message), caught.value.message


def test_first_checkpoint_is_checked_too() -> None:
    document = points((120, 0.5))
    with pytest.raises(InputError, match=r"^run\.json: checkpoint 1: checkpoint times must "):
        compute(document)
    document = points((-1, 0.5))
    with pytest.raises(InputError, match=r"\(-1 s is negative\)$"):
        compute(document)


COMPARABILITY: list[tuple[str, Any, str]] = [
    ("task", _set("task", {**REAL["task"], "version": "0.2.0"}), "task (version)"),
    ("grader", _set("grader_sha256", "a" * 64), "grader_sha256"),
    ("cases", _set("cases_sha256", "b" * 64), "cases_sha256"),
    ("runtime", _set("runtime", {**REAL["runtime"], "response_timeout_seconds": 20.0}),
     "runtime (response_timeout_seconds)"),
    ("runtime platform", _set("runtime", {**REAL["runtime"], "platform": "Darwin"}),
     "runtime (platform)"),
    ("seeds", _set("seeds", [17, 41]), "seeds"),
    ("seeds order", _set("seeds", [97, 41, 17]), "seeds"),
    ("weights", lambda e: e["dimensions"]["basic"].update(weight=0.3), "weights (basic)"),
    ("dimension renamed", lambda e: e["dimensions"].update(extra=e["dimensions"].pop("basic")),
     "weights (basic, extra)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "named"),
    [item[1:] for item in COMPARABILITY],
    ids=[item[0] for item in COMPARABILITY],
)
def test_comparability_on_each_field(change: Any, named: str) -> None:
    document = points((10, 0.5), (20, 0.75), (30, 1.0))
    change(document[2]["evaluation"])
    with pytest.raises(IncomparableError) as caught:
        compute(document)
    assert caught.value.message == (
        "run.json: checkpoint 3: checkpoints must use the same task, grader, cases, runtime, "
        f"seeds, and scoring weights (it differs from checkpoint 1 in {named})"
    )


def test_candidate_and_outcome_fields_may_differ() -> None:
    document = points((10, 0.5), (20, 0.75))
    later = document[1]["evaluation"]
    later["candidate_sha256"] = "c" * 64
    later["cases"] = []
    later["created_at"] = "2030-01-01T00:00:00Z"
    later["evaluation_seconds"] = 1.0
    assert compute(document)["normalized_score_area"] == 0.65  # (10 * 0.5 + 80 * 0.75) / 100


def test_format_seconds() -> None:
    assert [format_seconds(v) for v in (1800, 1800.0, 12.5, 0.125, 2 / 3)] == [
        "1800",
        "1800",
        "12.5",
        "0.125",
        "0.667",
    ]


# -- the real example --------------------------------------------------------------------------


def test_example_area_by_hand() -> None:
    report = trajectory_from_document(
        example(), 3600, Source("checkpoints.json", "0" * 64)
    ).to_json()
    assert [row["score"] for row in report["checkpoints"]] == [0.0, 0.65, 1.0, 0.85]
    # (0 * 600 + 0.65 * 900 + 1.0 * 900 + 0.85 * 900) / 3600 = 2250 / 3600
    assert report["normalized_score_area"] == 0.625
    assert report["final_score"] == 0.85
    assert report["first_resolved_seconds"] == 1800
    assert report["regressions"] == [{"elapsed_seconds": 2700, "from": 1.0, "to": 0.85}]
    assert report["identity"]["task"]["id"] == "durable-kv"
    assert report["identity"]["seeds"] == [17, 41, 97]


def test_example_candidates_are_the_packs_own(tmp_path: Path) -> None:
    pack = load_pack("durable-kv")
    expected = []
    for label, reference, fault in [
        ("starter", False, None),
        ("delete-noop", True, "delete-noop"),
        ("reference", True, None),
        ("cas-always-wins", True, "cas-always-wins"),
    ]:
        workspace = tmp_path / f"ws-{label}"
        materialize_workspace("durable-kv", "python", reference=reference, fault=fault,
                              dest=workspace)  # fmt: skip
        snapshot = snapshot_candidate(
            workspace, tmp_path / f"snap-{label}", list(pack.default_command)
        )
        expected.append(snapshot.sha256)
    recorded = [entry["evaluation"]["candidate_sha256"] for entry in example()]
    assert recorded == expected, "stale example: run python recordings/examples/trajectory/build.py"
    assert all(entry["evaluation"]["valid"] is True for entry in example())


def test_example_fault_checkpoint_reevaluates_to_the_same_outcome(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    materialize_workspace("durable-kv", "python", reference=True, fault="delete-noop",
                          dest=workspace)  # fmt: skip
    run = run_evaluate(
        workspace,
        tmp_path / "run",
        EvaluateOptions(task="durable-kv", backend="local", trust_local=True),
        on_event=lambda event: None,
    )
    fresh = run.report
    saved = example()[1]["evaluation"]
    assert fresh["candidate_sha256"] == saved["candidate_sha256"]
    assert (fresh["score"], fresh["resolved"], fresh["seeds"]) == (0.65, False, [17, 41, 97])
    assert (saved["score"], saved["resolved"], saved["seeds"]) == (0.65, False, [17, 41, 97])

    def outcomes(evaluation: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (case["seed"], case["case_id"], case["status"], case["checks"])
            for case in evaluation["cases"]
        ]

    assert outcomes(fresh) == outcomes(saved)
