"""The diff computation: classification, annotations, counts, gates and the diff.json shape."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from evalarc.errors import IncomparableError, InputError, UsageError
from evalarc.formats.harness import HarnessFile
from evalarc.formats.model import Attempt, Headline, Material, Run, SampleMeta, Source
from evalarc.formats.split import CaseSplit
from evalarc.review.diff import (
    BLOCKING_KINDS,
    DIFF_SCHEMA,
    DiffOptions,
    compute_diff,
    diff_report,
    overall_passed,
)
from evalarc.review.diff_model import CostGate, DiffReport, MissingUsage
from evalarc.review.pairing import Tally, classify, tally, within_sampling_noise
from evalarc.review.stats import WILSON_Z, intervals_overlap, wilson_interval

CREATED = "2026-01-01T00:00:00Z"
_CODES = {"C": True, "I": False, None: None}


def attempts(*codes: str | None) -> list[Attempt]:
    return [
        Attempt(passed=_CODES[code], value=code, evidence=f"attempt {index}")
        for index, code in enumerate(codes)
    ]


def make_run(
    cases: dict[str, dict[str, list[Attempt]]],
    *,
    name: str = "run.json",
    fmt: Any = "inspect",
    task: str | None = "task",
    incomplete: bool = False,
    threshold: float = 1.0,
    headline: Headline | None = None,
    **extra: Any,
) -> Run:
    identity: dict[str, Any] = {}
    if task is not None:
        identity = {"task": task, "model": "m", "status": "started" if incomplete else "success"}
    return Run(
        format=fmt,
        source=Source(name=name, sha256="0" * 64),
        threshold=threshold,
        cases=cases,
        identity=identity,
        headline=headline,
        incomplete=incomplete,
        **extra,
    )


def diff_one(base: list[Attempt] | None, cur: list[Attempt] | None) -> dict[str, Any]:
    base_cases = {"c": {"k": base}} if base is not None else {"other": {"k": attempts("C")}}
    cur_cases = {"c": {"k": cur}} if cur is not None else {"other": {"k": attempts("C")}}
    # An unchanged assessed case on both sides: a side with nothing assessed is refused.
    base_cases["anchor"] = cur_cases["anchor"] = {"k": attempts("C")}
    return compute_diff(
        make_run(base_cases, name="b.json"),
        make_run(cur_cases, name="c.json"),
        DiffOptions(),
        created_at=CREATED,
    )


def kind_of(base: list[Attempt] | None, cur: list[Attempt] | None) -> str | None:
    rows = [row for row in diff_one(base, cur)["changes"] if row["case_id"] == "c"]
    return rows[0]["kind"] if rows else None


# -- classification (spec 2.3) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "cur", "expected"),
    [
        (("C", "I"), ("C",), "less_covered"),
        (("C", "C"), ("C", None), "less_covered"),
        (("C",), ("C", "C"), None),
        (("C", "I"), ("C", "I", "C", "I"), None),
        (("C", "I"), ("C", "C", "C"), "improved"),
        (("C", "C", "C"), ("C", "I"), "less_reliable"),
        (("C", "C"), ("I",), "regressed"),
        (("C",), (None,), "unassessed"),
        (("C", "I"), (None, None), "unassessed"),
        (("I",), (None,), "less_covered"),
        (("I",), ("C",), "improved"),
        ((None,), ("C",), "improved"),
        ((None,), (None,), None),
        (("I", "I"), ("I", "I"), None),
        (("C", "C"), ("C", "C"), None),
        (("C", "C", "C"), ("C", "I", "I"), "less_reliable"),
        (("C", "I"), ("I", "I", "I"), "regressed"),
    ],
)
def test_classification_rules(
    base: tuple[str | None, ...], cur: tuple[str | None, ...], expected: str | None
) -> None:
    assert kind_of(attempts(*base), attempts(*cur)) == expected


def test_added_removed_and_removed_even_when_failing() -> None:
    assert kind_of(None, attempts("I")) == "added"
    assert kind_of(attempts("C"), None) == "removed"
    assert kind_of(attempts("I", "I"), None) == "removed"
    report = diff_one(attempts("I"), None)
    # removed c/k blocks; the helper's "other" case shows up as added, which does not
    assert report["counts"]["removed"] == 1 and report["counts"]["added"] == 1
    assert report["blocking_changes"] == 1
    assert report["gate_passed"] is False
    assert "added" not in BLOCKING_KINDS


def test_added_alone_passes_gate() -> None:
    base = make_run({"a": {"k": attempts("C")}})
    cur = make_run({"a": {"k": attempts("C")}, "b": {"k": attempts("I")}})
    report = compute_diff(base, cur, DiffOptions(), created_at=CREATED)
    assert report["counts"]["added"] == 1
    assert report["blocking_changes"] == 0
    assert report["gate_passed"] is True
    assert overall_passed(DiffReport.from_json(report, "diff.json")) is True


def test_classify_is_exact_for_large_counts() -> None:
    # 1/3 versus 333333333/1000000000: floats would make these rates nearly equal; exact
    # arithmetic still sees the current rate as higher (no regression).
    assert classify(Tally(1, 3, 3), Tally(333_333_334, 1_000_000_000, 1_000_000_000)) == (
        "improved"
    )
    # equal rates on more attempts are unchanged; on fewer attempts they are less covered
    assert classify(Tally(1, 3, 3), Tally(2, 6, 6)) is None
    assert classify(Tally(2, 6, 6), Tally(1, 3, 3)) == "less_covered"


# -- annotations ------------------------------------------------------------------------------


def test_wilson_matches_reference_numbers() -> None:
    assert WILSON_Z == 1.959963984540054
    low, high = wilson_interval(90, 120)
    assert (round(low, 3), round(high, 3)) == (0.666, 0.819)
    low, high = wilson_interval(95, 120)
    assert (round(low, 3), round(high, 3)) == (0.711, 0.855)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(12, 12)[1] == 1.0
    low, high = wilson_interval(8, 12)
    assert low == pytest.approx(0.390622, abs=1e-6) and high == pytest.approx(0.861880, abs=1e-6)


def test_intervals_overlap_is_inclusive() -> None:
    assert intervals_overlap((0.1, 0.5), (0.5, 0.9))
    assert not intervals_overlap((0.1, 0.49), (0.5, 0.9))
    assert intervals_overlap((0.5, 0.9), (0.1, 0.5))


def test_within_sampling_noise_rules() -> None:
    # 2/2 -> 1/2: the current side varies and the intervals overlap.
    assert within_sampling_noise(Tally(2, 2, 2), Tally(1, 2, 2)) is True
    # a clean all-pass to all-fail swing is never noise, however small the sample
    assert within_sampling_noise(Tally(3, 3, 3), Tally(0, 3, 3)) is False
    assert within_sampling_noise(Tally(2, 2, 2), Tally(0, 2, 2)) is False
    # variation but clearly separated intervals
    assert within_sampling_noise(Tally(50, 50, 50), Tally(1, 50, 50)) is False
    # not applicable: a side missing, or one assessed attempt at most on both sides
    assert within_sampling_noise(None, Tally(1, 2, 2)) is None
    assert within_sampling_noise(Tally(1, 1, 1), Tally(0, 1, 3)) is None
    assert within_sampling_noise(Tally(1, 1, 1), Tally(0, 0, 2)) is None


def test_noise_flag_on_rows_and_blocking_noise_count() -> None:
    base = make_run(
        {
            "a": {"k": attempts("C", "C", "C")},  # -> 1/3 less_reliable, within noise
            "b": {"k": attempts("C", "C", "C")},  # -> 0/3 regressed, clean swing
            "c": {"k": attempts("C")},  # -> unassessed, single attempts: no flag
        }
    )
    cur = make_run(
        {
            "a": {"k": attempts("C", "I", "I")},
            "b": {"k": attempts("I", "I", "I")},
            "c": {"k": attempts(None)},
        }
    )
    report = compute_diff(base, cur, DiffOptions(), created_at=CREATED)
    rows = {row["case_id"]: row for row in report["changes"]}
    assert rows["a"]["within_sampling_noise"] is True
    assert rows["b"]["within_sampling_noise"] is False
    assert "within_sampling_noise" not in rows["c"]
    assert report["blocking_changes"] == 3
    assert report["blocking_changes_within_sampling_noise"] == 1
    assert report["gate_passed"] is False  # noise never relaxes the gate


def test_details_are_failing_attempts_or_first_pass() -> None:
    report = diff_one(attempts("C", "C", "C"), attempts("C", "I", None))
    row = report["changes"][0] if report["changes"][0]["case_id"] == "c" else None
    assert row is not None and row["kind"] == "less_reliable"
    assert row["baseline_detail"] == [{"passed": True, "value": "C", "evidence": "attempt 0"}]
    assert row["current_detail"] == [
        {"passed": False, "value": "I", "evidence": "attempt 1"},
        {"passed": None, "evidence": "attempt 2"},
    ]
    added = diff_one(None, attempts("I"))
    added_row = next(r for r in added["changes"] if r["case_id"] == "c")
    assert added_row["baseline"] is None and "baseline_detail" not in added_row
    assert list(added_row) == ["case_id", "check", "kind", "baseline", "current", "current_detail"]


def test_same_output_different_verdict() -> None:
    def graded(passed: bool | None, digest: str | None) -> Attempt:
        return Attempt(passed=passed, output_sha256=digest)

    base = make_run(
        {
            "a": {"k": [graded(True, "x"), graded(True, "y")]},
            "b": {"k": [graded(True, "z")]},
        }
    )
    cur = make_run(
        {
            # "x" was pass, now fail; "y" pass in both; a null digest and an unassessed
            # attempt do not count
            "a": {"k": [graded(False, "x"), graded(False, None), graded(None, "y")]},
            "b": {"k": [graded(True, "z"), graded(True, "z")]},
        }
    )
    report = compute_diff(base, cur, DiffOptions(), created_at=CREATED)
    rows = {row["case_id"]: row for row in report["changes"]}
    assert rows["a"]["kind"] == "regressed"
    assert rows["a"]["same_output_different_verdict"] == 1
    assert "b" not in rows
    assert report["changes_with_same_output_different_verdict"] == 1


# -- report shape -----------------------------------------------------------------------------


def test_key_order_counts_and_sorting() -> None:
    base = make_run(
        {
            "z": {"m": attempts("C"), "a": attempts("I")},
            "a": {"m": attempts("C", "C"), "gone": attempts("I")},
        },
        name="base.json",
        headline=Headline("match accuracy", 0.5),
    )
    cur = make_run(
        {
            "z": {"m": attempts("I"), "a": attempts("C")},
            "a": {"m": attempts("I", "I"), "new": attempts("C")},
        },
        name="cur.json",
        threshold=0.5,
        headline=Headline("match accuracy", 0.5),
    )
    report = compute_diff(base, cur, DiffOptions(), created_at=CREATED)
    assert list(report) == [
        "schema_version",
        "created_at",
        "format",
        "baseline",
        "current",
        "counts",
        "numeric_pass_threshold",
        "blocking_changes",
        "blocking_changes_within_sampling_noise",
        "changes_with_same_output_different_verdict",
        "current_incomplete",
        "gate_passed",
        "changes",
        "groups",
        "interpretation",
        "sampling_noise_note",
        "usage",
    ]
    assert report["schema_version"] == DIFF_SCHEMA
    assert report["created_at"] == CREATED
    assert report["numeric_pass_threshold"] == 0.5  # from the current run
    assert list(report["counts"]) == [
        "regressed",
        "less_reliable",
        "unassessed",
        "removed",
        "improved",
        "added",
        "unchanged",
    ]
    assert report["counts"] == {
        "regressed": 2,
        "less_reliable": 0,
        "unassessed": 0,
        "removed": 1,
        "improved": 1,
        "added": 1,
        "unchanged": 0,
    }
    order = [(row["kind"], row["case_id"], row["check"]) for row in report["changes"]]
    assert order == [
        ("regressed", "a", "m"),
        ("regressed", "z", "m"),
        ("removed", "a", "gone"),
        ("improved", "z", "a"),
        ("added", "a", "new"),
    ]
    summary = report["baseline"]
    assert list(summary) == [
        "source",
        "identity",
        "incomplete",
        "headline",
        "cases",
        "checks",
        "check_pass_rate",
    ]
    assert summary["source"] == {"name": "base.json", "sha256": "0" * 64}
    assert summary["headline"] == {"name": "match accuracy", "value": 0.5}
    assert summary["cases"] == 2 and summary["checks"] == 4
    rate = summary["check_pass_rate"]
    assert rate["name"] == "passed check attempts"
    assert (rate["passed"], rate["assessed"]) == (3, 5)
    assert rate["value"] == 0.6
    low, high = wilson_interval(3, 5)
    assert rate["interval_95"] == [round(low, 6), round(high, 6)]


def test_less_covered_counted_only_when_present() -> None:
    report = diff_one(attempts("C", "I"), attempts("C"))
    keys = list(report["counts"])
    assert keys.index("less_covered") == keys.index("unassessed") + 1
    assert report["counts"]["less_covered"] == 1


def test_a_side_with_nothing_assessed_is_refused_never_passed() -> None:
    # Before: two runs with only unassessed attempts gave 0 blocking changes and a passing gate.
    run = make_run({"a": {"k": attempts(None)}}, name="empty.json")
    assessed = make_run({"a": {"k": attempts("C")}}, name="fine.json")
    for base, cur in ((run, run), (assessed, run), (run, assessed)):
        with pytest.raises(InputError, match=r"empty\.json: nothing in it could be assessed"):
            compute_diff(base, cur, DiffOptions(), created_at=CREATED)


def test_incomplete_current_fails_gate_without_changes() -> None:
    cases = {"a": {"k": attempts("C")}}
    report = compute_diff(
        make_run(cases), make_run(cases, incomplete=True), DiffOptions(), created_at=CREATED
    )
    assert report["blocking_changes"] == 0
    assert report["current_incomplete"] is True
    assert "baseline_incomplete" not in report
    assert report["gate_passed"] is False
    assert overall_passed(DiffReport.from_json(report, "diff.json")) is False


def test_incomplete_baseline_fails_gate() -> None:
    base = make_run({"a": {"k": attempts("C")}}, incomplete=True)
    cur = make_run({"a": {"k": attempts("C")}, "b": {"k": attempts("C")}})
    report = compute_diff(base, cur, DiffOptions(), created_at=CREATED)
    assert report["baseline_incomplete"] is True
    assert list(report).index("baseline_incomplete") + 1 == list(report).index("current_incomplete")
    assert report["current_incomplete"] is False
    assert report["counts"]["added"] == 1 and report["blocking_changes"] == 0
    assert report["gate_passed"] is False


def test_comparability_errors() -> None:
    cases = {"a": {"k": attempts("C")}}
    with pytest.raises(IncomparableError, match="inputs use different formats: inspect and junit"):
        compute_diff(
            make_run(cases),
            make_run(cases, fmt="junit", task=None),
            DiffOptions(),
            created_at=CREATED,
        )
    with pytest.raises(IncomparableError, match="inputs are not comparable: task 'a' != 'b'"):
        compute_diff(
            make_run(cases, task="a"), make_run(cases, task="b"), DiffOptions(), created_at=CREATED
        )
    # a missing task on one side is not a mismatch
    report = compute_diff(
        make_run(cases, task="a"), make_run(cases, task=None), DiffOptions(), created_at=CREATED
    )
    assert report["gate_passed"] is True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (DiffOptions(threshold=float("nan")), "finite"),
        (DiffOptions(leak_min_chars=3), "at least 4"),
        (DiffOptions(max_cost_ratio=0.0), "positive number"),
        (DiffOptions(max_cost_ratio=float("inf")), "positive number"),
        (DiffOptions(cost_metric="dollars"), "cost-metric"),
    ],
)
def test_option_validation(options: DiffOptions, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        options.validate()


def test_require_generalization_needs_split() -> None:
    run = make_run({"a": {"k": attempts("C")}})
    with pytest.raises(UsageError, match="requires --held-out"):
        compute_diff(run, run, DiffOptions(require_generalization=True), created_at=CREATED)


def test_harness_none_versus_empty() -> None:
    run = make_run({"a": {"k": attempts("C")}})
    assert "leakage" not in compute_diff(run, run, DiffOptions(), created_at=CREATED)
    report = compute_diff(run, run, DiffOptions(), harness=[], created_at=CREATED)
    assert report["leakage"]["files_scanned"] == [] and report["leakage"]["hits"] == []


def test_overall_passed_combines_gates() -> None:
    run = make_run({"a": {"k": attempts("C")}})
    report = diff_report(run, run, DiffOptions(), created_at=CREATED)
    cost = CostGate("cost_usd", 2.0, 1.0, 1.0, 1.0, 1, MissingUsage(0, 0), True)

    def passed(**fields: Any) -> bool:
        return overall_passed(dataclasses.replace(report, **fields))

    assert passed(gate_passed=True)
    assert not passed(gate_passed=False)
    assert not passed(gate_passed=True, generalization_passed=False)
    assert passed(gate_passed=True, generalization_passed=True)
    assert not passed(gate_passed=True, cost_gate=dataclasses.replace(cost, passed=False))
    assert passed(gate_passed=True, cost_gate=cost)


def test_tally_counts() -> None:
    assert tally(attempts("C", "I", None, "C")) == Tally(passed=2, assessed=3, attempts=4)


# -- the spec's worked example (8.1, Inspect refund_policy) -----------------------------------


def _refund_runs() -> tuple[Run, Run]:
    names = [
        "refund-small",
        "refund-large",
        "refund-duplicate",
        "status-open",
        "status-missing",
        "cancel-shipped",
        "cancel-pending",
        "address-change",
    ]
    fixed = {"refund-large", "status-missing", "cancel-shipped"}

    def both(code: str) -> dict[str, list[Attempt]]:
        return {"includes": attempts(code, code), "match": attempts(code, code)}

    base_cases = {name: both("I" if name in fixed else "C") for name in names}
    cur_cases = {name: both("I" if name == "refund-duplicate" else "C") for name in names}
    cur_cases["cancel-pending"] = {
        "includes": attempts("C", "C"),
        "match": [Attempt(True, "C"), Attempt(False, "I", "cancel:1006:queued")],
    }

    def usage(cost: float) -> dict[str, list[SampleMeta]]:
        return {
            name: [SampleMeta(usage={"duration_seconds": cost}) for _ in range(2)] for name in names
        }

    material = {
        "status-missing": [
            Material("input", "Where is order 9999? It does not show up."),
            Material("expected", "status:9999:unknown"),
        ]
    }
    base = make_run(
        base_cases,
        name="baseline.json",
        task="refund_policy",
        headline=Headline("match accuracy", 0.625),
        samples=usage(2.0),
        material=material,
    )
    cur = make_run(
        cur_cases,
        name="current.json",
        task="refund_policy",
        headline=Headline("match accuracy", 0.8125),
        samples=usage(3.0),
        material=material,
    )
    return base, cur


def test_refund_example_numbers() -> None:
    base, cur = _refund_runs()
    split = CaseSplit(
        held_out=("status-*", "address-change"),
        description="unseen tickets",
        source=Source("split.json", "1" * 64),
    )
    lines = ["# Support policy", *[f"rule {index}" for index in range(2, 9)]]
    lines.append("Example: Where is order 9999?  It does NOT show up. -> status:9999:unknown")
    prompt = "\n".join(lines).encode()
    harness = [HarnessFile("harness/system-prompt.md", prompt, "2" * 64)]
    report = compute_diff(
        base,
        cur,
        DiffOptions(max_cost_ratio=2.0, cost_metric="duration"),
        split=split,
        harness=harness,
        created_at=CREATED,
    )
    assert report["baseline"]["check_pass_rate"]["passed"] == 20
    assert report["current"]["check_pass_rate"]["passed"] == 27
    assert report["current"]["check_pass_rate"]["value"] == 27 / 32
    assert report["blocking_changes"] == 3
    assert report["counts"]["improved"] == 6 and report["counts"]["unchanged"] == 7
    blocking = [(r["kind"], r["case_id"], r["check"]) for r in report["changes"][:3]]
    assert blocking == [
        ("regressed", "refund-duplicate", "includes"),
        ("regressed", "refund-duplicate", "match"),
        ("less_reliable", "cancel-pending", "match"),
    ]
    less_reliable = report["changes"][2]
    assert less_reliable["within_sampling_noise"] is True
    assert less_reliable["current_detail"] == [
        {"passed": False, "value": "I", "evidence": "cancel:1006:queued"}
    ]
    generalization = report["generalization"]
    assert generalization["split"]["held_out_cases"] == [
        "address-change",
        "status-missing",
        "status-open",
    ]
    held = generalization["partitions"]["held_out"]
    tuning = generalization["partitions"]["tuning"]
    assert (held["baseline"]["passed"], held["baseline"]["assessed"]) == (8, 12)
    assert (held["current"]["passed"], held["current"]["assessed"]) == (12, 12)
    assert round(held["delta"] * 100, 1) == 33.3 and held["blocking_changes"] == 0
    assert tuning["cases"] == 5 and tuning["blocking_changes"] == 3
    assert (tuning["baseline"]["passed"], tuning["current"]["passed"]) == (12, 15)
    assert round(tuning["delta"] * 100, 1) == 15.0
    assert generalization["state"] == "held_out_gain_within_noise"
    leakage = report["leakage"]
    assert [(h["line"], h["role"], h["partition"]) for h in leakage["hits"]] == [
        (9, "expected", "held_out"),
        (9, "input", "held_out"),
    ]
    assert leakage["held_out_hits"] == 2
    assert report["cost_gate"]["metric"] == "duration_seconds"
    assert report["cost_gate"]["ratio"] == 1.5 and report["cost_gate"]["passed"] is True
    assert overall_passed(DiffReport.from_json(report, "diff.json")) is False
    assert list(report)[-3:] == ["generalization", "leakage", "cost_gate"]


def test_require_generalization_states() -> None:
    base, cur = _refund_runs()
    split = CaseSplit(("status-*", "address-change"), None, Source("split.json", "1" * 64))
    report = compute_diff(
        base, cur, DiffOptions(require_generalization=True), split=split, created_at=CREATED
    )
    assert report["generalization_required"] is True
    assert report["generalization_passed"] is False
    assert list(report)[-3:] == [
        "generalization",
        "generalization_required",
        "generalization_passed",
    ]


def test_report_is_plain_json_and_deterministic() -> None:
    base, cur = _refund_runs()
    split = CaseSplit(("status-*",), None, Source("split.json", "1" * 64))
    harness = [HarnessFile("p.md", b"status:9999:unknown", "3" * 64)]

    def build(created: str) -> dict[str, Any]:
        return compute_diff(
            base, cur, DiffOptions(), split=split, harness=harness, created_at=created
        )

    first = build(CREATED)
    assert json.loads(json.dumps(first, allow_nan=False)) == first
    second = build("2030-01-01T00:00:00Z")
    second["created_at"] = CREATED
    assert json.dumps(first) == json.dumps(second)


def test_linear_on_many_cases() -> None:
    import time

    cases = {f"case-{index:05d}": {"k": attempts("C", "I")} for index in range(20_000)}
    changed = {f"case-{index:05d}": {"k": attempts("C", "C")} for index in range(20_000)}
    start = time.perf_counter()
    report = compute_diff(make_run(cases), make_run(changed), DiffOptions(), created_at=CREATED)
    assert report["counts"]["improved"] == 20_000
    assert time.perf_counter() - start < 10
