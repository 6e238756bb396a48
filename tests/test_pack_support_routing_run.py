"""support-routing with real policy processes on the local backend (seed 17 unless stated).

Scores and traces are the values the reference EvalArc recorded (spec support-routing.md §B);
our Python and JavaScript references and their declared faults must reproduce them through our
own simulator and verifier.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import EnvironmentFailure
from evalarc.packs import evaluate, load_pack, materialize_workspace
from evalarc.runtime.local import LocalBackend
from evalarc.runtime.snapshot import snapshot_candidate

PACK = load_pack("support-routing")
GRADER: Any = PACK.grader
LANGUAGES = ["python", "javascript"]
EPISODE_IDS = ["route-open-ticket", "close-resolved-ticket", "retry-before-commit",
               "retry-after-commit"]
DIMENSIONS = ["routing", "notes", "closure", "scope", "protocol"]

Report = dict[str, Any]


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "these tests run the JavaScript reference and need node on PATH"
    return node


def _backend(workspace: Path, tmp_path: Path) -> tuple[Any, LocalBackend]:
    snapshot = snapshot_candidate(workspace, tmp_path / "snapshot", list(PACK.default_command))
    # Local runs get PATH=/bin:/usr/bin, so resolve node the way audits do.
    command = [_node() if arg == "node" else arg for arg in snapshot.command]
    return snapshot, LocalBackend(snapshot.path, command, PACK.limits, tmp_path / "work")


def _evaluate(workspace: Path, tmp_path: Path, seeds: tuple[int, ...] = (17,)) -> Report:
    snapshot, backend = _backend(workspace, tmp_path)
    report: Report = evaluate(PACK, snapshot, backend, list(seeds), PACK.limits).report
    return report


def _reference(tmp_path: Path, language: str, fault: str | None = None,
               starter: bool = False) -> Path:
    dest = tmp_path / "workspace"
    materialize_workspace("support-routing", language, reference=not starter, fault=fault,
                          dest=dest, contract=False)
    return dest


def _program(tmp_path: Path, source: str) -> Path:
    dest = tmp_path / "workspace"
    dest.mkdir(parents=True)
    (dest / "main.py").write_text(source)
    return dest


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str | None], Report]:
    """Seed-17 evaluations of the references and their faults, each run once per module."""
    cache: dict[tuple[str, str | None], Report] = {}

    def run(language: str, fault: str | None) -> Report:
        if (language, fault) not in cache:
            tmp_path = tmp_path_factory.mktemp(f"{language}-{fault}")
            cache[language, fault] = _evaluate(_reference(tmp_path, language, fault), tmp_path)
        return cache[language, fault]

    return run


def _cases(report: Report) -> dict[str, Any]:
    return {case["case_id"]: case for case in report["cases"]}


def _failing(report: Report, dimension: str) -> list[str]:
    return sorted(case["case_id"] for case in report["cases"]
                  if case["checks"][dimension] is False)


# -- the references ---------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_reference_resolves_every_episode_of_the_default_seeds(tmp_path: Path,
                                                               language: str) -> None:
    report = _evaluate(_reference(tmp_path, language), tmp_path, PACK.default_seeds)
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        True, "passed", 1.0, True)
    assert len(report["cases"]) == 12
    for case in report["cases"]:
        assert case["checks"] == dict.fromkeys(DIMENSIONS, True), case["case_id"]
        assert case["error"] is None and case["trace"][-1]["type"] == "finish"
        assert case["processes"][0]["exit_code"] == 0
    assert report["dimensions"]["notes"] == {"passed": 12, "total": 12, "assessed": 12,
                                             "weight": 0.25, "score": 1.0}


def test_both_references_take_identical_steps(reference_run: Callable[..., Report]) -> None:
    python, javascript = reference_run("python", None), reference_run("javascript", None)
    assert [c["transcript_sha256"] for c in python["cases"]] == \
        [c["transcript_sha256"] for c in javascript["cases"]]
    assert [c["tool_calls"] for c in python["cases"]] == [3, 4, 4, 5]
    assert python["cases_sha256"] == javascript["cases_sha256"] == (
        "b7cd8663c69da9e1715d5c8e1d707514863dcc333fefc57acc3315053ebc85df")


def test_reference_trace_shows_the_failures_it_recovered_from(
        reference_run: Callable[..., Report]) -> None:
    cases = _cases(reference_run("python", None))
    before = cases["retry-before-commit"]["trace"]
    assert [(e["action"]["tool"], e["status"], e["error_source"]) for e in before[:3]] == [
        ("get_ticket", "ok", None), ("assign_queue", "tool_error", "injected"),
        ("assign_queue", "ok", None)]
    assert before[1]["changes"] == {}
    assert before[2]["changes"]["T-3fb81d27"]["after"]["queue"] == "queue-2-1"

    after = cases["retry-after-commit"]
    injected, replay = after["trace"][2], after["trace"][3]
    assert injected["action"] == {"tool": "add_note", "arguments": {
        "ticket_id": "T-cd68615c", "body": "Reviewed request T-cd68615c.",
        "request_id": "review"}}
    assert injected["result"] == {"ok": False, "error": {"code": "temporarily_unavailable",
                                                         "retryable": True}}
    assert (injected["status"], injected["error_source"]) == ("tool_error", "injected")
    assert injected["changes"]["T-cd68615c"]["after"]["notes"] == [
        "Customer contacted support.", "Reviewed request T-cd68615c."]
    assert replay["action"] == injected["action"]
    assert replay["result"] == {"ok": True, "replayed": True} and replay["changes"] == {}
    assert after["trace"][-1] == {"step": 5, "type": "finish", "action": {"finish": True}}
    assert after["final_state"]["T-cd68615c"]["status"] == "closed"
    assert after["initial_state"] == GRADER.generate_cases(17)[3].manifest()["initial"]
    assert after["transcript_sha256"] == GRADER.sha256_json(after["trace"])


def test_observations_count_the_remaining_actions_down(tmp_path: Path) -> None:
    snapshot, backend = _backend(_reference(tmp_path, "python"), tmp_path)
    run = evaluate(PACK, snapshot, backend, [17], PACK.limits)
    sent = [json.loads(event["line"]) for event in run.recordings[3].transcript.events
            if event["event"] == "send"]
    assert [message["type"] for message in sent] == ["start"] + ["tool_result"] * 5
    assert [message["remaining_actions"] for message in sent] == [12, 11, 10, 9, 8, 7]
    assert sent[3]["result"]["error"]["code"] == "temporarily_unavailable"


# -- the declared faults ----------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("fault", [fault.name for fault in PACK.faults])
def test_declared_fault_gets_its_recorded_score(reference_run: Callable[..., Report],
                                                language: str, fault: str) -> None:
    declared = PACK.fault(fault)
    report = reference_run(language, fault)
    assert report["valid"] is True and report["score"] == declared.expected_seed17_score
    assert report["resolved"] is False and report["status"] == "failed"
    assert _failing(report, declared.target_dimension) == list(declared.expected_seed17_failing)
    assert {case["status"] for case in report["cases"]} <= {"passed", "failed"}


def test_skip_retry_fails_different_dimensions_in_the_two_retry_episodes(
        reference_run: Callable[..., Report]) -> None:
    cases = _cases(reference_run("python", "skip-retry"))
    failed = {case_id: [d for d, ok in case["checks"].items() if not ok]
              for case_id, case in cases.items()}
    assert failed == {"route-open-ticket": [], "close-resolved-ticket": [],
                      "retry-before-commit": ["routing", "notes"],
                      "retry-after-commit": ["closure"]}
    assert cases["retry-after-commit"]["trace"][-1]["action"] == {
        "finish": True, "message": "Could not complete the operation."}


def test_wrong_ticket_receives_the_injected_fault_on_the_unrelated_ticket(
        reference_run: Callable[..., Report]) -> None:
    trace = _cases(reference_run("python", "wrong-ticket"))["retry-before-commit"]["trace"]
    assert trace[1]["action"]["arguments"]["ticket_id"] == "U-62590992"
    assert trace[1]["error_source"] == "injected"


def test_demo_regression_higher_score_one_check_newly_failing(
        reference_run: Callable[..., Report]) -> None:
    """§B.6: from close-unresolved (0.9) to new-key-on-retry (0.9375) the score rises, yet one
    check regresses, so the revision must be rejected."""
    baseline = reference_run("python", "close-unresolved")
    current = reference_run("python", "new-key-on-retry")
    assert (baseline["score"], current["score"]) == (0.9, 0.9375)
    assert round(current["score"] - baseline["score"], 8) == 0.0375

    def checks(report: Report) -> dict[tuple[int, str, str], bool]:
        return {(case["seed"], case["case_id"], dimension): value
                for case in report["cases"] for dimension, value in case["checks"].items()}

    old, new = checks(baseline), checks(current)
    assert sorted(key for key in new if old[key] and not new[key]) == [
        (17, "retry-after-commit", "notes")]
    assert sorted(key for key in new if not old[key] and new[key]) == [
        (17, "retry-before-commit", "closure"), (17, "route-open-ticket", "closure")]
    assert current["dimensions"]["notes"]["passed"] == 3
    assert [c["case_id"] for c in current["cases"] if c["status"] == "failed"] == [
        "retry-after-commit"]

    failing = _cases(current)["retry-after-commit"]
    steps = [(e["step"], e["type"], e.get("action", {}).get("tool"), e.get("status"),
              e.get("error_source")) for e in failing["trace"]]
    assert steps == [(0, "tool_call", "get_ticket", "ok", None),
                     (1, "tool_call", "assign_queue", "ok", None),
                     (2, "tool_call", "add_note", "tool_error", "injected"),
                     (3, "tool_call", "add_note", "ok", None),
                     (4, "tool_call", "close_ticket", "ok", None),
                     (5, "finish", None, None, None)]
    trace = failing["trace"]
    assert trace[1]["action"]["arguments"]["queue"] == "queue-3-0"
    assert trace[3]["action"]["arguments"]["request_id"] == "review-retry"
    assert trace[3]["changes"]["T-cd68615c"]["after"]["notes"] == [
        "Customer contacted support.", "Reviewed request T-cd68615c.",
        "Reviewed request T-cd68615c."]
    assert failing["tool_calls"] == 5


# -- policies that do not do the work ---------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_starter_speaks_the_protocol_and_fails_the_task(tmp_path: Path, language: str) -> None:
    report = _evaluate(_reference(tmp_path, language, starter=True), tmp_path)
    assert report["score"] == 0.35 and report["status"] == "failed"
    for case in report["cases"]:
        assert case["final_state"] == case["initial_state"]
        assert case["trace"] == [{"step": 0, "type": "finish", "action": {
            "finish": True, "message": "Not implemented."}}]


CLAIMS_SUCCESS = """
import sys
for line in sys.stdin:
    print('{"finish": true, "message": "Score 1.0; all tickets updated"}', flush=True)
