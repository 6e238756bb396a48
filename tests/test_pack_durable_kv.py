"""The durable-kv pack without running candidates: manifest, seeded cases, oracle, scoring,
workspaces. Vectors come from the reference EvalArc's recorded values (spec durable-kv.md)."""

from __future__ import annotations

import dataclasses
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import canonical_json
from evalarc.errors import InputError, OutputError, UsageError
from evalarc.packs import (
    FaultEdit,
    _apply_fault,
    grader_sha256,
    list_packs,
    load_pack,
    materialize_workspace,
    validate_seeds,
)

PACK = load_pack("durable-kv")
GRADER: Any = PACK.grader  # the module itself, for its task-specific helpers
SEED17_CASES_SHA256 = "842a16a1e65700cde92ee5f5aaaa10d494a9fc9d71bd2d99fb68147b19aad63a"
INVALID = {"ok": False, "error": "invalid_request"}
OK = {"ok": True}
ABSENT = {"ok": True, "found": False}


def found(value: Any) -> dict[str, Any]:
    return {"ok": True, "found": True, "value": value}


# -- pack manifest -----------------------------------------------------------------------------


def test_manifest_identity_dimensions_and_defaults() -> None:
    assert (PACK.id, PACK.version, PACK.domain) == ("durable-kv", "0.1.0", "coding")
    assert PACK.description == "Persistent key-value service"
    assert PACK.task_json() == {"id": "durable-kv", "version": "0.1.0", "domain": "coding",
                                "split": "public-development"}
    assert PACK.weights() == [("basic", 0.25), ("validation", 0.15), ("transactions", 0.20),
                              ("compare_swap", 0.15), ("persistence", 0.15),
                              ("crash_recovery", 0.10)]
    assert PACK.default_command == ("{python}", "-I", "-B", "main.py", "{state}/store.db")
    assert PACK.default_seeds == (17, 41, 97)
    assert PACK.limits.request_limit_bytes == 8192
    assert PACK.limits.session_output_limit_bytes == 1_048_576
    assert (PACK.limits.response_timeout, PACK.limits.case_timeout) == (10.0, 60.0)
    assert "durable-kv" in [pack.id for pack in list_packs()]


def test_declared_faults_in_order_with_targets_and_recorded_scores() -> None:
    declared = [(f.name, f.target_dimension, f.expected_seed17_score) for f in PACK.faults]
    assert declared == [
        ("ack-without-work", "basic", 0.0),
        ("memory-only", "persistence", 0.78333333),
        ("partial-batch", "transactions", 0.9),
        ("cas-always-wins", "compare_swap", 0.85),
        ("boolean-equals-one", "compare_swap", 0.925),
        ("delete-noop", "basic", 0.65),
        ("accept-nonstring-keys", "validation", 0.925),
        ("commit-on-exit", "crash_recovery", 0.9),
    ]
    for fault in PACK.faults:
        assert set(fault.edits) == {"python", "javascript"}


def test_unknown_task_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown task"):
        load_pack("no-such-task")


# -- seeded case generation --------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "key", "second", "version"), [
    (17, "客户/6a06e9ab85a0bcc1", "second-4dad2986ce834960", 5991),
    (41, "客户/550caef9618a9261", "second-fe1b14343b106980", 2721),
    (97, "客户/6dd09a3531cd3165", "second-fec20c5fce5b14fe", 6096),
])
def test_seed_draws(seed: int, key: str, second: str, version: int) -> None:
    inputs = GRADER.draw_inputs(random.Random(seed))
    assert (inputs.key, inputs.second) == (key, second)
    assert inputs.value == {"version": version, "items": [True, None, "λ\n世界"]}


def test_seed17_cases_fingerprint() -> None:
    assert GRADER.cases_sha256(GRADER.generate_cases(17)) == SEED17_CASES_SHA256


def test_fingerprint_depends_on_seed_and_is_stable() -> None:
    assert GRADER.cases_sha256(GRADER.generate_cases(41)) != SEED17_CASES_SHA256
    assert GRADER.cases_sha256(GRADER.generate_cases(17)) == SEED17_CASES_SHA256


