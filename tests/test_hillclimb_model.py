"""The typed hillclimb review (evalarc.review.hillclimb_model): real reviews (the bundled six-step
climb with a harness scan, and a corpus pair of Inspect logs) read back to the same bytes, a
newer schema version and malformed fields are refused with one line naming the file, and
HillclimbOptions round-trip through params.json with the refusals verify always gave."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import pretty_json
from evalarc.errors import InputError, VerificationError
from evalarc.reports.hillclimb import HillclimbRequest, run_hillclimb_review
from evalarc.review.hillclimb import HillclimbOptions
from evalarc.review.hillclimb_model import HillclimbReport

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "recordings" / "examples" / "hillclimb-review"
HARNESS = ROOT / "recordings" / "examples" / "results-diff" / "inspect" / "harness"
NAME = "out/hillclimb.json"


def _split(folder: Path, *held_out: str) -> Path:
    path = folder / "split.json"
    document = {"schema_version": "evalarc.case-split.v1", "held_out": list(held_out)}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["example-cost", "example-stalls", "corpus"])
def written(
    request: pytest.FixtureRequest, corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[HillclimbReport, bytes]:
    folder = tmp_path_factory.mktemp("hillclimb")
    results = sorted((EXAMPLE / "results").glob("0*.json"))
    if request.param == "example-cost":
        review = HillclimbRequest(
            results,
            EXAMPLE / "split.json",
            HillclimbOptions(objective="cost", min_effect=0.05),
            harness=[HARNESS, EXAMPLE / "build.py"],
        )
    elif request.param == "example-stalls":
        review = HillclimbRequest(
            results, EXAMPLE / "split.json", HillclimbOptions(stall_after=1, min_effect=0.2)
        )
    else:
        pair = [corpus / f"inspect/capitals_epochs.{side}.json" for side in ("baseline", "current")]
        review = HillclimbRequest(pair, _split(folder, "1", "2", "3*"), HillclimbOptions())
    report = run_hillclimb_review(review, folder / "report")
    return report, (folder / "report" / "hillclimb.json").read_bytes()


def test_round_trip_gives_the_written_bytes(written: tuple[HillclimbReport, bytes]) -> None:
    report, data = written
    assert pretty_json(report.to_json()).encode() == data
    read = HillclimbReport.from_json(json.loads(data), NAME)
    assert read == report
    assert pretty_json(read.to_json()).encode() == data


def test_the_examples_exercise_every_optional_part(written: tuple[HillclimbReport, bytes]) -> None:
    report, _ = written
    if report.leakage is not None:
        assert report.leakage.hits and report.leakage.held_out_hits > 0
        assert report.final.cost is not None and report.objective == "cost"
    if report.stalls:
        assert any(step.stalled for step in report.steps)
        assert all(stall.triage is not None for stall in report.stalls)
        assert report.noise.tuning.attempts_for_min_effect is not None


def test_newer_version_is_refused_naming_the_file_and_both_versions(
    written: tuple[HillclimbReport, bytes],
) -> None:
    value = json.loads(written[1])
    value["schema_version"] = "evalarc.hillclimb-review.v2"
    with pytest.raises(InputError) as caught:
        HillclimbReport.from_json(value, NAME)
    assert caught.value.message == (
        "out/hillclimb.json is evalarc.hillclimb-review.v2, newer than the "
        "evalarc.hillclimb-review.v1 this EvalArc reads; read it with a newer EvalArc"
    )


MALFORMED = [
    (lambda r: r["steps"][0].update(decision="merge"), "steps[0].decision is not one of"),
    (lambda r: r["steps"][0].update(stalled=False), "steps[0].stalled is written only as true"),
    (lambda r: r["steps"][0]["tuning"]["baseline"].pop("passed"), "baseline.passed is missing"),
    (lambda r: r["final"].update(cost=[]), "final.cost is not a JSON object"),
    (lambda r: r["baseline"]["held_out"].update(interval_95="wide"), "is not a [low, high] pair"),
    (lambda r: r.update(objective="speed"), "objective is not one of quality, cost"),
    (lambda r: r["split"].update(tuning_cases=-2), "split.tuning_cases is negative"),
    (lambda r: r.update(notes="one"), "notes is not a list"),
    (lambda r: r["runs"][0].update(extra=1), "runs[0] has an unknown field 'extra'"),
    (lambda r: r.update(runs=[]), "runs is empty"),
]


@pytest.mark.parametrize(("change", "message"), MALFORMED)
def test_malformed_fields_are_refused_in_one_line(
    written: tuple[HillclimbReport, bytes], change: Any, message: str
) -> None:
    value = copy.deepcopy(json.loads(written[1]))
    change(value)
    with pytest.raises(InputError) as caught:
        HillclimbReport.from_json(value, NAME)
    assert caught.value.message.startswith(f"{NAME}: ")
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_malformed_leakage_hit_is_refused() -> None:
    results = sorted((EXAMPLE / "results").glob("0*.json"))
    report = run_hillclimb_review(
        HillclimbRequest(
            results, EXAMPLE / "split.json", HillclimbOptions(), harness=[EXAMPLE / "build.py"]
        )
    )
    value = report.to_json()
    assert value["leakage"]["hits"]
    value["leakage"]["hits"][0]["line"] = "7"
    with pytest.raises(InputError, match=r"leakage\.hits\[0\]\.line is not an integer"):
        HillclimbReport.from_json(value, NAME)


# -- options ------------------------------------------------------------------------------------


def test_options_round_trip_through_params() -> None:
    options = HillclimbOptions(
        objective="cost", cost_metric="tokens", max_cost_ratio=0.8, stall_after=3, min_effect=0.1
    )
    assert HillclimbOptions.from_params(options.to_params(), "params.json") == options
    assert HillclimbOptions.from_params(HillclimbOptions().to_params(), "p.json") == (
        HillclimbOptions()
    )
    older = {key: value for key, value in options.to_params().items() if key != "leak_min_chars"}
    assert HillclimbOptions.from_params(older, "params.json").leak_min_chars == 12


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"objective": None}, "params.json has no text objective"),
        ({"max_cost_ratio": "1"}, "params.json has no numeric max_cost_ratio"),
        ({"stall_after": 2.0}, "params.json has no integer stall_after"),
        ({"min_steps": True}, "params.json has no integer min_steps"),
        (
            {"objective": "speed"},
            "params.json records an invalid option: unknown --objective 'speed'; use quality "
            "or cost",
        ),
        (
            {"stall_after": 0},
            "params.json records an invalid option: --stall-after must be at least 1",
        ),
    ],
)
def test_options_from_bad_params_are_refused_naming_the_file(
    change: dict[str, Any], message: str
) -> None:
    params = {**HillclimbOptions().to_params(), **change}
    with pytest.raises(VerificationError) as caught:
        HillclimbOptions.from_params(params, "params.json")
    assert caught.value.message == message
