"""The support-routing pack without running candidates: manifest, seeded episodes, the ticket
simulator (the local step interface), the independent verifier, action parsing and scoring.
Vectors come from the reference EvalArc's recorded evaluations (spec support-routing.md §B)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import sha256_json
from evalarc.packs import list_packs, load_pack, materialize_workspace
from evalarc.runtime.protocol import AgentFault

PACK = load_pack("support-routing")
GRADER: Any = PACK.grader  # the module itself, for its task-specific helpers
SEED17_CASES_SHA256 = "b7cd8663c69da9e1715d5c8e1d707514863dcc333fefc57acc3315053ebc85df"
ALL_EPISODES = ["close-resolved-ticket", "retry-after-commit", "retry-before-commit",
                "route-open-ticket"]
OK = {"ok": True}


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": name, "arguments": arguments}


def error(code: str, retryable: bool = False) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "retryable": retryable}}


def env(episode: int | str, seed: int = 17) -> Any:
    return GRADER.SupportEnvironment.reset(seed, episode)


def solve(environment: Any) -> list[Any]:
    """What a correct policy does, straight through the step interface; returns the results."""
    case = environment.case
    ticket = environment.step(tool("get_ticket", ticket_id=case.target)).result["ticket"]
    actions = [
        tool("assign_queue", ticket_id=case.target, queue=case.routing_rules[ticket["category"]]),
        tool("add_note", ticket_id=case.target, body=case.note, request_id="r-1"),
    ]
    if ticket["resolved"]:
        actions.append(tool("close_ticket", ticket_id=case.target))
    results = []
    for action in actions:
        outcome = environment.step(action)
        if outcome.error_source == "injected":  # one transient failure: retry it identically
            outcome = environment.step(action)
        assert outcome.result.get("ok") is True, outcome
        results.append(outcome)
    return results


# -- pack manifest -----------------------------------------------------------------------------


def test_manifest_identity_dimensions_and_defaults() -> None:
    assert (PACK.id, PACK.version, PACK.domain) == ("support-routing", "0.1.0", "business-tools")
    assert PACK.description == "route and resolve simulated support tickets"
    assert PACK.task_json()["split"] == "public-development"
    assert PACK.weights() == [("routing", 0.30), ("notes", 0.25), ("closure", 0.20),
                              ("scope", 0.15), ("protocol", 0.10)]
    assert PACK.default_command == ("{python}", "-I", "-B", "main.py")
    assert PACK.default_seeds == (17, 41, 97)
    assert PACK.limits.request_limit_bytes == 8192
    assert (PACK.limits.response_timeout, PACK.limits.case_timeout) == (10.0, 60.0)
    assert "support-routing" in [pack.id for pack in list_packs()]
    assert tuple(name for name, _ in PACK.weights()) == GRADER.DIMENSIONS


def test_declared_faults_match_the_recorded_audit() -> None:
    declared = [(f.name, f.target_dimension, f.expected_seed17_score,
                 list(f.expected_seed17_failing)) for f in PACK.faults]
    assert declared == [
        ("claim-without-actions", "routing", 0.35, ALL_EPISODES),
        ("wrong-ticket", "scope", 0.20, ALL_EPISODES),
        ("wrong-queue", "routing", 0.70, ALL_EPISODES),
        ("duplicate-note", "notes", 0.75, ALL_EPISODES),
        ("close-unresolved", "closure", 0.90, ["retry-before-commit", "route-open-ticket"]),
        ("skip-retry", "notes", 0.8125, ["retry-before-commit"]),
        ("new-key-on-retry", "notes", 0.9375, ["retry-after-commit"]),
    ]
    single_case = [f.name for f in PACK.faults if len(f.expected_seed17_failing) == 1]
    assert single_case == ["skip-retry", "new-key-on-retry"]


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_each_fault_flips_exactly_one_switch_of_the_reference(tmp_path: Path,
                                                              language: str) -> None:
    entry = PACK.language(language).entry
    materialize_workspace("support-routing", language, reference=True, fault=None,
                          dest=tmp_path / "reference", contract=False)
    reference = (tmp_path / "reference" / entry).read_text().splitlines()
    for fault in PACK.faults:
        dest = tmp_path / fault.name
        materialize_workspace("support-routing", language, reference=True, fault=fault.name,
                              dest=dest, contract=False)
        faulty = (dest / entry).read_text().splitlines()
        changed = [(a, b) for a, b in zip(reference, faulty, strict=True) if a != b]
        edit = fault.edits[language]
        assert len(changed) == 1 and edit.anchor in changed[0][0], fault.name
        assert edit.replacement in changed[0][1]


def test_workspaces_hand_an_agent_the_contract(tmp_path: Path) -> None:
    written = materialize_workspace("support-routing", "javascript", reference=False,
                                    fault=None, dest=tmp_path / "ws")
    assert written == ["RUNTIME.md", "TASK.md", "evalarc.toml", "main.js"]
    assert (tmp_path / "ws" / "TASK.md").read_bytes() == PACK.contract.read_bytes()


# -- seeded episodes ---------------------------------------------------------------------------


def test_seed17_episodes_match_the_recorded_vectors() -> None:
    cases = GRADER.generate_cases(17)
    vectors = [(c.case_id, c.target, c.unrelated, c.initial[c.target]["category"],
                c.routing_rules[c.initial[c.target]["category"]],
                c.initial[c.unrelated]["category"], c.fault) for c in cases]
    assert vectors == [
        ("route-open-ticket", "T-85a0bcc1", "U-6a06e9ab", "technical", "queue-0-2", "billing",
         None),
        ("close-resolved-ticket", "T-c41f9dfd", "U-b48438b5", "billing", "queue-1-0", "billing",
         None),
        ("retry-before-commit", "T-3fb81d27", "U-62590992", "technical", "queue-2-1", "account",
         "assign_queue"),
        ("retry-after-commit", "T-cd68615c", "U-51436d1f", "billing", "queue-3-0", "account",
         "add_note"),
    ]
    assert GRADER.cases_sha256(cases) == SEED17_CASES_SHA256
    assert [c.initial[c.target]["resolved"] for c in cases] == [False, True, False, True]


def test_episode_state_shape_and_rules() -> None:
    for number, case in enumerate(GRADER.generate_cases(41)):
        assert list(case.initial) == [case.target, case.unrelated]
        assert case.target.startswith("T-") and len(case.target) == 10
        assert case.unrelated.startswith("U-") and len(case.unrelated) == 10
        assert list(case.routing_rules) == ["billing", "technical", "account"]
        assert sorted(case.routing_rules.values()) == [f"queue-{number}-{i}" for i in range(3)]
        assert case.note == f"Reviewed request {case.target}."
        assert case.initial[case.target]["notes"] == ["Customer contacted support."]
        assert case.initial[case.unrelated] == {
            "category": case.initial[case.unrelated]["category"], "queue": "inbox",
            "resolved": False, "status": "open",
            "notes": ["Unrelated request; preserve this ticket."]}
        manifest = case.manifest()
        assert list(manifest) == ["seed", "id", "target", "initial", "routing_rules", "note",
                                  "fault"]


def test_generation_is_deterministic_per_seed() -> None:
    assert GRADER.cases_sha256(GRADER.generate_cases(97)) == \
        GRADER.cases_sha256(GRADER.generate_cases(97))
    assert GRADER.cases_sha256(GRADER.generate_cases(41)) != SEED17_CASES_SHA256
    assert len(GRADER.generate_cases(0)) == 4


def test_reset_finds_episodes_by_index_or_id() -> None:
    assert env(3).case.case_id == "retry-after-commit"
    assert env("retry-before-commit").case.target == "T-3fb81d27"
    for bad in (4, -1, True, "no-such-episode"):
        with pytest.raises(ValueError, match="no episode"):
            GRADER.find_case(17, bad)


# -- the simulator -----------------------------------------------------------------------------


def test_start_observation() -> None:
    observation = env(0).observe()
    assert observation["type"] == "start"
    assert observation["tools"] == ["get_ticket", "assign_queue", "add_note", "close_ticket"]
    assert observation["remaining_actions"] == 12
    task = observation["task"]
    assert task["ticket_id"] == "T-85a0bcc1"
    assert task["ticket_ids"] == ["T-85a0bcc1", "U-6a06e9ab"]
    assert task["routing_rules"]["technical"] == "queue-0-2"
    assert task["note"] == "Reviewed request T-85a0bcc1."
    assert "T-85a0bcc1" in task["instruction"]


def test_returned_values_are_detached_from_host_state() -> None:
    environment = env(0)
    environment.observe()["task"]["routing_rules"]["technical"] = "queue-0-0"
    ticket = environment.step(tool("get_ticket", ticket_id="T-85a0bcc1")).result["ticket"]
    ticket["notes"].append("smuggled")
    ticket["status"] = "closed"
    environment.state()["U-6a06e9ab"]["queue"] = "elsewhere"
    assert environment.state() == copy.deepcopy(dict(environment.case.initial))
    assert environment.observe()["task"]["routing_rules"]["technical"] == "queue-0-2"
    # The environment never writes through to the case it was built from.
    solve(environment)
    assert GRADER.generate_cases(17)[0].manifest() == environment.case.manifest()


def test_a_correct_workflow_passes_every_check() -> None:
    for episode in range(4):
        environment = env(episode)
        solve(environment)
        assert environment.verify(True) == dict.fromkeys(GRADER.DIMENSIONS, True)
        assert environment.verify(False)["protocol"] is False


@pytest.mark.parametrize(("action", "code"), [
    (tool("delete_ticket", ticket_id="T-85a0bcc1"), "invalid_arguments"),
    ({"tool": ["get_ticket"], "arguments": {"ticket_id": "T-85a0bcc1"}}, "invalid_arguments"),
    ({"tool": None, "arguments": {}}, "invalid_arguments"),
    ({"tool": "get_ticket", "arguments": ["T-85a0bcc1"]}, "invalid_arguments"),
    (tool("get_ticket"), "invalid_arguments"),
    (tool("get_ticket", ticket_id="T-85a0bcc1", extra="x"), "invalid_arguments"),
    (tool("get_ticket", ticket_id=5), "invalid_arguments"),
    (tool("close_ticket", ticket_id="T-" + "0" * 511), "invalid_arguments"),
    (tool("add_note", ticket_id="T-85a0bcc1", body="x" * 513, request_id="a"),
     "invalid_arguments"),
    (tool("add_note", ticket_id="nope", body="x" * 513, request_id="a"), "invalid_arguments"),
    (tool("close_ticket", ticket_id="T-" + "0" * 510), "ticket_not_found"),
    (tool("assign_queue", ticket_id="t-85a0bcc1", queue="inbox"), "ticket_not_found"),
    (tool("assign_queue", ticket_id="T-85a0bcc1", queue="inbox"), "unknown_queue"),
    (tool("assign_queue", ticket_id="T-85a0bcc1", queue="queue-1-0"), "unknown_queue"),
    (tool("add_note", ticket_id="T-85a0bcc1", body="hi", request_id=""), "invalid_request_id"),
])
def test_validation_errors_in_order_change_nothing(action: dict[str, Any], code: str) -> None:
    environment = env(0)
    before = environment.state()
    outcome = environment.step(action)
    assert tuple(outcome) == (error(code), "tool_validation")
    assert outcome.status == "tool_error"
    assert environment.state() == before


def test_any_queue_of_the_rules_is_accepted_and_close_ignores_resolved() -> None:
    environment = env(0)
    assert tuple(environment.step(tool("assign_queue", ticket_id="U-6a06e9ab",
                                       queue="queue-0-0"))) == (OK, None)
    assert environment.step(tool("close_ticket", ticket_id="T-85a0bcc1")).result == OK
    assert environment.step(tool("close_ticket", ticket_id="T-85a0bcc1")).result == OK
    state = environment.state()
    assert state["U-6a06e9ab"]["queue"] == "queue-0-0"
    assert state["T-85a0bcc1"]["status"] == "closed"
    checks = environment.verify(True)
    assert (checks["scope"], checks["closure"], checks["routing"]) == (False, False, False)


def test_idempotency_receipts_are_keyed_by_ticket_and_request_id() -> None:
    environment = env(1)
    target, other = environment.case.target, environment.case.unrelated
    note = tool("add_note", ticket_id=target, body="first", request_id="k")
    assert tuple(environment.step(note)) == (OK, None)
    assert tuple(environment.step(note)) == ({"ok": True, "replayed": True}, None)
    conflict = tool("add_note", ticket_id=target, body="second", request_id="k")
    assert tuple(environment.step(conflict)) == (error("idempotency_conflict"),
                                                 "tool_validation")
    assert environment.step(tool("add_note", ticket_id=other, body="second",
                                 request_id="k")).result == OK
    state = environment.state()
    assert state[target]["notes"] == ["Customer contacted support.", "first"]
    assert state[other]["notes"][-1] == "second"


def test_injected_failure_before_commit_writes_nothing_and_fires_once() -> None:
    environment = env("retry-before-commit")
    target = environment.case.target
    # Validation failures do not consume the fault.
    environment.step(tool("assign_queue", ticket_id=target, queue="inbox"))
    assert environment.fault_used is False
    assign = tool("assign_queue", ticket_id=target, queue="queue-2-1")
    before = environment.state()
    assert tuple(environment.step(assign)) == (error("temporarily_unavailable", True),
                                               "injected")
    assert environment.state() == before and environment.fault_used is True
    assert tuple(environment.step(assign)) == (OK, None)
    assert tuple(environment.step(assign)) == (OK, None)
    assert environment.state()[target]["queue"] == "queue-2-1"


def test_injected_failure_after_commit_keeps_the_note_and_its_receipt() -> None:
    environment = env("retry-after-commit")
    target = environment.case.target
    note = tool("add_note", ticket_id=target, body=environment.case.note, request_id="review")
    outcome = environment.step(note)
    assert tuple(outcome) == (error("temporarily_unavailable", True), "injected")
    committed = ["Customer contacted support.", "Reviewed request T-cd68615c."]
    assert environment.state()[target]["notes"] == committed
    assert environment.step(note).result == {"ok": True, "replayed": True}
    assert environment.state()[target]["notes"] == committed
    # A new key is a new note: exactly the new-key-on-retry defect.
    environment.step(tool("add_note", ticket_id=target, body=environment.case.note,
                          request_id="review-retry"))
    assert environment.verify(True)["notes"] is False


def test_the_fault_fires_on_whichever_ticket_is_first_called() -> None:
    environment = env("retry-before-commit")
    outcome = environment.step(tool("assign_queue", ticket_id=environment.case.unrelated,
                                    queue="queue-2-0"))
    assert outcome.error_source == "injected"
    assert environment.step(tool("assign_queue", ticket_id=environment.case.target,
                                 queue="queue-2-1")).result == OK


def test_rejected_notes_do_not_consume_the_fault() -> None:
    environment = env("retry-after-commit")
    target = environment.case.target
    for rejected in (tool("add_note", ticket_id=target, body="a", request_id=""),
                     tool("add_note", ticket_id="T-00000000", body="a", request_id="x"),
                     tool("add_note", ticket_id=target, body="a")):
        assert environment.step(rejected).error_source == "tool_validation"
    assert environment.fault_used is False
    assert environment.step(tool("add_note", ticket_id=target, body="a",
                                 request_id="x")).error_source == "injected"
    # Episodes without a declared fault never inject one.
    environment = env("close-resolved-ticket")
    assert environment.step(tool("add_note", ticket_id=environment.case.target, body="a",
                                 request_id="x")).error_source is None
    assert environment.fault_used is False


def test_step_handles_only_tool_requests() -> None:
    for action in ({"finish": True}, {"tool": "get_ticket"}, {}):
        with pytest.raises(ValueError, match="tool request"):
            env(0).step(action)


def test_state_changes_name_only_changed_tickets() -> None:
    environment = env(0)
    before = environment.state()
    assert GRADER.state_changes(before, environment.state()) == {}
    environment.step(tool("assign_queue", ticket_id="T-85a0bcc1", queue="queue-0-2"))
    after = environment.state()
    changes = GRADER.state_changes(before, after)
    assert list(changes) == ["T-85a0bcc1"]
    assert changes["T-85a0bcc1"]["before"]["queue"] == "inbox"
    assert changes["T-85a0bcc1"]["after"] == after["T-85a0bcc1"]
    assert GRADER.state_changes({}, {"X": {"a": 1}}) == {"X": {"before": None,
                                                               "after": {"a": 1}}}


# -- the independent verifier -------------------------------------------------------------------


def solved_state(case: Any) -> dict[str, Any]:
    """A correct final state built by hand, without the simulator."""
    state = copy.deepcopy(dict(case.initial))
    target = state[case.target]
    target["queue"] = case.routing_rules[target["category"]]
    target["notes"].append(case.note)
    if target["resolved"]:
        target["status"] = "closed"
    return state


def test_verifier_reads_plain_final_state() -> None:
    for case in GRADER.generate_cases(97):
        assert GRADER.verify(case, solved_state(case), True) == dict.fromkeys(
            GRADER.DIMENSIONS, True)
        untouched = GRADER.verify(case, copy.deepcopy(dict(case.initial)), True)
        assert (untouched["routing"], untouched["notes"], untouched["scope"]) == (
            False, False, True)
        assert untouched["closure"] is (not case.initial[case.target]["resolved"])


@pytest.mark.parametrize(("edit", "failing"), [
    (lambda s, c: s[c.unrelated]["notes"].append("x"), ["scope"]),
    (lambda s, c: s[c.unrelated].update(status="closed"), ["scope"]),
    (lambda s, c: s.update({"T-00000000": {}}), ["scope"]),
    (lambda s, c: s.pop(c.unrelated), ["scope"]),
    (lambda s, c: s[c.target].update(category="account"), ["scope"]),
    (lambda s, c: s[c.target].update(resolved=1), ["scope"]),
    (lambda s, c: s[c.target]["notes"].append(c.note), ["notes"]),
    (lambda s, c: s[c.target]["notes"].reverse(), ["notes"]),
    (lambda s, c: s[c.target]["notes"].__setitem__(1, c.note.lower()), ["notes"]),
    (lambda s, c: s[c.target].update(status="open"), ["closure"]),
    (lambda s, c: s[c.target].update(queue="queue-1-1"), ["routing"]),
    (lambda s, c: s.pop(c.target), ["routing", "notes", "closure", "scope"]),
])
def test_verifier_catches_each_kind_of_damage(edit: Any, failing: list[str]) -> None:
    case = GRADER.generate_cases(17)[1]  # resolved target, billing -> queue-1-0
    state = solved_state(case)
    edit(state, case)
    checks = GRADER.verify(case, state, True)
    assert [name for name, passed in checks.items() if not passed] == failing


# -- the policy's side of the protocol ----------------------------------------------------------


@pytest.mark.parametrize(("action", "expected"), [
    ({"finish": True}, GRADER.Finish(None)),
    ({"finish": True, "message": "done"}, GRADER.Finish("done")),
    ({"tool": "x", "arguments": 3}, GRADER.ToolRequest({"tool": "x", "arguments": 3})),
])
def test_parse_action_accepts_finish_and_tool_requests(action: Any, expected: Any) -> None:
    assert GRADER.parse_action(action) == expected


@pytest.mark.parametrize(("action", "message"), [
    ([], "action must be an object"),
    ("finish", "action must be an object"),
    (None, "action must be an object"),
    ({"finish": True, "message": 3}, "finish accepts only a string message"),
    ({"finish": True, "message": None}, "finish accepts only a string message"),
    ({"finish": True, "score": 1.0}, "finish accepts only a string message"),
    ({"finish": True, "tool": "get_ticket", "arguments": {}},
     "finish accepts only a string message"),
    ({"finish": False}, "expected tool/arguments or finish"),
    ({"finish": 1}, "expected tool/arguments or finish"),
    ({"tool": "get_ticket"}, "expected tool/arguments or finish"),
    ({"tool": "get_ticket", "arguments": {}, "why": "x"}, "expected tool/arguments or finish"),
    ({}, "expected tool/arguments or finish"),
])
def test_parse_action_rejects_everything_else(action: Any, message: str) -> None:
    with pytest.raises(AgentFault) as raised:
        GRADER.parse_action(action)
    assert raised.value.message == message


# -- records and scoring ------------------------------------------------------------------------


def test_unassessed_episode_record() -> None:
    case = GRADER.generate_cases(17)[2]
    record = GRADER.unassessed_case(case, "docker is gone").record(0.5, None, 2048)
    assert record["checks"] == dict.fromkeys(GRADER.DIMENSIONS)
    assert (record["status"], record["passed"], record["error"]) == (
        "environment_error", False, "docker is gone")
    assert record["trace"] == [{"type": "environment_error", "error": "docker is gone"}]
    assert record["transcript_sha256"] == sha256_json(record["trace"])
    assert record["final_state"] == record["initial_state"] == case.manifest()["initial"]
    assert (record["tool_calls"], record["processes"]) == (0, [])


def record(checks: Mapping[str, bool | None], status: str) -> dict[str, Any]:
    return {"checks": checks, "status": status}


def test_one_failed_check_costs_its_weight_over_four() -> None:
    perfect = dict.fromkeys(GRADER.DIMENSIONS, True)
    records = [record(perfect, "passed") for _ in range(3)]
    records.append(record({**perfect, "notes": False}, "failed"))
    summary = GRADER.summarize(records, PACK.weights())
    assert summary["score"] == 0.9375 and summary["resolved"] is False
    assert summary["dimensions"]["notes"] == {"passed": 3, "total": 4, "assessed": 4,
                                              "weight": 0.25, "score": 0.75}
    records[3] = record({**perfect, "closure": False}, "failed")
    assert GRADER.summarize(records, PACK.weights())["score"] == 0.95
    records[3] = record(perfect, "passed")
    assert GRADER.summarize(records, PACK.weights())["status"] == "passed"


def test_an_unassessed_episode_voids_the_score() -> None:
    perfect = dict.fromkeys(GRADER.DIMENSIONS, True)
    records = [record(perfect, "passed"),
               record(dict.fromkeys(GRADER.DIMENSIONS), "environment_error")]
    summary = GRADER.summarize(records, PACK.weights())
    assert (summary["valid"], summary["status"], summary["score"], summary["resolved"]) == (
        False, "environment_error", None, False)
    assert summary["dimensions"]["routing"]["assessed"] == 1
    assert GRADER.summarize([], PACK.weights())["valid"] is False
