"""The typed eval-health report (evalarc.review.health_model): real reports written from the corpus
read back to the same bytes, a newer schema version and malformed fields are refused with one
line naming the file, and HealthOptions round-trip through params.json with the refusals verify
always gave."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import pretty_json
from evalarc.errors import InputError, VerificationError
from evalarc.formats.model import Attempt, Run, Source
from evalarc.reports.health import HealthRequest, run_health
from evalarc.review.health import MAX_FINDING_ITEMS, HealthOptions, compute_health
from evalarc.review.health_model import HealthReport

EXAMPLES = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "results-diff"
NAME = "out/health.json"

REQUESTS: dict[str, tuple[tuple[str, ...], dict[str, Any], str | None]] = {
    "ordered-plan": (
        ("inspect/capitals_epochs.baseline.json", "inspect/capitals_epochs.current.json"),
        {"ordered": True, "min_effect": 0.05, "plan_attempts": 3, "plan_configs": 2},
        None,
    ),
    "errors": (("inspect/flaky_errors.current.json",), {}, None),
    "saturated": (("inspect/realworld/log_read_sample.json",), {}, None),
    "promptfoo": (("promptfoo/generated/repeat.current.json",), {"plan_attempts": 5}, None),
    "junit": (("junit/pytest/current.xml",), {}, None),
}


def _paths(corpus: Path, names: tuple[str, ...]) -> list[Path]:
    return [corpus / name for name in names]


@pytest.fixture(scope="module", params=[*REQUESTS, "manifest"])
def written(
    request: pytest.FixtureRequest, corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[HealthReport, bytes]:
    out = tmp_path_factory.mktemp("health") / "report"
    if request.param == "manifest":
        inputs = [EXAMPLES / "inspect" / "baseline.json", EXAMPLES / "inspect" / "current.eval"]
        health = HealthRequest(
            inputs, HealthOptions(ordered=True), cases=EXAMPLES / "inspect" / "cases.json"
        )
    else:
        names, options, _ = REQUESTS[request.param]
        health = HealthRequest(_paths(corpus, names), HealthOptions(**options))
    report = run_health(health, out)
    return report, (out / "health.json").read_bytes()


def test_round_trip_gives_the_written_bytes(written: tuple[HealthReport, bytes]) -> None:
    report, data = written
    assert pretty_json(report.to_json()).encode() == data
    read = HealthReport.from_json(json.loads(data), NAME)
    assert read == report
    assert pretty_json(read.to_json()).encode() == data


def test_every_optional_part_is_exercised(corpus: Path, tmp_path: Path) -> None:
    names, options, _ = REQUESTS["ordered-plan"]
    planned = run_health(HealthRequest(_paths(corpus, names), HealthOptions(**options)))
    assert planned.plan is not None and planned.noise.attempts_for_min_effect is not None
    assert len(planned.capability_order) == 1
    manifest = run_health(
        HealthRequest(
            [EXAMPLES / "inspect" / "current.json"],
            HealthOptions(),
            cases=EXAMPLES / "inspect" / "cases.json",
        )
    )
    assert manifest.provenance is not None and manifest.provenance.manifest.name == "cases.json"
    assert manifest.plan is None and "plan" not in manifest.to_json()


def test_cut_finding_items_keep_their_total() -> None:
    cases = {f"c{index:04d}": {"k": [Attempt(None), Attempt(True)]} for index in range(1003)}
    run = Run(
        format="inspect",
        source=Source("big.json", "0" * 64),
        threshold=1.0,
        cases=cases,
        identity={"task": "t"},
    )
    report = compute_health([run], HealthOptions(), created_at="2026-01-01T00:00:00Z")
    finding = next(f for f in report.findings if f.id == "unassessed_attempts")
    assert len(finding.items) == MAX_FINDING_ITEMS and finding.total == 1003
    read = HealthReport.from_json(json.loads(pretty_json(report.to_json())), NAME)
    assert read == report


def test_newer_version_is_refused_naming_the_file_and_both_versions(
    written: tuple[HealthReport, bytes],
) -> None:
    value = json.loads(written[1])
    value["schema_version"] = "evalarc.eval-health.v7"
    with pytest.raises(InputError) as caught:
        HealthReport.from_json(value, NAME)
    assert caught.value.message == (
        "out/health.json is evalarc.eval-health.v7, newer than the evalarc.eval-health.v1 "
        "this EvalArc reads; read it with a newer EvalArc"
    )


MALFORMED = [
    (lambda r: r["runs"][0].update(passed=-1), "runs[0].passed is negative"),
    (
        lambda r: r["runs"][0].update(interval_95=[0.1]),
        "runs[0].interval_95 is not a [low, high] pair of numbers",
    ),
    (lambda r: r["runs"][0]["source"].pop("name"), "runs[0].source.name is missing"),
    (
        lambda r: r["noise"].update(resolvable_change="big"),
        "noise.resolvable_change is not a number",
    ),
    (lambda r: r.update(healthy="yes"), "healthy is not true or false"),
    (lambda r: r.update(runs=[]), "runs is empty"),
    (lambda r: r["graders"].update(grader_models=[1]), "graders.grader_models[0] is not a string"),
    (
        lambda r: r["findings"].append({"id": "x", "severity": "fatal", "message": "m"}),
        "severity is not one of warning, info",
    ),
    (
        lambda r: r["findings"].append(
            {"id": "x", "severity": "info", "message": "m", "items": []}
        ),
        "items is written only when it lists something",
    ),
    (lambda r: r["size"].update(cases=None), "size.cases is not an integer"),
    (lambda r: r.update(surprise=True), "the report has an unknown field 'surprise'"),
]


@pytest.mark.parametrize(("change", "message"), MALFORMED)
def test_malformed_fields_are_refused_in_one_line(
    written: tuple[HealthReport, bytes], change: Any, message: str
) -> None:
    value = copy.deepcopy(json.loads(written[1]))
    change(value)
    with pytest.raises(InputError) as caught:
        HealthReport.from_json(value, NAME)
    assert caught.value.message.startswith(f"{NAME}: ")
    assert caught.value.message.endswith(message)
    assert "\n" not in caught.value.message


def test_triage_category_must_be_known(written: tuple[HealthReport, bytes]) -> None:
    value = json.loads(written[1])
    value["triage"] = [{"case_id": "c", "category": "bad_luck", "checks": []}]
    with pytest.raises(InputError, match=r"^out/health\.json: triage\[0\]\.category is not one"):
        HealthReport.from_json(value, NAME)


# -- options ------------------------------------------------------------------------------------


def test_options_round_trip_through_params() -> None:
    options = HealthOptions(
        threshold=0.5, saturation=0.9, min_effect=0.05, ordered=True, plan_attempts=3
    )
    params = options.to_params()
    assert list(params) == [
        "threshold",
        "saturation",
        "min_effect",
        "ordered",
        "plan_attempts",
        "plan_configs",
    ]
    assert HealthOptions.from_params(params, "params.json") == options
    assert HealthOptions.from_params(HealthOptions().to_params(), "p.json") == HealthOptions()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"threshold": "1"}, "params.json has a non-numeric threshold"),
        ({"saturation": None}, "params.json must record threshold and saturation"),
        ({"ordered": 1}, "params.json has a non-boolean ordered"),
        ({"plan_configs": 2.0}, "params.json has a non-integer plan_configs"),
        ({"min_effect": 10**400}, "params.json has a min_effect beyond any number"),
    ],
)
def test_options_from_bad_params_are_refused_naming_the_file(
    change: dict[str, Any], message: str
) -> None:
    params = {**HealthOptions().to_params(), **change}
    with pytest.raises(VerificationError) as caught:
        HealthOptions.from_params(params, "params.json")
    assert caught.value.message == message
