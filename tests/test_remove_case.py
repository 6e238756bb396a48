"""The audit's "remove this case" view (evalarc/pages/remove_case.py).

It is computed by ``compute_audit`` over the recorded per-case outcomes; here it is checked
against audits that actually re-ran the controls without the case (``--without-case``, replayed
from the bundled Docker recordings, no Docker needed).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

import evalarc.pages.remove_case as remove_case
from evalarc.pages.audit import build_audit_page, render_audit_page
from evalarc.pages.remove_case import build_remove_case_view, case_ids, recompute_without
from evalarc.reports.audit import AuditOptions, run_audit

SUPPORT_CASES = ["route-open-ticket", "close-resolved-ticket", "retry-before-commit",
                 "retry-after-commit"]


def replayed(root: Path, task: str, without: tuple[str, ...] = ()) -> dict[str, Any]:
    name = f"{task}-{'-'.join(without) or 'full'}"
    result = run_audit(root / name, AuditOptions(task=task, backend="replay", seeds=(17,),
                                                 without_cases=without))
    assert result.divergences == []
    return result.audit


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remove-case")


@pytest.fixture(scope="module")
def support(root: Path) -> dict[str, Any]:
    return replayed(root, "support-routing")


@pytest.fixture(scope="module")
def durable(root: Path) -> dict[str, Any]:
    return replayed(root, "durable-kv")


def test_the_sole_detectors_are_the_cases_whose_removal_loses_a_fault(
        support: dict[str, Any]) -> None:
    view = build_remove_case_view(support)
    assert view.available
    assert [row.case_id for row in view.rows] == SUPPORT_CASES
    lost = {row.case_id: row.lost for row in view.rows}
    assert lost == {"route-open-ticket": [], "close-resolved-ticket": [],
                    "retry-before-commit": ["skip-retry"],
                    "retry-after-commit": ["new-key-on-retry"]}
    assert view.essential == 2
    assert sorted(case for case, faults in lost.items() if faults) == \
        support["detection"]["sole_detector_cases"]
    rows = {row.case_id: row for row in view.rows}
    assert (rows["retry-after-commit"].verdict, rows["retry-after-commit"].tone) == (
        "loses coverage", "bad")
    # close-unresolved is caught by two cases: removing either leaves it on one.
    assert rows["route-open-ticket"].now_single == ["close-unresolved"]
    assert (rows["route-open-ticket"].verdict, rows["route-open-ticket"].tone) == (
        "leaves a fault on one case", "warn")
    assert rows["close-resolved-ticket"].verdict == "no fault lost"
    assert rows["retry-after-commit"].detects.startswith("5: ")
    assert "new-key-on-retry" in rows["retry-after-commit"].detects


@pytest.mark.parametrize("case_id", SUPPORT_CASES)
def test_each_removal_matches_an_audit_rerun_without_the_case(
        support: dict[str, Any], root: Path, case_id: str) -> None:
    row = next(row for row in build_remove_case_view(support).rows if row.case_id == case_id)
    rerun = replayed(root, "support-routing", (case_id,))
    before = {mutant["name"]: mutant for mutant in support["mutants"]}
    assert row.lost == [m["name"] for m in rerun["mutants"]
                        if before[m["name"]]["killed"] and not m["killed"]]
    assert row.detected_after == f"{rerun['killed']}/{rerun['total']}"
    assert row.weakest_after == str(rerun["detection"]["weakest_margin"])
    recomputed = recompute_without(support, [case_id])
    assert [(m["name"], m["killed"], m["detection_margin"], m["failing_cases"])
            for m in recomputed["mutants"]] == \
        [(m["name"], m["killed"], m["detection_margin"], m["failing_cases"])
         for m in rerun["mutants"]]
    assert recomputed["detection"] == rerun["detection"]
    assert recomputed["without_cases"] == rerun["without_cases"] == [case_id]


def test_durable_kv_cas_type_sensitivity_matches_the_reduced_suite(
        durable: dict[str, Any]) -> None:
    view = build_remove_case_view(durable)
    rows = {row.case_id: row for row in view.rows}
    assert len(rows) == 15
    row = rows["cas-type-sensitivity"]
    assert row.lost == ["boolean-equals-one"]
    assert row.now_single == ["cas-always-wins"]
    assert (row.detected_after, row.weakest_after) == ("7/8", "0")
    assert {case for case, item in rows.items() if item.lost} == {
        "cas-type-sensitivity", "reject-and-continue", "rollback-batch"}
    assert rows["commit-batch"].detects == "none"


def test_the_view_is_computed_by_compute_audit(
        support: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    real = remove_case.compute_audit

    def spy(reference: Any, faults: Any, context: Any) -> dict[str, Any]:
        calls.append(list(context.without_cases))
        return real(reference, faults, context)

    monkeypatch.setattr(remove_case, "compute_audit", spy)
    view = build_remove_case_view(support)
    assert calls == [[], *([case] for case in SUPPORT_CASES)]
    assert "evalarc.review.audit.compute_audit" in view.statement
    assert "Nothing was re-run" in view.statement


def test_an_invalid_audit_gets_no_removals(support: dict[str, Any]) -> None:
    invalid = {**support, "valid": False}
    view = build_remove_case_view(invalid)
    assert (view.available, view.rows, view.essential) == (False, [], 0)
    assert view.statement.startswith("Not computed: this audit is invalid")


def test_rows_that_the_recorded_outcomes_do_not_reproduce_are_refused(
        support: dict[str, Any]) -> None:
    tampered = copy.deepcopy(support)
    tampered["mutants"][0]["detection_margin"] = 99
    view = build_remove_case_view(tampered)
    assert not view.available and view.rows == []
    assert "does not reproduce this audit's rows" in view.statement
    flipped = copy.deepcopy(support)
    flipped["mutants"][-1]["evaluation"]["cases"][-1]["checks"]["notes"] = True
    assert not build_remove_case_view(flipped).available


def test_case_order_follows_the_reference(durable: dict[str, Any]) -> None:
    assert case_ids(durable) == [case["case_id"] for case in durable["reference"]["cases"]]


def test_the_audit_page_shows_the_view(support: dict[str, Any]) -> None:
    page = build_audit_page(support)
    assert page.remove_case.essential == 2
    html = render_audit_page(support)
    assert 'id="remove-case-table"' in html
    assert html.count('<span class="badge bad">loses coverage</span>') == 2
    assert "Computed by evalarc.review.audit.compute_audit" in html
    invalid = render_audit_page({**support, "valid": False})
    assert 'id="remove-case-table"' not in invalid
    assert "Not computed: this audit is invalid" in invalid
