"""The typed trajectory report (evalarc.review.trajectory_model): a real report read back gives
the same bytes, a newer schema version and malformed fields are refused with one line naming the
file, and the budget options round-trip through params.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import pretty_json
from evalarc.errors import InputError, UsageError, VerificationError
from evalarc.reports.trajectory import run_trajectory
from evalarc.review.trajectory import TrajectoryOptions
from evalarc.review.trajectory_model import TrajectoryReport

EXAMPLE = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "trajectory"
NAME = "out/trajectory.json"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[TrajectoryReport, bytes]:
    out = tmp_path_factory.mktemp("trajectory") / "report"
    report = run_trajectory(EXAMPLE / "checkpoints.json", 3600, out)
    return report, (out / "trajectory.json").read_bytes()


def recorded(written: tuple[TrajectoryReport, bytes]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(written[1])
    return value


def test_round_trip_gives_the_written_bytes(written: tuple[TrajectoryReport, bytes]) -> None:
    report, data = written
    assert pretty_json(report.to_json()).encode() == data
    read = TrajectoryReport.from_json(json.loads(data), NAME)
    assert read == report
    assert pretty_json(read.to_json()).encode() == data
    # Numbers keep their JSON type: whole elapsed seconds stay integers, the budget a float.
    assert [type(row.elapsed_seconds) for row in read.checkpoints] == [int] * 4
    assert isinstance(read.budget_seconds, float)
    assert read.regressions[0].before == 1.0 and read.regressions[0].after == 0.85
    assert read.identity.seeds == (17, 41, 97)


def test_a_budget_with_a_fraction_round_trips(tmp_path: Path) -> None:
    report = run_trajectory(EXAMPLE / "checkpoints.json", 4000.5)
    again = TrajectoryReport.from_json(json.loads(pretty_json(report.to_json())), NAME)
    assert again == report and again.checkpoints[-1].held_until_seconds == 4000.5


def test_newer_version_is_refused_naming_the_file_and_both_versions(
    written: tuple[TrajectoryReport, bytes],
) -> None:
    value = recorded(written)
    value["schema_version"] = "evalarc.trajectory.v2"
    with pytest.raises(InputError) as caught:
        TrajectoryReport.from_json(value, NAME)
    assert caught.value.message == (
        "out/trajectory.json is evalarc.trajectory.v2, newer than the evalarc.trajectory.v1 "
        "this EvalArc reads; read it with a newer EvalArc"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["checkpoints"][1].update(score="0.65"),
            "checkpoints[1].score is not a number",
        ),
        (lambda r: r["checkpoints"][0].pop("resolved"), "checkpoints[0].resolved is missing"),
        (lambda r: r["identity"].update(seeds=[17, "41"]), "identity.seeds[1] is not an integer"),
        (lambda r: r["source"].update(sha256=None), "source.sha256 is not a string"),
        (lambda r: r.update(checkpoint_count=5), "checkpoint_count is 5, not the 4 listed"),
        (lambda r: r.update(regressions={}), "regressions is not a list"),
        (lambda r: r.update(extra=1), "the report has an unknown field 'extra'"),
        (lambda r: r["regressions"][0].update(by=1), "regressions[0] has an unknown field 'by'"),
        (lambda r: r.update(checkpoints=[], checkpoint_count=0), "checkpoints is empty"),
    ],
)
def test_malformed_fields_are_refused_in_one_line(
    written: tuple[TrajectoryReport, bytes], change: Any, message: str
) -> None:
    value = copy.deepcopy(recorded(written))
    change(value)
    with pytest.raises(InputError) as caught:
        TrajectoryReport.from_json(value, NAME)
    assert caught.value.message == f"{NAME}: {message}"
    assert "\n" not in caught.value.message


def test_another_schema_and_a_non_object_are_refused() -> None:
    with pytest.raises(InputError, match=r"is not an evalarc\.trajectory\.v1 document"):
        TrajectoryReport.from_json({"schema_version": "evalarc.eval-health.v1"}, NAME)
    with pytest.raises(InputError, match=r"out/trajectory\.json is not a JSON object"):
        TrajectoryReport.from_json([], NAME)


def test_options_round_trip_through_params() -> None:
    options = TrajectoryOptions(3600)
    assert options.budget_seconds == 3600.0 and isinstance(options.budget_seconds, float)
    assert options.to_params() == {"budget_seconds": 3600.0}
    assert TrajectoryOptions.from_params(options.to_params(), "params.json") == options
    with pytest.raises(UsageError, match="budget_seconds must be finite and positive, not 0"):
        TrajectoryOptions(0)


@pytest.mark.parametrize(
    ("params", "shown"),
    [({}, "None"), ({"budget_seconds": -1}, "-1"), ({"budget_seconds": True}, "True")],
)
def test_options_from_bad_params_are_refused_naming_the_file(
    params: dict[str, Any], shown: str
) -> None:
    with pytest.raises(VerificationError) as caught:
        TrajectoryOptions.from_params(params, "params.json")
    assert caught.value.message == (
        f"params.json: budget_seconds must be finite and positive, not {shown}"
    )