@pytest.mark.parametrize("seed", [17, 41, 97, 0, -5, 2**80])
def test_per_seed_shape(seed: int) -> None:
    cases = GRADER.generate_cases(seed)
    assert [case.case_id for case in cases] == [
        "read-write-delete", "json-types-and-overwrite", "reject-and-continue",
        "empty-and-unicode-keys", "commit-batch", "rollback-batch", "cas-match-and-mismatch",
        "cas-type-sensitivity", "restart-preserves-acknowledged-write",
        "restart-preserves-transaction", "sigkill-after-acknowledgement",
        "sigkill-after-atomic-batch", "restart-preserves-cas", "sigkill-after-delete",
        "seeded-state-machine",
    ]
    assert [case.request_count for case in cases] == [6, 16, 10, 4, 4, 7, 7, 5, 4, 3, 2, 3, 3,
                                                      3, 52]
    sessions = [plan for case in cases for plan in case.sessions]
    assert len(sessions) == 23
    killed = [case.case_id for case in cases for plan in case.sessions if plan.stop == "kill"]
    assert killed == ["sigkill-after-acknowledgement", "sigkill-after-atomic-batch",
                      "sigkill-after-delete"]
    assert Counter(case.dimension for case in cases) == {
        "basic": 3, "validation": 2, "transactions": 2, "compare_swap": 2, "persistence": 3,
        "crash_recovery": 3,
    }
    assert all(case.seed == seed for case in cases)


def test_every_request_fits_the_request_limit() -> None:
    longest = max(len(canonical_json(request).encode()) + 1
                  for case in GRADER.generate_cases(17)
                  for plan in case.sessions for request in plan.requests)
    assert 4096 < longest < PACK.limits.request_limit_bytes


def _play(requests: list[Any]) -> list[tuple[Any, Any]]:
    state: dict[str, Any] = {}
    return [(request, GRADER.expected_response(state, request)) for request in requests]


def test_seed17_state_machine_steps_and_final_reads() -> None:
    case = GRADER.generate_cases(17)[-1]
    inputs = GRADER.draw_inputs(random.Random(17))
    key, second, value = inputs.key, inputs.second, inputs.value
    requests = list(case.sessions[0].requests)
    assert requests[:10] == [
        {"op": "put", "key": "", "value": 784},
        {"op": "put", "key": key, "value": value},
        {"op": "get", "key": "雪"},
        {"op": "delete", "key": ""},
        {"op": "put", "key": "雪", "value": None},
        {"op": "put", "key": second, "value": True},
        {"op": "delete", "key": ""},
        {"op": "delete", "key": key},
        {"op": "get", "key": key},
        {"op": "put", "key": "雪", "value": value},
    ]
    assert Counter(request["op"] for request in requests[:48]) == {
        "put": 17, "get": 13, "delete": 18}
    final = [response for _, response in _play(requests)[48:]]
    assert final == [ABSENT, found(545), found(value), ABSENT]


def test_reject_and_continue_sends_eight_invalid_requests_between_writes() -> None:
    case = GRADER.generate_cases(17)[2]
    responses = [response for _, response in _play(list(case.sessions[0].requests))]
    assert responses[0] == OK
    assert responses[1:9] == [INVALID] * 8
    assert responses[9]["found"] is True


# -- the oracle --------------------------------------------------------------------------------


@pytest.mark.parametrize("request_", [
    None, [], "put", 3, True,
    {"op": "wat", "key": "k"}, {"key": "k", "value": 1}, {"op": None, "key": "k"},
    {"op": "put", "key": 5, "value": 1}, {"op": "get", "key": True}, {"op": "get", "key": None},
    {"op": "get"}, {"op": "delete", "key": ["k"]}, {"op": "delete", "key": {}},
    {"op": "put", "key": "k"}, {"op": "cas", "key": "k", "value": 1},
    {"op": "cas", "key": "k", "expected": 1},
    {"op": "batch"}, {"op": "batch", "operations": "invalid"},
    {"op": "batch", "operations": {"op": "put", "key": "k", "value": 1}},
    {"op": "batch", "operations": [{"op": "get", "key": "k"}]},
    {"op": "batch", "operations": [{"op": "cas", "key": "k", "expected": 1, "value": 2}]},
    {"op": "batch", "operations": [{"op": "batch", "operations": []}]},
    {"op": "batch", "operations": [{"op": "put", "key": "k"}]},
    {"op": "batch", "operations": [{"op": "put", "key": 1, "value": 1}]},
    {"op": "batch", "operations": [None]},
])
def test_invalid_requests_change_nothing(request_: Any) -> None:
    state: dict[str, Any] = {"k": "kept"}
    assert GRADER.expected_response(state, request_) == INVALID
    assert state == {"k": "kept"}


