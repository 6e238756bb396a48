"""robot-evidence-review with real candidate processes on the local backend.

Both references must resolve every case; each declared fault must be caught in its target
dimension by the cases the manifest declares, with the same scores in Python and JavaScript; and
assume-complete must rest on the single incomplete-recording case.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import canonical_json
from evalarc.packs import EvaluationRun, evaluate, load_pack, materialize_workspace
from evalarc.runtime.local import LocalBackend
from evalarc.runtime.protocol import Limits
from evalarc.runtime.snapshot import snapshot_candidate

PACK = load_pack("robot-evidence-review")
GRADER: Any = PACK.grader
LANGUAGES = ["python", "javascript"]
AUDIT_SEEDS = (17, 41)
DIMENSIONS = ["provenance", "coordinates", "clock", "metrics", "completeness", "protocol"]


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "these tests run the JavaScript reference and need node on PATH"
    return node


def _backend(workspace: Path, tmp_path: Path,
             limits: Limits = PACK.limits) -> tuple[Any, LocalBackend]:
    snapshot = snapshot_candidate(workspace, tmp_path / "snapshot", list(PACK.default_command))
    # Local runs get PATH=/bin:/usr/bin, so resolve node the way audits do.
    command = [_node() if arg == "node" else arg for arg in snapshot.command]
    return snapshot, LocalBackend(snapshot.path, command, limits, tmp_path / "work")


def _evaluate(workspace: Path, tmp_path: Path, seeds: tuple[int, ...] = (17,),
              limits: Limits = PACK.limits) -> EvaluationRun:
    snapshot, backend = _backend(workspace, tmp_path, limits)
    return evaluate(PACK, snapshot, backend, list(seeds), limits)


def _workspace(tmp_path: Path, language: str, fault: str | None = None,
               reference: bool = True) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    dest = tmp_path / "workspace"
    materialize_workspace(PACK.id, language, reference=reference, fault=fault, dest=dest,
                          contract=False)
    return dest


def _program(tmp_path: Path, source: str) -> Path:
    dest = tmp_path / "workspace"
    dest.mkdir()
    (dest / "main.py").write_text(source)
    return dest


def _failing_in(report: dict[str, Any], dimension: str) -> list[str]:
    """Distinct case ids failing ``dimension``: the detection margin's cases."""
    return sorted({case["case_id"] for case in report["cases"]
                   if case["checks"][dimension] is False})


@pytest.mark.parametrize("language", LANGUAGES)
def test_reference_resolves_every_case(tmp_path: Path, language: str) -> None:
    run = _evaluate(_workspace(tmp_path, language), tmp_path, AUDIT_SEEDS)
    report = run.report
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        True, "passed", 1.0, True)
    cases = [case for seed in AUDIT_SEEDS for case in GRADER.generate_cases(seed)]
    assert report["cases_sha256"] == GRADER.cases_sha256(cases)
    assert report["runtime"]["request_limit_bytes"] == 65536
    assert all(group == {"passed": 8, "total": 8, "assessed": 8, "weight": group["weight"],
                         "score": 1.0} for group in report["dimensions"].values())
    for record, case in zip(report["cases"], cases, strict=True):
        assert (record["seed"], record["case_id"]) == (case.seed, case.case_id)
        assert record["checks"] == dict.fromkeys(DIMENSIONS, True)
        assert (record["error"], record["problems"]) == (None, [])
        [exchange] = record["trace"]
        assert exchange["request"] == case.request
        assert exchange["response"]["ok"] is True
        assert exchange["response"]["report"]["missing_frames"] == case.expected["missing_frames"]
        pair = canonical_json([case.request, exchange["response"]]).encode()
        assert record["transcript_sha256"] == hashlib.sha256(pair).hexdigest()
        [process] = record["processes"]
        assert process["exit_code"] == 0 and process["output_bytes"] > 0
    assert [r.sha256 for r in run.recordings] == [c["recording_sha256"] for c in report["cases"]]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("fault", [fault.name for fault in PACK.faults])
def test_declared_fault_is_detected_in_its_target_dimension(tmp_path: Path, language: str,
                                                            fault: str) -> None:
    declared = PACK.fault(fault)
    report = _evaluate(_workspace(tmp_path, language, fault), tmp_path, AUDIT_SEEDS).report
    assert report["valid"] is True and report["resolved"] is False
    seed17 = {**report, "cases": [case for case in report["cases"] if case["seed"] == 17]}
    assert _failing_in(seed17, declared.target_dimension) == list(
        declared.expected_seed17_failing)
    # Seed 41 fails the same cases: the margin counts distinct cases, not case runs.
    assert _failing_in(report, declared.target_dimension) == list(
        declared.expected_seed17_failing)
    assert report["score"] == declared.expected_seed17_score