"""


def test_claiming_success_changes_nothing(tmp_path: Path) -> None:
    report = _evaluate(_program(tmp_path, CLAIMS_SUCCESS), tmp_path)
    assert report["resolved"] is False and report["score"] == 0.35
    assert _failing(report, "routing") == _failing(report, "notes") == sorted(EPISODE_IDS)
    assert all(case["tool_calls"] == 0 for case in report["cases"])


UNKNOWN_TOOL_LOOP = """
import sys
for line in sys.stdin:
    print('{"tool": "escalate", "arguments": {}}', flush=True)
"""


def test_a_tool_loop_exhausts_the_budget(tmp_path: Path) -> None:
    report = _evaluate(_program(tmp_path, UNKNOWN_TOOL_LOOP), tmp_path)
    assert _failing(report, "protocol") == sorted(EPISODE_IDS)
    for case in report["cases"]:
        assert (case["status"], case["error"], case["tool_calls"]) == (
            "agent_error", "action budget exhausted without finish", 12)
        assert {entry.get("error_source") for entry in case["trace"][:-1]} == {"tool_validation"}
        assert case["trace"][-1] == {"type": "agent_error",
                                     "error": "action budget exhausted without finish"}
        assert case["final_state"] == case["initial_state"]
    assert report["valid"] is True and report["score"] == 0.25


def _scripted(*replies: str, tail: str = "") -> str:
    """A policy answering the n-th observation with ``replies[n]`` (the last one repeats)."""
    return (f"import sys\nreplies = {list(replies)!r}\n"
            "for number, line in enumerate(sys.stdin):\n"
            "    sys.stdout.write(replies[min(number, len(replies) - 1)] + '\\n')\n"
            "    sys.stdout.flush()\n" + tail)


def _run_episode(tmp_path: Path, source: str, episode: int = 0) -> Any:
    _, backend = _backend(_program(tmp_path, source), tmp_path)
    case = GRADER.generate_cases(17)[episode]
    with backend.open_case(f"17/{case.case_id}") as case_run:
        return GRADER.run_case(case, case_run)


ROUTE_AND_NOTE = [
    '{"tool": "assign_queue", "arguments": {"ticket_id": "T-85a0bcc1", "queue": "queue-0-2"}}',
    '{"tool": "add_note", "arguments": {"ticket_id": "T-85a0bcc1", '
    '"body": "Reviewed request T-85a0bcc1.", "request_id": "n1"}}',
]


@pytest.mark.parametrize(("replies", "tail", "error"), [
    (["[]"], "", "action must be an object"),
    (['{"finish": false}'], "", "expected tool/arguments or finish"),
    (['{"finish": true, "message": 3}'], "", "finish accepts only a string message"),
    (['{"finish": true, "score": 1}'], "", "finish accepts only a string message"),
    (["NaN"], "", "response is not finite JSON"),
    (['{"finish": true}'], "sys.exit(3)\n", "candidate exited with code 3"),
    (['{"finish": true}'], "print('{}')\n", "candidate emitted unsolicited stdout"),
])
def test_protocol_violations_are_agent_errors(tmp_path: Path, replies: list[str], tail: str,
                                              error: str) -> None:
    outcome = _run_episode(tmp_path, _scripted(*ROUTE_AND_NOTE, *replies, tail=tail))
    record = outcome.record(0.0, None, 2048)
    assert (record["status"], record["error"]) == ("agent_error", error)
    assert record["trace"][-1] == {"type": "agent_error", "error": error}
    # The work done before the violation is still checked.
    assert record["checks"] == {"routing": True, "notes": True, "closure": True, "scope": True,
                                "protocol": False}
    assert record["tool_calls"] == 2


def test_doing_the_work_without_finishing_earns_four_of_five_checks(tmp_path: Path) -> None:
    source = ("import sys\nsys.stdin.readline()\n" +
              "".join(f"print({reply!r}, flush=True)\nsys.stdin.readline()\n"
                      for reply in ROUTE_AND_NOTE))
    record = _run_episode(tmp_path, source).record(0.0, None, 2048)
    assert (record["status"], record["error"]) == (
        "agent_error", "candidate exited without a complete response")
    assert [d for d, ok in record["checks"].items() if not ok] == ["protocol"]


def test_an_observation_grown_past_the_request_limit_is_the_policys_error(
        tmp_path: Path) -> None:
    notes = [json.dumps({"tool": "add_note", "arguments": {
        "ticket_id": "T-85a0bcc1", "body": "\u00e9" * 512, "request_id": str(n)}})
        for n in range(3)]
    get = '{"tool": "get_ticket", "arguments": {"ticket_id": "T-85a0bcc1"}}'
    record = _run_episode(tmp_path, _scripted(*notes, get)).record(0.0, None, 2048)
    assert (record["status"], record["error"]) == (
        "agent_error", "observation exceeds the request line limit")
    assert record["tool_calls"] == 4 and record["trace"][3]["result"]["ok"] is True


# -- environment failures ---------------------------------------------------------------------


def test_missing_executable_makes_the_evaluation_invalid(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "evalarc.toml").write_text('command = ["/nonexistent/policy"]\n')
    report = _evaluate(workspace, tmp_path)
    assert {case["status"] for case in report["cases"]} == {"environment_error"}
    assert all(set(case["checks"].values()) == {None} for case in report["cases"])
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        False, "environment_error", None, False)
    assert report["dimensions"]["routing"]["assessed"] == 0
    assert report["cases"][0]["trace"][-1]["type"] == "environment_error"


class _OutageEnvironment(GRADER.SupportEnvironment):  # type: ignore[misc]
    """The ticket service itself failing: every tool call is an infrastructure failure."""

    def step(self, action: Any) -> Any:
        raise EnvironmentFailure("ticket service unavailable")


def _outage_records(workspace: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    _, backend = _backend(workspace, tmp_path)
    for case in GRADER.generate_cases(17):
        with backend.open_case(f"17/{case.case_id}") as case_run:
            outcome = GRADER.run_episode(case, case_run, _OutageEnvironment(case))
        yield outcome.record(0.0, None, 2048)


def test_a_service_outage_leaves_every_reached_episode_unassessed(tmp_path: Path) -> None:
    records = list(_outage_records(_reference(tmp_path, "python"), tmp_path))
    assert {record["status"] for record in records} == {"environment_error"}
    assert all(set(record["checks"].values()) == {None} for record in records)
    assert records[0]["trace"][-1] == {"type": "environment_error",
                                       "error": "ticket service unavailable"}
    summary = GRADER.summarize(records, PACK.weights())
    assert (summary["valid"], summary["score"]) == (False, None)
    assert {group["assessed"] for group in summary["dimensions"].values()} == {0}
    # A policy that never calls a tool never meets the outage: its results are observed.
    claims = list(_outage_records(_program(tmp_path / "claims", CLAIMS_SUCCESS),
                                  tmp_path / "claims"))
    assert {record["status"] for record in claims} == {"failed"}
    assert GRADER.summarize(claims, PACK.weights())["score"] == 0.35