def test_invalid_batch_element_discards_the_valid_ones_before_it() -> None:
    state: dict[str, Any] = {"a": 1}
    batch = {"op": "batch", "operations": [
        {"op": "put", "key": "a", "value": 2}, {"op": "delete", "key": "a"},
        {"op": "put", "key": "b"},
    ]}
    assert GRADER.expected_response(state, batch) == INVALID
    assert state == {"a": 1}


def test_valid_batch_applies_in_order_and_empty_batch_is_ok() -> None:
    state: dict[str, Any] = {}
    batch = {"op": "batch", "operations": [
        {"op": "put", "key": "a", "value": 1}, {"op": "put", "key": "b", "value": 2},
        {"op": "delete", "key": "a"}, {"op": "put", "key": "b", "value": 3, "extra": True},
    ]}
    assert GRADER.expected_response(state, batch) == OK
    assert state == {"b": 3}
    assert GRADER.expected_response(state, {"op": "batch", "operations": []}) == OK


def test_basic_operations_and_extra_fields() -> None:
    assert [response for _, response in _play([
        {"op": "get", "key": ""},
        {"op": "put", "key": "", "value": None, "ignored": 1},
        {"op": "get", "key": ""},
        {"op": "delete", "key": "missing"},
        {"op": "delete", "key": ""},
        {"op": "get", "key": ""},
    ])] == [ABSENT, OK, found(None), OK, OK, ABSENT]


def test_batch_is_recognised_before_key_checks() -> None:
    # "batch" is checked before the single-op rules, so a batch needs no key.
    assert GRADER.expected_response({}, {"op": "batch", "operations": [], "key": 5}) == OK


@pytest.mark.parametrize(("stored", "expected", "swapped"), [
    (True, 1, False), (1, True, False), (1, 1.0, False), (1.0, 1, False), (0.0, -0.0, False),
    (0, -0, True), (1.0, 1e0, True), (2**80, 2**80, True), (2**80, 2**80 + 1, False),
    ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, True), ([1, 2], [2, 1], False),
    (None, None, True), ("1", 1, False), ({"a": True}, {"a": 1}, False),
])
def test_cas_uses_canonical_equality(stored: Any, expected: Any, swapped: bool) -> None:
    state: dict[str, Any] = {"k": stored}
    response = GRADER.expected_response(state, {"op": "cas", "key": "k", "expected": expected,
                                                "value": "new"})
    assert response == {"ok": True, "swapped": swapped}
    assert state["k"] == ("new" if swapped else stored)


def test_cas_never_creates_a_key() -> None:
    state: dict[str, Any] = {}
    assert GRADER.expected_response(
        state, {"op": "cas", "key": "k", "expected": None, "value": 1}
    ) == {"ok": True, "swapped": False}
    assert state == {}


def test_oracle_keeps_copies_of_values() -> None:
    state: dict[str, Any] = {}
    value = {"nested": [1]}
    GRADER.expected_response(state, {"op": "put", "key": "k", "value": value})
    value["nested"].append(2)
    response = GRADER.expected_response(state, {"op": "get", "key": "k"})
    assert response == found({"nested": [1]})
    response["value"]["nested"].append(3)
    assert state["k"] == {"nested": [1]}


def test_mismatch_message_truncates_each_side_to_180_characters() -> None:
    message = GRADER.mismatch_message(7, {"ok": True, "value": "x" * 500}, {"ok": True})
    prefix = "response mismatch at request 7; expected "
    assert message.startswith(prefix)
    expected_part, got_part = message[len(prefix):].split(", got ")
    assert expected_part == canonical_json({"ok": True, "value": "x" * 500})[:180]
    assert got_part == '{"ok": true}'


