"""Grader audits: the pure margin arithmetic, and the seed tables of the three packs recomputed
from the bundled real-Docker recordings (``recordings/``) by replay, with no Docker at all.

The live Docker audits are in test_audit_docker.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import UsageError
from evalarc.packs import load_pack
from evalarc.pages.audit import build_audit_page, render_audit_page
from evalarc.reports.audit import AuditOptions, reduced_pack, run_audit
from evalarc.reports.audit_text import summary_lines
from evalarc.resources import bundled_dir
from evalarc.review.audit import (
    AUDIT_SCHEMA,
    AuditContext,
    FaultRun,
    compute_audit,
)
from evalarc.runtime.replay import open_store

SEEDS = (17, 41, 97)
IMAGES = {"python": "evalarc-python:local", "javascript": "evalarc-node:local"}
# The seed tables: declared faults, detected, weakest margin, caught by a single case,
# and the cases that alone detect one of those.
TABLES = {
    "durable-kv": (8, 8, 1, ["accept-nonstring-keys", "boolean-equals-one", "partial-batch"],
                   ["cas-type-sensitivity", "reject-and-continue", "rollback-batch"]),
    "support-routing": (7, 7, 1, ["new-key-on-retry", "skip-retry"],
                        ["retry-after-commit", "retry-before-commit"]),
    "robot-evidence-review": (6, 6, 1, ["assume-complete"], ["incomplete-recording"]),
}
# durable-kv spec §5: the recorded margins (identical for seeds 17, 41 and 97).
DURABLE_KV_MARGINS = {
    "ack-without-work": 3, "memory-only": 3, "partial-batch": 1, "cas-always-wins": 2,
    "boolean-equals-one": 1, "delete-noop": 2, "accept-nonstring-keys": 1, "commit-on-exit": 3,
}


# -- pure compute ----------------------------------------------------------------------------


def _evaluation(cases: Sequence[tuple[int, str, dict[str, bool | None]]], *,
                candidate: str = "a" * 64) -> dict[str, Any]:
    valid = all(None not in checks.values() for _, _, checks in cases)
    resolved = valid and all(all(checks.values()) for _, _, checks in cases)
    return {
        "valid": valid,
        "resolved": resolved,
        "score": None if not valid else 0.5,
        "candidate_sha256": candidate,
        "cases": [{"seed": seed, "case_id": case_id, "checks": checks}
                  for seed, case_id, checks in cases],
    }


CONTEXT = AuditContext(task={"id": "t", "version": "1"}, language="python", seeds=[1, 2],
                       without_cases=[], created_at="2026-01-01T00:00:00+00:00",
                       evalarc_version="0")
GOOD = _evaluation([(1, "a", {"x": True}), (1, "b", {"y": True}), (2, "a", {"x": True})])


def test_margin_counts_distinct_cases_in_the_target_dimension_only() -> None:
    fault = _evaluation([
        (1, "a", {"x": False}), (2, "a", {"x": False}),  # one case under two seeds: one detector
        (1, "b", {"y": False}),  # another dimension: not a detection
        (1, "c", {"x": True}),
    ])
    audit = compute_audit(GOOD, [FaultRun("f", "x", fault)], CONTEXT)
    (row,) = audit["mutants"]
    assert (row["killed"], row["detection_margin"], row["failing_cases"]) == (True, 1, ["a"])
    assert audit["detection"] == {"weakest_margin": 1, "single_case_detections": ["f"],
                                  "sole_detector_cases": ["a"]}
    assert (audit["schema_version"], audit["valid"], audit["passed"],
            audit["mutation_score"]) == (AUDIT_SCHEMA, True, True, 1.0)
    assert summary_lines(audit) == [
        "Audit: PASS | Reference: PASS | Negative controls detected: 1/1",
        "Weakest detection margin: 1 case(s) | Detected by a single case: 1/1 (f)",
    ]


def test_a_survivor_counts_zero_and_fails_the_audit() -> None:
    caught = _evaluation([(1, "a", {"x": False}), (1, "b", {"x": False})])
    survivor = _evaluation([(1, "a", {"x": True}), (1, "b", {"y": False})])
    audit = compute_audit(GOOD, [FaultRun("caught", "x", caught),
                                 FaultRun("survivor", "x", survivor)], CONTEXT)
    assert [row["detection_margin"] for row in audit["mutants"]] == [2, 0]
    assert (audit["killed"], audit["total"], audit["mutation_score"]) == (1, 2, 0.5)
    assert audit["detection"]["weakest_margin"] == 0
    assert audit["detection"]["single_case_detections"] == []
    assert (audit["valid"], audit["passed"]) == (True, False)
    assert summary_lines(audit) == [
        "Audit: FAIL | Reference: PASS | Negative controls detected: 1/2",
        "Weakest detection margin: 0 case(s)",
    ]


def test_an_invalid_run_is_never_a_detection_and_voids_the_score() -> None:
    broken = _evaluation([(1, "a", {"x": False}), (1, "b", {"x": None})])
    caught = _evaluation([(1, "a", {"x": False}), (1, "b", {"x": False}), (1, "c", {"x": False})])
    audit = compute_audit(GOOD, [FaultRun("broken", "x", broken),
                                 FaultRun("caught", "x", caught)], CONTEXT)
    row = audit["mutants"][0]
    assert (row["valid"], row["killed"], row["detection_margin"]) == (False, False, None)
    assert (audit["valid"], audit["mutation_score"], audit["passed"]) == (False, None, False)
    assert audit["detection"]["weakest_margin"] == 3  # invalid runs are left out
    assert summary_lines(audit)[0] == \
        "Audit: INVALID | Reference: PASS | Negative controls detected: 1/2"


def test_reference_states() -> None:
    failing = _evaluation([(1, "a", {"x": False})])
    audit = compute_audit(failing, [], CONTEXT)
    assert (audit["reference_passed"], audit["passed"], audit["valid"]) == (False, False, True)
    assert summary_lines(audit)[0].startswith("Audit: FAIL | Reference: FAIL")
    unassessed = compute_audit(_evaluation([(1, "a", {"x": None})]), [], CONTEXT)
    assert summary_lines(unassessed)[0].startswith("Audit: INVALID | Reference: UNASSESSED")
    assert summary_lines(unassessed)[1] == "Weakest detection margin: unavailable case(s)"


def test_interpretation_names_the_denominator() -> None:
    audit = compute_audit(GOOD, [FaultRun("f", "x", _evaluation([(1, "a", {"x": False})]))],
                          CONTEXT)
    text = audit["interpretation"]
    assert "1 declared fault models" in text and "not a bound on reward hacking" in text
    assert "margin of 1" in text


# -- the reduced suite -----------------------------------------------------------------------


def test_reduced_suite_refuses_unknown_and_emptying_removals() -> None:
    pack = load_pack("durable-kv")
    with pytest.raises(UsageError, match="no such case in durable-kv"):
        reduced_pack(pack, ["no-such-case"], [17])
    with pytest.raises(UsageError, match="leaves dimension compare_swap without any case"):
        reduced_pack(pack, ["cas-type-sensitivity", "cas-match-and-mismatch"], [17])
    reduced = reduced_pack(pack, ["cas-type-sensitivity"], [17])
    ids = [case.case_id for case in reduced.grader.generate_cases(17)]
    assert len(ids) == 14 and "cas-type-sensitivity" not in ids
    assert reduced.grader.cases_sha256(reduced.grader.generate_cases(17)) != \
        pack.grader.cases_sha256(pack.grader.generate_cases(17))


# -- the bundled recordings ------------------------------------------------------------------


def test_the_bundled_store_holds_real_docker_runs_of_every_control() -> None:
    store = open_store(bundled_dir("recordings"))
    images = {runtime["image"] for runtime in store.index.runtimes.values()}
    assert images == set(IMAGES.values())
    assert {runtime["backend"] for runtime in store.index.runtimes.values()} == {"docker"}
    assert all(runtime["image_id"].startswith("sha256:")
               for runtime in store.index.runtimes.values())
    per_pack = {pack: 0 for pack in TABLES}
    for key in store.index.entries:
        per_pack[key.pack.partition("@")[0]] += 1
    # Every case of every seed for the reference and each fault, in both languages.
    assert per_pack == {"durable-kv": 2 * 9 * 45, "support-routing": 2 * 8 * 12,
                        "robot-evidence-review": 2 * 7 * 12}
    assert {key.seed for key in store.index.entries} == set(SEEDS)
    distinct = {recording for recording in store.index.entries.values()}
    assert len(distinct) <= len(store.index.entries)


def _replayed(tmp_path: Path, task: str, language: str, seeds: tuple[int, ...] = SEEDS,
              without: tuple[str, ...] = ()) -> dict[str, Any]:
    options = AuditOptions(task=task, language=language, backend="replay", seeds=seeds,
                           without_cases=without)
    result = run_audit(tmp_path / f"{task}-{language}-{len(seeds)}", options)
    assert result.divergences == []
    return result.audit


@pytest.mark.parametrize("task", sorted(TABLES))
def test_seed_tables_are_reproduced_from_the_recordings_in_both_languages(
        tmp_path: Path, task: str) -> None:
    declared, detected, weakest, single, sole = TABLES[task]
    margins: dict[str, dict[str, tuple[int, list[str]]]] = {}
    for language in IMAGES:
        audit = _replayed(tmp_path, task, language)
        assert audit["reference"]["runtime"]["image"] == IMAGES[language]
        assert (audit["valid"], audit["passed"], audit["reference_passed"]) == (True, True, True)
        assert (audit["total"], audit["killed"], audit["mutation_score"]) == (
            declared, detected, 1.0)
        assert audit["detection"] == {"weakest_margin": weakest,
                                      "single_case_detections": single,
                                      "sole_detector_cases": sole}
        assert audit["seeds"] == list(SEEDS)
        margins[language] = {row["name"]: (row["detection_margin"], row["failing_cases"])
                             for row in audit["mutants"]}
    assert margins["python"] == margins["javascript"]
    if task == "durable-kv":
        assert {name: margin for name, (margin, _) in margins["python"].items()} == \
            DURABLE_KV_MARGINS


@pytest.mark.parametrize("task", sorted(TABLES))
def test_seed_17_reproduces_each_fault_s_declared_score_and_detectors(
        tmp_path: Path, task: str) -> None:
    pack = load_pack(task)
    for language in IMAGES:
        audit = _replayed(tmp_path, task, language, seeds=(17,))
        for row, fault in zip(audit["mutants"], pack.faults, strict=True):
            assert row["name"] == fault.name
            assert row["score"] == fault.expected_seed17_score, (language, fault.name)
            assert row["failing_cases"] == list(fault.expected_seed17_failing)
        assert audit["reference"]["score"] == 1.0


def _cli(*args: str | Path, cwd: Path, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    temp = cwd / "tmp"
    temp.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "evalarc.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(temp), **(env or {})})


NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock", "PATH": "/nonexistent"}
"""An environment in which no Docker engine or client can be reached."""


def test_replay_audit_cli_needs_no_docker(tmp_path: Path) -> None:
    done = _cli("audit", "--backend", "replay", "--seeds", "17", "41", "97", "--output", "out",
                "--quiet", cwd=tmp_path, env=NO_DOCKER)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "Audit: PASS | Reference: PASS | Negative controls detected: 8/8\n"
        "Weakest detection margin: 1 case(s) | Detected by a single case: 3/8 "
        "(accept-nonstring-keys, boolean-equals-one, partial-batch)\n"
        "out\n"
    )
    assert done.stderr == ""
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["audit.json", "evaluations", "events.jsonl", "index.html", "params.json",
                     "recordings"]
    params = json.loads((tmp_path / "out" / "params.json").read_text())
    assert (params["kind"], params["backend"], params["language"], params["without_cases"]) == (
        "audit", "replay", "python", [])
    events = [json.loads(line) for line in
              (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    assert {event["control"] for event in events} == \
        {"reference", *DURABLE_KV_MARGINS}
    assert sum(1 for event in events if event["event"] == "case_completed") == 9 * 45
    assert list((tmp_path / "tmp").iterdir()) == []
    verified = _cli("verify", "out", cwd=tmp_path, env=NO_DOCKER)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("Verified audit: ")


def test_removing_cas_type_sensitivity_leaves_seven_of_eight(tmp_path: Path) -> None:
    done = _cli("audit", "--backend", "replay", "--seeds", "17", "--without-case",
                "cas-type-sensitivity", "--output", "reduced", "--quiet", cwd=tmp_path,
                env=NO_DOCKER)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "Audit: FAIL | Reference: PASS | Negative controls detected: 7/8",
        "Weakest detection margin: 0 case(s) | Detected by a single case: 3/8 "
        "(accept-nonstring-keys, cas-always-wins, partial-batch)",
        "reduced",
    ]
    audit = json.loads((tmp_path / "reduced" / "audit.json").read_text())
    assert (audit["mutation_score"], audit["killed"], audit["total"]) == (0.875, 7, 8)
    assert audit["detection"]["weakest_margin"] == 0
    assert audit["without_cases"] == ["cas-type-sensitivity"]
    rows = {row["name"]: row for row in audit["mutants"]}
    survivor = rows["boolean-equals-one"]
    assert (survivor["killed"], survivor["detection_margin"], survivor["score"]) == (
        False, 0, 1.0)
    assert rows["cas-always-wins"]["detection_margin"] == 1
    assert len(audit["reference"]["cases"]) == 14
    # The unreduced suite at seed 17 still detects everything: the removal is the cause.
    full = _replayed(tmp_path, "durable-kv", "python", seeds=(17,))
    assert (full["killed"], full["detection"]["weakest_margin"]) == (8, 1)


def test_audit_usage_errors_exit_2_before_writing(tmp_path: Path) -> None:
    cases = [
        (["--without-case", "nope"], "no such case in durable-kv"),
        (["--backend", "local"], "local mode executes host code"),
        (["--language", "cobol"], "Invalid value for '--language'"),
        (["--recordings", "x"], "--recordings is only for --backend replay"),
        (["--backend", "replay", "--timeout", "0"], "--timeout must be a finite number"),
        (["--backend", "replay", "--recordings", "nowhere"], "recordings folder nowhere"),
        (["--backend", "replay", "--image", "python:3.12-slim"],
         "the recordings have image \"evalarc-python:local\""),
    ]
    for extra, message in cases:
        done = _cli("audit", "--output", "never", *extra, cwd=tmp_path, env=NO_DOCKER)
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr, (extra, done.stderr)
        assert not (tmp_path / "never").exists()


def test_the_audit_page_is_a_model_then_escaped_html(tmp_path: Path) -> None:
    audit = _replayed(tmp_path, "support-routing", "python", seeds=(17,))
    page = build_audit_page(audit)
    assert [row.name for row in page.controls] == ["reference", "claim-without-actions",
                                                   "wrong-ticket", "wrong-queue",
                                                   "duplicate-note", "close-unresolved",
                                                   "skip-retry", "new-key-on-retry"]
    narrow = [row.name for row in page.controls if row.narrow]
    assert narrow == ["skip-retry", "new-key-on-retry"]
    assert page.narrow_faults == ["new-key-on-retry", "skip-retry"]
    assert page.tone == "ok" and page.cards[0].value == "1.0000"
    audit["mutants"][0]["name"] = "<script>alert(1)</script>"
    html = render_audit_page(audit)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Content-Security-Policy" in html and "http" not in html.split("<body>")[1]