def test_assume_complete_is_the_only_fault_caught_by_a_single_case(tmp_path: Path) -> None:
    margins = {}
    for fault in PACK.faults:
        folder = tmp_path / fault.name
        report = _evaluate(_workspace(folder, "python", fault.name), folder).report
        margins[fault.name] = len(_failing_in(report, fault.target_dimension))
    assert margins == {"assume-meters": 2, "ignore-frame-origin": 2, "ignore-clock-units": 2,
                       "assume-complete": 1, "last-frame-is-peak": 4, "invent-source": 4}


def test_assume_complete_fails_only_completeness_of_one_case(tmp_path: Path) -> None:
    report = _evaluate(_workspace(tmp_path, "javascript", "assume-complete"), tmp_path).report
    failed = [case for case in report["cases"] if not case["passed"]]
    assert [case["case_id"] for case in failed] == ["incomplete-recording"]
    assert failed[0]["checks"] == dict.fromkeys(DIMENSIONS, True) | {"completeness": False}
    assert failed[0]["error"] == "wrong report: missing_frames"
    assert failed[0]["trace"][0]["response"]["report"]["missing_frames"] == []
    assert report["score"] == 0.9625


@pytest.mark.parametrize("language", LANGUAGES)
def test_starter_speaks_the_protocol_and_scores_zero(tmp_path: Path, language: str) -> None:
    report = _evaluate(_workspace(tmp_path, language, reference=False), tmp_path).report
    assert report["valid"] is True and report["score"] == 0.0
    assert {case["status"] for case in report["cases"]} == {"failed"}
    error = report["cases"][0]["error"]
    assert error.startswith('response is not {"ok": true, "report": {...}}: {"error": ')
    assert "not implemented" in error
    assert all(case["processes"][0]["exit_code"] == 0 for case in report["cases"])


SELF_SCORING = """
import sys
for line in sys.stdin:
    print('{"score": 1.0, "resolved": true}', flush=True)
"""


def test_self_reported_score_has_no_authority(tmp_path: Path) -> None:
    report = _evaluate(_program(tmp_path, SELF_SCORING), tmp_path).report
    assert report["score"] == 0.0 and report["resolved"] is False
    assert all(set(case["checks"].values()) == {False} for case in report["cases"])


SILENT = """
import sys, time
sys.stdin.readline()
time.sleep(30)
"""


def test_timed_out_candidate_is_an_agent_error_with_every_check_false(tmp_path: Path) -> None:
    limits = dataclasses.replace(PACK.limits, response_timeout=0.5)
    _, backend = _backend(_program(tmp_path, SILENT), tmp_path, limits)
    case = GRADER.generate_cases(17)[0]
    with backend.open_case("17/world-meters") as case_run:
        outcome = GRADER.run_case(case, case_run)
    record = outcome.record(0.0, None, 2048)
    assert (record["status"], record["error"]) == ("agent_error", "response timeout")
    assert record["checks"] == dict.fromkeys(DIMENSIONS, False)
    assert record["processes"][0]["exit_code"] == -9
    assert record["trace"] == [{"request": case.request, "response": None}]


NOT_JSON = """
import sys
for line in sys.stdin:
    print('{"ok": true, "report": NaN}', flush=True)
"""


def test_non_finite_json_is_an_agent_error(tmp_path: Path) -> None:
    report = _evaluate(_program(tmp_path, NOT_JSON), tmp_path).report
    assert {case["status"] for case in report["cases"]} == {"agent_error"}
    assert report["cases"][0]["error"] == "response is not finite JSON"
    assert report["valid"] is True and report["score"] == 0.0


def test_a_right_answer_needs_a_clean_exit(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "python")
    program = workspace / "main.py"
    source = program.read_text()
    assert source.count("    return 0\n") == 1
    program.write_text(source.replace("    return 0\n", "    return 3\n"))
    report = _evaluate(workspace, tmp_path).report
    case = report["cases"][0]
    assert (case["status"], case["error"]) == ("agent_error", "candidate exited with code 3")
    assert case["checks"] == dict.fromkeys(DIMENSIONS, False)
    assert case["trace"][0]["response"]["ok"] is True  # the answer is kept as evidence
    assert case["processes"][0]["exit_code"] == 3
    assert report["score"] == 0.0


def test_missing_executable_makes_the_evaluation_invalid(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "evalarc.toml").write_text('command = ["/nonexistent/reviewer"]\n')
    report = _evaluate(workspace, tmp_path).report
    assert {case["status"] for case in report["cases"]} == {"environment_error"}
    assert all(set(case["checks"].values()) == {None} for case in report["cases"])
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        False, "environment_error", None, False)
    assert report["dimensions"]["metrics"]["assessed"] == 0
    assert "could not start" in report["cases"][0]["error"]


def test_the_default_8_kib_request_limit_is_a_harness_error(tmp_path: Path) -> None:
    limits = dataclasses.replace(PACK.limits, request_limit_bytes=8192)
    _, backend = _backend(_workspace(tmp_path, "python"), tmp_path, limits)
    case = GRADER.generate_cases(17)[0]
    with backend.open_case("17/world-meters") as case_run, \
            pytest.raises(ValueError, match="exceeds the request limit of 8192 bytes"):
        GRADER.run_case(case, case_run)