# -- scoring -----------------------------------------------------------------------------------


def _records(failing: dict[str, str], seeds: tuple[int, ...] = (17,)) -> list[dict[str, Any]]:
    """Case records for every case of ``seeds``; ``failing`` maps case id to its status."""
    records = []
    for seed in seeds:
        for case in GRADER.generate_cases(seed):
            status = failing.get(case.case_id, "passed")
            outcome = GRADER.CaseOutcome(case, status=status)
            records.append(outcome.record(0.0, None, 2048))
    return records


def test_scoring_all_passed_is_resolved() -> None:
    summary = GRADER.summarize(_records({}), PACK.weights())
    assert (summary["valid"], summary["status"], summary["score"], summary["resolved"]) == (
        True, "passed", 1.0, True)
    assert summary["dimensions"]["persistence"] == {
        "passed": 3, "total": 3, "assessed": 3, "weight": 0.15, "score": 1.0}


def test_scoring_memory_only_example() -> None:
    failing = dict.fromkeys([
        "restart-preserves-acknowledged-write", "restart-preserves-transaction",
        "restart-preserves-cas", "sigkill-after-acknowledgement", "sigkill-after-atomic-batch",
    ], "failed")
    summary = GRADER.summarize(_records(failing), PACK.weights())
    assert summary["score"] == 0.78333333
    assert (summary["valid"], summary["status"], summary["resolved"]) == (True, "failed", False)
    assert summary["dimensions"]["persistence"]["score"] == 0.0
    assert summary["dimensions"]["crash_recovery"]["passed"] == 1


def test_scoring_delete_noop_example_with_agent_errors_counting_as_failures() -> None:
    failing = {"read-write-delete": "failed", "seeded-state-machine": "agent_error",
               "commit-batch": "failed", "restart-preserves-acknowledged-write": "failed",
               "sigkill-after-delete": "agent_error"}
    summary = GRADER.summarize(_records(failing), PACK.weights())
    assert summary["score"] == 0.65
    assert summary["valid"] is True


def test_scoring_pools_over_seeds() -> None:
    records = _records({}, seeds=(17, 41))
    records[7] = _records({"cas-type-sensitivity": "failed"})[7]
    summary = GRADER.summarize(records, PACK.weights())
    assert summary["dimensions"]["compare_swap"] == {
        "passed": 3, "total": 4, "assessed": 4, "weight": 0.15, "score": 0.75}
    assert summary["score"] == round(1 - 0.15 * 0.25, 8)


def test_one_environment_error_invalidates_the_evaluation() -> None:
    records = _records({"commit-batch": "environment_error", "read-write-delete": "failed"})
    assert records[4]["checks"] == {"transactions": None}
    assert records[0]["checks"] == {"basic": False}
    summary = GRADER.summarize(records, PACK.weights())
    assert (summary["valid"], summary["status"], summary["score"], summary["resolved"]) == (
        False, "environment_error", None, False)
    assert summary["dimensions"]["transactions"] == {
        "passed": 1, "total": 2, "assessed": 1, "weight": 0.20, "score": 1.0}


def test_case_record_fields() -> None:
    case = GRADER.generate_cases(17)[0]
    record = GRADER.CaseOutcome(case, status="failed", checks_completed=2,
                                error="boom").record(1.23456789, "ab" * 32, 2048)
    assert list(record) == ["seed", "case_id", "dimension", "checks", "passed", "status",
                            "checks_completed", "duration_seconds", "transcript_sha256",
                            "error", "processes", "recording_sha256"]
    assert record["duration_seconds"] == 1.234568
    assert record["passed"] is False
    assert record["checks"] == {"basic": False}


# -- seeds, fingerprints -----------------------------------------------------------------------


def test_seed_validation() -> None:
    assert validate_seeds([17, 41]) == [17, 41]
    with pytest.raises(UsageError, match="do not repeat seeds"):
        validate_seeds([17, 17])
    with pytest.raises(UsageError):
        validate_seeds([True])
    with pytest.raises(UsageError):
        validate_seeds([])
    with pytest.raises(UsageError):
        validate_seeds([1.0])


