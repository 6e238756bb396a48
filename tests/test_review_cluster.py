"""Grouped changes: clusters of blocking checks by shared failure signature, vanished checks."""

from __future__ import annotations

import json
from typing import Any

from evalarc.formats.model import Attempt, Run, SampleMeta, Source
from evalarc.review.cluster import fenced_json, mask_text, output_shape
from evalarc.review.diff import DiffOptions, compute_diff

CREATED = "2026-01-01T00:00:00Z"
CHECKS = ("json_valid_plan", "route", "priority", "actions", "reply_tone")
GOOD_CLOSED = {"route": "billing", "priority": "low", "status": "closed", "actions": ["close"]}
GOOD_BUG = {"route": "engineering", "priority": "high", "status": "open", "actions": ["file"]}


def _run(name: str, outputs: dict[str, list[tuple[str, dict[str, bool]]]]) -> Run:
    """A promptfoo-like run: per case, each repeat's output and its verdict per check."""
    cases: dict[str, dict[str, list[Attempt]]] = {}
    samples: dict[str, list[SampleMeta]] = {}
    for case_id, repeats in outputs.items():
        checks = cases.setdefault(case_id, {})
        for output, verdicts in repeats:
            for check, passed in verdicts.items():
                evidence = None if passed else f"{check} failed at char {len(output)}"
                checks.setdefault(check, []).append(Attempt(passed, evidence=evidence))
            samples.setdefault(case_id, []).append(
                SampleMeta(output_text=output, verdicts=dict(verdicts))
            )
    return Run("promptfoo", Source(name, "0" * 64), 1.0, cases, samples=samples)


def _all(passed: bool) -> dict[str, bool]:
    return dict.fromkeys(CHECKS, passed)


def _upgrade_pair() -> tuple[Run, Run]:
    """The seeds' upgrade record in miniature: 8 support cases, 3 repeats each; in the current
    run the already-closed answers omit the actions field (every repeat: 5 checks regressed)
    and resolved-bug wraps its JSON in a Markdown fence twice (5 checks less reliable)."""
    others = [f"case-{number}" for number in range(6)]
    base: dict[str, list[tuple[str, dict[str, bool]]]] = {
        "already-closed": [(json.dumps(GOOD_CLOSED), _all(True))] * 3,
        "resolved-bug": [(json.dumps(GOOD_BUG), _all(True))] * 3,
    }
    for case_id in others:
        base[case_id] = [(json.dumps(GOOD_BUG), _all(True))] * 3
    no_actions = {key: value for key, value in GOOD_CLOSED.items() if key != "actions"}
    fenced = "```json\n" + json.dumps(GOOD_BUG, indent=2) + "\n```"
    cur = dict(base)
    cur["already-closed"] = [(json.dumps(no_actions), _all(False))] * 3
    cur["resolved-bug"] = [
        (fenced, _all(False)),
        (json.dumps(GOOD_BUG), _all(True)),
        (fenced, _all(False)),
    ]
    return _run("base.json", base), _run("cur.json", cur)


def test_upgrade_record_is_two_causes_not_ten_failures() -> None:
    baseline, current = _upgrade_pair()
    report = compute_diff(baseline, current, DiffOptions(), created_at=CREATED)
    assert report["blocking_changes"] == 10
    groups = report["groups"]
    assert (groups["blocking_checks"], groups["causes"]) == (10, 2)
    summary = [
        (cluster["signature"], cluster["kind"], cluster["count"]) for cluster in groups["clusters"]
    ]
    assert summary == [
        ("output: JSON lacks the field 'actions'", "regressed", 5),
        ("output: JSON wrapped in a Markdown code fence", "less_reliable", 5),
    ]
    assert {member["case_id"] for member in groups["clusters"][1]["members"]} == {"resolved-bug"}
    assert [member["check"] for member in groups["clusters"][0]["members"]] == sorted(CHECKS)


def test_groups_never_change_the_gate_and_are_deterministic() -> None:
    baseline, current = _upgrade_pair()
    first = compute_diff(baseline, current, DiffOptions(), created_at=CREATED)
    second = compute_diff(baseline, current, DiffOptions(), created_at=CREATED)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    without = {key: value for key, value in first.items() if key != "groups"}
    assert without["gate_passed"] is False and without["blocking_changes"] == 10


def test_failure_texts_cluster_by_masked_pattern() -> None:
    def run(name: str, evidence: dict[str, str | None]) -> Run:
        cases: dict[str, dict[str, list[Attempt]]] = {}
        for case_id, text in evidence.items():
            cases[case_id] = {"test": [Attempt(text is None, evidence=text)]}
        return Run("junit", Source(name, "0" * 64), 1.0, cases)

    base = run("b.xml", {f"t{number}": None for number in range(5)})
    cur = run(
        "c.xml",
        {
            "t0": "AssertionError: expected 3, got 4",
            "t1": "AssertionError: expected 10, got 2",
            "t2": "KeyError: 'actions'",
            "t3": "KeyError: 'route'",
            "t4": None,
        },
    )
    groups = compute_diff(base, cur, DiffOptions(), created_at=CREATED)["groups"]
    assert [(c["signature"], c["count"]) for c in groups["clusters"]] == [
        ("AssertionError: expected N, got N", 2),
        ("KeyError: '…'", 2),
    ]


def test_vanished_check_and_case_are_one_line_each() -> None:
    def run(name: str, cases: dict[str, dict[str, bool]]) -> Run:
        return Run(
            "inspect",
            Source(name, "0" * 64),
            1.0,
            {
                case: {check: [Attempt(ok)] for check, ok in checks.items()}
                for case, checks in cases.items()
            },
        )

    base = run("b", {f"s{n}": {"match": True, "style": True} for n in range(20)})
    cur_cases: dict[str, dict[str, bool]] = {f"s{n}": {"match": True} for n in range(19)}
    cur_cases["s19"] = {"match": True, "judge": True}
    cur_cases["s20"] = {"match": True}
    report = compute_diff(base, run("c", cur_cases), DiffOptions(), created_at=CREATED)
    presence: list[dict[str, Any]] = report["groups"]["presence"]
    assert presence == [
        {"what": "check", "name": "style", "side": "vanished", "rows": 20},
        {"what": "check", "name": "judge", "side": "appeared", "rows": 1},
        {"what": "case", "name": "s20", "side": "appeared", "rows": 1},
    ]
    # The 20 removed rows are one cluster too ("check no longer recorded").
    assert [(c["signature"], c["count"]) for c in report["groups"]["clusters"]] == [
        ("check no longer recorded", 20)
    ]


def test_shape_detectors() -> None:
    assert fenced_json('```json\n{"a": 1}\n```')
    assert fenced_json("  ```\n[1, 2]\n```\n")
    assert not fenced_json("```python\nprint(1)\n```")
    assert not fenced_json('{"a": 1}')
    not_json = "output: not a JSON object (the baseline's was)"
    assert output_shape(["not json"], ['{"a": 1}']) == not_json
    assert output_shape(['{"a": 1}'], ['{"a": 2, "b": 3, "c": 4}']) == (
        "output: JSON lacks the fields 'b', 'c'"
    )
    assert output_shape(['{"a": 1}'], ["plain"]) is None
    assert mask_text('id 0123abcd9f at  line 12\n"x y"') == "id # at line N '…'"
