"""durable-kv with real candidate processes on the local backend (seed 17 unless stated).

The transcript hashes and fault scores are the values the reference EvalArc recorded; our own
Python and JavaScript references must reproduce them through our own grader.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import canonical_json
from evalarc.packs import EvaluationRun, evaluate, load_pack, materialize_workspace
from evalarc.runtime.local import LocalBackend
from evalarc.runtime.snapshot import snapshot_candidate

pytestmark = pytest.mark.slow

PACK = load_pack("durable-kv")
GRADER: Any = PACK.grader
SEED17_TRANSCRIPTS = {
    "read-write-delete": "c809eed26dc56583f9385d7d4adca2d981d06a672dc1ccbc0ffc52aa228b86f7",
    "json-types-and-overwrite":
        "83f6377f4b57ac659e8162136107ca644158ee089c944892aa9817085e74bd60",
    "reject-and-continue": "d4e0c26837f54e0af94d4909e3cab21d86dedca8c8842d0daae9e7471198c2a0",
    "empty-and-unicode-keys": "e8abe374fc308ce0744e96d2920495b96bda3b026cec9b86fa055023e1e4e620",
    "commit-batch": "ac21f2f6bcc47e3c807fa4ed72300af0f5ef39809ba17f93423e37a0e177e718",
    "rollback-batch": "1786c093ba29dcad562531a44cdbe5fddbed9d3f4632c1c6ddfe736baa240f35",
    "cas-match-and-mismatch": "ecd6148f6f387b4ef5351b877afd4cf27ea2a04c4253a34220fd78de5442d89f",
    "cas-type-sensitivity": "459a5b74588217d8abcf8e138eb559364a1d01d1f23e8c43ca0127ba28240258",
    "restart-preserves-acknowledged-write":
        "c97b82c67f26a1aa2fdc8ac57f50690dbbe13554d094059ffe6690a592df3a55",
    "restart-preserves-transaction":
        "2d1f704df309d49f8e6e89e674581af2cf81aa22fdde633058e2f2d7b8c8a430",
    "sigkill-after-acknowledgement":
        "544c6be916371ed5a0e901394c5e293733ca84e0ad20079a952f9c4b2821a728",
    "sigkill-after-atomic-batch":
        "2d1f704df309d49f8e6e89e674581af2cf81aa22fdde633058e2f2d7b8c8a430",
    "restart-preserves-cas": "149c04fd1366e77603e631349740ae38bdff40aa69f6eb4c738979eb13bf3f49",
    "sigkill-after-delete": "b3dba7f28e6629bb22f49b0439e0f74580ca3263dd98e16061ac9a8f680b5df7",
    "seeded-state-machine": "2a7e5ad4bedce67faf4d53f289c3a1a7304345a0167b287418fdf7dd411030f8",
}
LANGUAGES = ["python", "javascript"]


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "these tests run the JavaScript reference and need node on PATH"
    return node


def _backend(workspace: Path, tmp_path: Path) -> tuple[Any, LocalBackend]:
    snapshot = snapshot_candidate(workspace, tmp_path / "snapshot", list(PACK.default_command))
    # Local runs get PATH=/bin:/usr/bin, so resolve node the way audits do.
    command = [_node() if arg == "node" else arg for arg in snapshot.command]
    return snapshot, LocalBackend(snapshot.path, command, PACK.limits, tmp_path / "work")


def _evaluate(workspace: Path, tmp_path: Path, seeds: tuple[int, ...] = (17,)) -> EvaluationRun:
    snapshot, backend = _backend(workspace, tmp_path)
    return evaluate(PACK, snapshot, backend, list(seeds), PACK.limits)


def _workspace(tmp_path: Path, language: str, fault: str | None = None) -> Path:
    dest = tmp_path / "workspace"
    materialize_workspace("durable-kv", language, reference=True, fault=fault, dest=dest,
                          contract=False)
    return dest


def _program(tmp_path: Path, source: str) -> Path:
    dest = tmp_path / "workspace"
    dest.mkdir()
    (dest / "main.py").write_text(source)
    return dest


@pytest.mark.parametrize("language", LANGUAGES)
def test_reference_reproduces_the_recorded_transcripts(tmp_path: Path, language: str) -> None:
    run = _evaluate(_workspace(tmp_path, language), tmp_path)
    report = run.report
    assert {case["case_id"]: case["transcript_sha256"] for case in report["cases"]} == \
        SEED17_TRANSCRIPTS
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        True, "passed", 1.0, True)
    assert report["cases_sha256"] == GRADER.cases_sha256(GRADER.generate_cases(17))
    cases = GRADER.generate_cases(17)
    assert [c["checks_completed"] for c in report["cases"]] == [c.request_count for c in cases]
    for record, case in zip(report["cases"], cases, strict=True):
        assert record["error"] is None and record["checks"] == {case.dimension: True}
        exits = [process["exit_code"] for process in record["processes"]]
        assert exits == [0 if plan.stop == "eof" else -9 for plan in case.sessions]
        assert all(process["output_bytes"] > 0 for process in record["processes"])
    # Each case's recording is the transcript returned beside the report.
    assert [r.sha256 for r in run.recordings] == [c["recording_sha256"] for c in report["cases"]]
    assert all(r.sha256 == r.transcript.sha256() for r in run.recordings)


def test_evaluation_report_shape_and_events(tmp_path: Path) -> None:
    snapshot, backend = _backend(_workspace(tmp_path, "python"), tmp_path)
    events: list[dict[str, Any]] = []
    report = evaluate(PACK, snapshot, backend, [17], PACK.limits, on_event=events.append).report
    names = [event["event"] for event in events]
    assert names == ["evaluation_started"] + ["case_started", "case_completed"] * 15 + [
        "evaluation_completed"]
    assert events[0]["candidate_sha256"] == report["candidate_sha256"] == snapshot.sha256
    assert [e["case_number"] for e in events if e["event"] == "case_started"] == list(
        range(1, 16))
    assert events[-1] == {"event": "evaluation_completed", "task": "durable-kv", "score": 1.0,
                          "status": "passed", "valid": True}
    assert list(report) == [
        "schema_version", "created_at", "evalarc_version", "task", "candidate_sha256",
        "grader_sha256", "cases_sha256", "runtime", "seeds", "valid", "status", "score",
        "resolved", "dimensions", "cases", "evaluation_seconds", "agent_cost_usd",
        "agent_tokens",
    ]
    assert report["schema_version"] == "evalarc.evaluation.v2"
    assert report["created_at"].endswith("+00:00")
    assert report["task"] == PACK.task_json()
    runtime = report["runtime"]
    assert (runtime["backend"], runtime["image"], runtime["image_id"]) == ("local", None, None)
    assert runtime["command"] == list(PACK.default_command)
    assert runtime["request_limit_bytes"] == 8192
    assert report["seeds"] == [17]
    assert list(report["dimensions"]) == [name for name, _ in PACK.weights()]
    assert report["dimensions"]["basic"] == {"passed": 3, "total": 3, "assessed": 3,
                                             "weight": 0.25, "score": 1.0}
    assert (report["agent_cost_usd"], report["agent_tokens"]) == (None, None)
    canonical_json(report)  # finite, JSON-serialisable throughout


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("fault", [fault.name for fault in PACK.faults])
def test_declared_fault_gets_its_recorded_score(tmp_path: Path, language: str,
                                                fault: str) -> None:
    declared = PACK.fault(fault)
    report = _evaluate(_workspace(tmp_path, language, fault), tmp_path).report
    assert report["valid"] is True
    assert report["score"] == declared.expected_seed17_score
    assert report["resolved"] is False and report["status"] == "failed"
    failing_in_target = sorted(
        case["case_id"] for case in report["cases"]
        if case["checks"].get(declared.target_dimension) is False
    )
    assert failing_in_target == list(declared.expected_seed17_failing)


def test_boolean_equals_one_is_a_high_partial_score_without_resolution(tmp_path: Path) -> None:
    report = _evaluate(_workspace(tmp_path, "python", "boolean-equals-one"), tmp_path).report
    assert report["score"] == 0.925 and report["resolved"] is False
    failed = [case for case in report["cases"] if not case["passed"]]
    assert [case["case_id"] for case in failed] == ["cas-type-sensitivity"]
    assert failed[0]["error"] == (
        'response mismatch at request 2; expected {"ok": true, "swapped": false}, '
        'got {"ok": true, "swapped": true}')
    assert failed[0]["checks_completed"] == 1


ALWAYS_OK = """
import sys
for line in sys.stdin:
    print('{"ok": true}', flush=True)