def test_grader_fingerprint_is_a_sha256_over_the_grading_sources() -> None:
    digest = grader_sha256(PACK)
    assert len(digest) == 64 and digest == digest.lower()
    assert int(digest, 16) >= 0
    assert grader_sha256(PACK) == digest


# -- workspaces --------------------------------------------------------------------------------


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_python_starter_workspace(tmp_path: Path) -> None:
    written = materialize_workspace("durable-kv", "python", reference=False, fault=None,
                                    dest=tmp_path / "ws")
    assert written == ["TASK.md", "main.py"]
    tree = _tree(tmp_path / "ws")
    assert tree["TASK.md"] == PACK.contract.read_bytes()
    assert b"invalid_request" in tree["main.py"]
    assert oct((tmp_path / "ws" / "main.py").stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in tmp_path.iterdir()] == ["ws"]  # no staging folder left behind


def test_javascript_reference_workspace(tmp_path: Path) -> None:
    written = materialize_workspace("durable-kv", "javascript", reference=True, fault=None,
                                    dest=tmp_path / "ws")
    assert written == ["RUNTIME.md", "TASK.md", "evalarc.toml", "main.js"]
    manifest = (tmp_path / "ws" / "evalarc.toml").read_text()
    assert manifest.strip() == 'command = ["node", "main.js", "{state}/store.json"]'


def test_audit_workspace_holds_only_the_program(tmp_path: Path) -> None:
    written = materialize_workspace("durable-kv", "python", reference=True, fault=None,
                                    dest=tmp_path / "ws", contract=False)
    assert written == ["main.py"]


@pytest.mark.parametrize("language", ["python", "javascript"])
@pytest.mark.parametrize("fault", [fault.name for fault in PACK.faults])
def test_fault_variant_differs_from_the_reference_by_one_line(
        tmp_path: Path, language: str, fault: str) -> None:
    materialize_workspace("durable-kv", language, reference=True, fault=None,
                          dest=tmp_path / "ref", contract=False)
    materialize_workspace("durable-kv", language, reference=True, fault=fault,
                          dest=tmp_path / "mutant", contract=False)
    reference, mutant = _tree(tmp_path / "ref"), _tree(tmp_path / "mutant")
    assert set(reference) == set(mutant)
    edit = PACK.fault(fault).edits[language]
    changed = [name for name in reference if reference[name] != mutant[name]]
    assert changed == [edit.file]
    before = reference[edit.file].decode().splitlines()
    after = mutant[edit.file].decode().splitlines()
    differing = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(differing) == 1
    assert edit.anchor in differing[0][0] and edit.replacement in differing[0][1]


def test_existing_destination_is_refused_untouched(tmp_path: Path) -> None:
    dest = tmp_path / "ws"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with pytest.raises(OutputError, match="already exists"):
        materialize_workspace("durable-kv", "python", reference=False, fault=None, dest=dest)
    assert _tree(dest) == {"keep.txt": b"mine"}
    dangling = tmp_path / "link"
    os.symlink(tmp_path / "nowhere", dangling)
    with pytest.raises(OutputError, match="already exists"):
        materialize_workspace("durable-kv", "python", reference=False, fault=None, dest=dangling)
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"language": "cobol", "reference": False, "fault": None}, "no language"),
    ({"language": "python", "reference": False, "fault": "memory-only"}, "reference"),
    ({"language": "python", "reference": True, "fault": "no-such-fault"}, "declares no fault"),
])
def test_bad_requests_create_nothing(tmp_path: Path, kwargs: dict[str, Any],
                                     message: str) -> None:
    with pytest.raises(UsageError, match=message):
        materialize_workspace("durable-kv", dest=tmp_path / "ws", **kwargs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("content", "count"), [
    (b"FLAG = True\nFLAG = True\n", 2), (b"FLAG = False\n", 0)])
def test_anchor_must_occur_exactly_once(content: bytes, count: int) -> None:
    fault = dataclasses.replace(PACK.faults[0], edits={
        "python": FaultEdit("main.py", "FLAG = True", "FLAG = False")})
    files = {"main.py": content}
    with pytest.raises(InputError, match=f"occurs {count} times"):
        _apply_fault(fault, PACK.language("python"), files)
    assert files == {"main.py": content}
