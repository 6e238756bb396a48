"""The typed diff report (evalarc/review/diff_model.py): diff.json read and written in one place.

``to_json(from_json(x))`` gives back the same bytes for reports of real corpus diffs; a newer
schema version and malformed fields are refused in one line naming the file; the typed options
replay params.json with the refusals verify has always made.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from evalarc.bundle import ReportHead
from evalarc.canonical import pretty_json
from evalarc.errors import InputError, UsageError, VerificationError
from evalarc.formats import load_results
from evalarc.formats.harness import collect_harness
from evalarc.formats.split import load_split
from evalarc.pages.diff import REPORT_SECTIONS
from evalarc.reports.diff import read_report
from evalarc.reports.diff_junit import junit_document
from evalarc.reports.diff_text import markdown_summary, terminal_lines
from evalarc.review.diff import DiffOptions, compute_diff, diff_report, prepare_runs
from evalarc.review.diff_model import (
    DIFF_SCHEMA,
    KIND_ORDER,
    REPORT_KEYS,
    ChangeRow,
    DiffReport,
    _quick_row,
)
from evalarc.review.model_json import Fields

CREATED = "2026-01-01T00:00:00Z"
EXAMPLE = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "results-diff"
PAIRS = [
    ("inspect/capitals.baseline.json", "inspect/capitals.current.eval"),
    ("inspect/capitals_epochs.baseline.eval", "inspect/capitals_epochs.current.json"),
    ("inspect/flaky_errors.baseline.json", "inspect/flaky_errors.current.json"),
    ("inspect/keywords.baseline.eval", "inspect/keywords.current.eval"),
    ("promptfoo/generated/qa.baseline.json", "promptfoo/generated/qa.current.json"),
    (
        "promptfoo/generated/matrix_drop_provider.baseline.json",
        "promptfoo/generated/matrix_drop_provider.current.json",
    ),
    ("promptfoo/generated/metrics.baseline.json", "promptfoo/generated/metrics.current.json"),
    ("junit/pytest/baseline.xml", "junit/pytest/current.xml"),
    ("junit/pytest-rerunfailures/baseline.xml", "junit/pytest-rerunfailures/current.xml"),
    ("junit/jest/baseline.xml", "junit/jest/current.xml"),
]


def _gated_report() -> DiffReport:
    """The bundled Inspect example with every optional block: split, harness scan, required
    generalization and a cost gate."""
    inspect = EXAMPLE / "inspect"
    return diff_report(
        load_results(inspect / "baseline.eval"),
        load_results(inspect / "current.eval"),
        DiffOptions(require_generalization=True, max_cost_ratio=1.5),
        split=load_split(inspect / "split.json"),
        harness=collect_harness([inspect / "harness"]),
        created_at=CREATED,
    )


@pytest.fixture(scope="module")
def reports(corpus: Path) -> list[tuple[str, DiffReport]]:
    found = []
    for baseline, current in PAIRS:
        runs = load_results(corpus / baseline), load_results(corpus / current)
        found.append((baseline, diff_report(*runs, DiffOptions(), created_at=CREATED)))
    found.append(("gated inspect example", _gated_report()))
    # A run that did not finish (the Inspect reader sets these from a log's status).
    base = load_results(corpus / "inspect/capitals.baseline.json")
    stopped = dataclasses.replace(
        base, incomplete=True, identity={**base.identity, "status": "cancelled"}
    )
    cur = load_results(corpus / "inspect/capitals.current.json")
    found.append(("cancelled baseline", diff_report(stopped, cur, DiffOptions(), created_at="")))
    return found


def test_the_corpus_reports_cover_every_optional_block(
    reports: list[tuple[str, DiffReport]],
) -> None:
    written = {key for _, report in reports for key in report.to_json()}
    assert written == set(REPORT_KEYS)
    kinds = {row.kind for _, report in reports for row in report.changes}
    assert {"regressed", "less_reliable", "unassessed", "improved"} <= kinds <= set(KIND_ORDER)


def test_round_trip_gives_back_the_same_bytes(reports: list[tuple[str, DiffReport]]) -> None:
    for label, report in reports:
        text = pretty_json(report.to_json())
        value = json.loads(text)
        again = DiffReport.from_json(value, "diff.json")
        assert again == report, label
        assert pretty_json(again.to_json()) == text, label
        assert again.to_json() == value, label


def test_the_quick_row_reader_agrees_with_the_careful_one(
    reports: list[tuple[str, DiffReport]],
) -> None:
    # Large reports read their rows with a quick path; anything it does not accept goes to the
    # careful reader, so both must agree on every row they both accept.
    for label, report in reports:
        for row in report.changes:
            value = json.loads(json.dumps(row.to_json()))
            careful = ChangeRow.read(Fields(value, "diff.json", "changes[0]"))
            assert _quick_row(value) == careful == row, label


def test_compute_diff_is_the_json_of_the_model(corpus: Path) -> None:
    base = load_results(corpus / "inspect/capitals.baseline.json")
    cur = load_results(corpus / "inspect/capitals.current.eval")
    report = diff_report(base, cur, DiffOptions(), created_at=CREATED)
    assert pretty_json(compute_diff(base, cur, DiffOptions(), created_at=CREATED)) == pretty_json(
        report.to_json()
    )
    assert next(iter(report.to_json())) == "schema_version" == REPORT_KEYS[0]


def test_renderers_read_a_read_back_report_as_the_computed_one(corpus: Path) -> None:
    base, cur = prepare_runs(
        load_results(corpus / "inspect/capitals.baseline.json"),
        load_results(corpus / "inspect/capitals.current.eval"),
    )
    report = diff_report(base, cur, DiffOptions(), created_at=CREATED)
    read = DiffReport.from_json(json.loads(pretty_json(report.to_json())), "diff.json")
    assert markdown_summary(read) == markdown_summary(report)
    assert list(terminal_lines(read, "out")) == list(terminal_lines(report, "out"))
    assert junit_document(read, base, cur) == junit_document(report, base, cur)


def test_every_field_but_the_matrix_has_a_page_section() -> None:
    # The page lays out the fields without a section from the model (pages/diff.py
    # _unsectioned); a new field must get a section or join that list.
    assert set(REPORT_KEYS) - set(REPORT_SECTIONS) == {"matrix"}


# -- refusals ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gated_json() -> dict[str, Any]:
    value = json.loads(pretty_json(_gated_report().to_json()))
    assert isinstance(value, dict)
    return value


def test_a_newer_version_is_refused_naming_the_file_and_both_versions(
    gated_json: dict[str, Any],
) -> None:
    newer = {**gated_json, "schema_version": "evalarc.results-diff.v2"}
    with pytest.raises(InputError) as refused:
        DiffReport.from_json(newer, "out/diff.json")
    assert str(refused.value) == (
        "out/diff.json is evalarc.results-diff.v2, newer than the evalarc.results-diff.v1 this "
        "EvalArc reads; read it with a newer EvalArc"
    )
    other = {**gated_json, "schema_version": "evalarc.eval-health.v1"}
    with pytest.raises(InputError, match=r"^out/diff\.json is not an evalarc\.results-diff\.v1"):
        DiffReport.from_json(other, "out/diff.json")


def _set(path: str, value: object) -> Any:
    def edit(report: dict[str, Any]) -> None:
        *steps, last = path.split(".")
        target: Any = report
        for step in steps:
            target = target[int(step)] if isinstance(target, list) else target[step]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return edit


_DELETE = object()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("changes.0.kind", "vanished"), "changes[0].kind is not one of regressed, "),
        (_set("baseline.cases", "30"), "baseline.cases is not an integer"),
        (_set("blocking_changes", True), "blocking_changes is not an integer"),
        (_set("gate_passed", _DELETE), "gate_passed is missing"),
        (_set("gate_passed", 0), "gate_passed is not true or false"),
        (_set("baseline_incomplete", False), "baseline_incomplete is written only as true"),
        (_set("injected", 1), "the report has an unknown field 'injected'"),
        (_set("changes.0.extra", 1), "changes[0] has an unknown field 'extra'"),
        (_set("changes.0.baseline.passed", -1), "changes[0].baseline.passed is negative"),
        (_set("changes.0.current_detail", {}), "changes[0].current_detail is not a list"),
        (_set("current.check_pass_rate.interval_95", [0.5]), "is not a pair of numbers"),
        (_set("usage.metrics", []), "usage.metrics is not a JSON object"),
        (_set("cost_gate.ratio", "1.2"), "cost_gate.ratio is not a number"),
        (_set("leakage.hits.0.line", "9"), "leakage.hits[0].line is not an integer"),
        (_set("generalization.partitions.held_out", None), "held_out is not a JSON object"),
        (_set("generalization_required", False), "generalization_required is written only"),
        (_set("groups.presence", None), "groups.presence is not a list"),
        (_set("groups.clusters.0.members.0.check", 1), "clusters[0].members[0].check is not a"),
        (_set("changes.0.current_detail.0.evidence", 5), "current_detail[0].evidence is not a"),
        (_set("changes.0.current_detail.0.value", None), "value is written only when recorded"),
        (_set("changes.0.within_sampling_noise", None), "within_sampling_noise is not true or"),
        (_set("changes.0.same_output_different_verdict", 0), "is written only when positive"),
    ],
)
def test_a_malformed_field_is_refused_in_one_line_naming_the_file(
    gated_json: dict[str, Any], edit: Any, message: str
) -> None:
    report = copy.deepcopy(gated_json)
    edit(report)
    with pytest.raises(InputError) as refused:
        DiffReport.from_json(report, "reports/diff/diff.json")
    text = str(refused.value)
    assert text.startswith("reports/diff/diff.json: ") and message in text
    assert "\n" not in text


def test_a_report_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InputError, match=r"^diff\.json is not a JSON object$"):
        DiffReport.from_json([DIFF_SCHEMA], "diff.json")


# -- options ----------------------------------------------------------------------------------


def test_options_round_trip_through_params() -> None:
    options = DiffOptions(
        threshold=0.5,
        leak_min_chars=40,
        require_generalization=True,
        max_cost_ratio=1.25,
        cost_metric="duration",
    )
    params = options.to_params()
    assert list(params) == [
        "threshold",
        "leak_min_chars",
        "require_generalization",
        "max_cost_ratio",
        "cost_metric",
    ]
    assert DiffOptions.from_params(json.loads(json.dumps(params)), "params.json") == options
    assert DiffOptions.from_params(DiffOptions().to_params(), "params.json") == DiffOptions()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("threshold", "1", "params.json has no numeric threshold"),
        ("threshold", True, "params.json has no numeric threshold"),
        ("threshold", 10**400, "params.json has a threshold beyond any number"),
        ("leak_min_chars", None, "params.json has no numeric leak_min_chars"),
        ("leak_min_chars", 12.5, "params.json has a leak_min_chars that is not a whole number"),
        ("max_cost_ratio", [], "params.json has no numeric max_cost_ratio"),
        ("require_generalization", "no", "params.json has no true or false"),
        ("cost_metric", 3, "params.json has no cost_metric"),
    ],
)
def test_malformed_options_are_refused(key: str, value: object, message: str) -> None:
    params: dict[str, object] = {**DiffOptions().to_params(), key: value}
    with pytest.raises(VerificationError) as refused:
        DiffOptions.from_params(params, "params.json")
    assert str(refused.value).startswith(message)


def test_out_of_range_options_are_refused_like_the_command_line() -> None:
    params = {**DiffOptions().to_params(), "leak_min_chars": 3}
    with pytest.raises(UsageError, match="--leak-min-chars must be at least"):
        DiffOptions.from_params(params, "params.json")
    whole = {**DiffOptions().to_params(), "leak_min_chars": 40.0}
    assert DiffOptions.from_params(whole, "params.json").leak_min_chars == 40


def test_a_verified_report_is_the_recomputed_model_and_a_whole_one_is_read(
    gated_json: dict[str, Any],
) -> None:
    # A folder's diff.json is verified as a stream against the recomputed report, which the
    # summary, the derived files and the page then use: the head read from the file carries it.
    head = ReportHead(gated_json)
    head.model = DiffReport.from_json(gated_json, "diff.json")
    assert read_report(head) is head.model
    # A whole diff.json object (no model) is read, and a malformed one refused with its field.
    assert read_report(gated_json).gate_passed is gated_json["gate_passed"]
    broken = copy.deepcopy(gated_json)
    del broken["usage"]
    with pytest.raises(VerificationError, match=r"^diff\.json: usage is missing$"):
        read_report(broken)