"""


def test_always_ok_candidate_fails_at_request_one(tmp_path: Path) -> None:
    report = _evaluate(_program(tmp_path, ALWAYS_OK), tmp_path).report
    first = report["cases"][0]
    assert first["case_id"] == "read-write-delete" and first["status"] == "failed"
    assert first["error"] == ('response mismatch at request 1; expected '
                              '{"found": false, "ok": true}, got {"ok": true}')
    assert first["checks_completed"] == 0
    assert first["transcript_sha256"].startswith("e9d1c1a4")
    get = GRADER.generate_cases(17)[0].sessions[0].requests[0]
    pair = canonical_json([get, {"ok": True}]).encode()
    assert first["transcript_sha256"] == hashlib.sha256(pair).hexdigest()
    assert first["processes"][0]["exit_code"] == -9  # killed after the mismatch
    assert report["score"] == 0.0


SELF_SCORING = """
import sys
for line in sys.stdin:
    print('{"score": 1.0, "resolved": true}', flush=True)
"""


def test_self_reported_score_has_no_authority(tmp_path: Path) -> None:
    report = _evaluate(_program(tmp_path, SELF_SCORING), tmp_path).report
    assert report["score"] == 0.0 and report["resolved"] is False


NOT_JSON = """
import sys
for line in sys.stdin:
    print("NaN", flush=True)
"""


def test_protocol_violation_is_an_agent_error(tmp_path: Path) -> None:
    report = _evaluate(_program(tmp_path, NOT_JSON), tmp_path).report
    assert {case["status"] for case in report["cases"]} == {"agent_error"}
    assert report["cases"][0]["error"] == "response is not finite JSON"
    assert report["cases"][0]["transcript_sha256"] == hashlib.sha256().hexdigest()
    assert report["valid"] is True and report["score"] == 0.0


def test_sigkill_is_survived_only_by_acknowledged_durable_writes(tmp_path: Path) -> None:
    """A service that acknowledges before writing its file loses the write to the kill."""
    late_writer = (
        "import json, os, sys\n"
        "path = sys.argv[1]\n"
        "data = json.load(open(path)) if os.path.exists(path) else {}\n"
        "for line in sys.stdin:\n"
        "    request = json.loads(line)\n"
        "    if request.get('op') == 'put':\n"
        "        data[request['key']] = request['value']\n"
        "        print(json.dumps({'ok': True}), flush=True)\n"
        "        continue\n"
        "    if request['key'] in data:\n"
        "        print(json.dumps({'ok': True, 'found': True, 'value': data[request['key']]}),"
        " flush=True)\n"
        "    else:\n"
        "        print(json.dumps({'ok': True, 'found': False}), flush=True)\n"
        "json.dump(data, open(path, 'w'))\n"
    )
    workspace = _program(tmp_path, late_writer)
    _, backend = _backend(workspace, tmp_path)
    cases = {case.case_id: case for case in GRADER.generate_cases(17)}
    outcomes = {}
    for case_id in ("restart-preserves-acknowledged-write", "sigkill-after-acknowledgement"):
        with backend.open_case(f"17/{case_id}") as case_run:
            outcomes[case_id] = GRADER.run_case(cases[case_id], case_run)
    assert outcomes["sigkill-after-acknowledgement"].status == "failed"
    assert outcomes["sigkill-after-acknowledgement"].error.startswith(
        "response mismatch at request 2;")
    # Its restart case passes the first session's clean exit, then mishandles the delete.
    assert outcomes["restart-preserves-acknowledged-write"].checks_completed == 2


def test_missing_executable_makes_the_evaluation_invalid(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "evalarc.toml").write_text('command = ["/nonexistent/kv-server", "{state}"]\n')
    report = _evaluate(workspace, tmp_path).report
    assert {case["status"] for case in report["cases"]} == {"environment_error"}
    assert all(set(case["checks"].values()) == {None} for case in report["cases"])
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        False, "environment_error", None, False)
    assert report["dimensions"]["basic"]["assessed"] == 0
    assert "could not start" in report["cases"][0]["error"]


EDGE_REQUESTS: list[Any] = [
    {"op": "put", "key": "n", "value": 1.0},
    {"op": "cas", "key": "n", "expected": 1, "value": "int"},
    {"op": "get", "key": "n"},
    {"op": "put", "key": "z", "value": -0.0},
    {"op": "cas", "key": "z", "expected": 0.0, "value": "zero"},
    {"op": "cas", "key": "z", "expected": -0.0, "value": 0},
    {"op": "cas", "key": "z", "expected": -0, "value": "int zero"},
    {"op": "get", "key": "z"},
    {"op": "put", "key": "big", "value": 2**70 + 1},
    {"op": "cas", "key": "big", "expected": 2**70, "value": "wrong"},
    {"op": "get", "key": "big"},
    {"op": "put", "key": "__proto__", "value": {"b": [1, {"c": None}], "a": "\U0001f600"}},
    {"op": "cas", "key": "__proto__", "expected": {"a": "\U0001f600", "b": [1, {"c": None}]},
     "value": {"constructor": 1.5e300}},
    {"op": "get", "key": "__proto__"},
    {"op": "get", "key": "constructor"},
    {"op": "put", "key": "\ud800", "value": "lone \udfff surrogate"},
    {"op": "get", "key": "\ud800"},
    {"op": "cas", "key": "t", "expected": None, "value": 1},
    {"op": "batch", "operations": [{"op": "put", "key": "t", "value": True},
                                   {"op": "cas", "key": "t", "expected": True, "value": 1}]},
    {"op": "get", "key": "t"},
    {"op": "put", "key": "x", "value": [], "extra": {"ignored": True}},
    {"op": "get", "key": "x", "value": "ignored"},
]


@pytest.mark.parametrize("language", LANGUAGES)
def test_reference_matches_the_oracle_on_edge_values_across_a_restart(
        tmp_path: Path, language: str) -> None:
    _, backend = _backend(_workspace(tmp_path, language), tmp_path)
    half = len(EDGE_REQUESTS) // 2
    case = GRADER.Case(0, "edge-values", "basic", (
        GRADER.SessionPlan(tuple(EDGE_REQUESTS[:half]), "kill"),
        GRADER.SessionPlan(tuple(EDGE_REQUESTS[half:]) + tuple(
            {"op": "get", "key": key} for key in ("n", "z", "big", "__proto__", "\ud800"))),
    ))
    with backend.open_case("0/edge-values") as case_run:
        outcome = GRADER.run_case(case, case_run)
    assert (outcome.status, outcome.error) == ("passed", None)
    assert outcome.checks_completed == case.request_count


def test_python_interpreter_placeholder_is_the_graders_own(tmp_path: Path) -> None:
    _, backend = _backend(_workspace(tmp_path, "python"), tmp_path)
    assert backend.expand(tmp_path)[0] == sys.executable
