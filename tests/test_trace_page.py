"""Trace replay page models (evalarc/pages/trace.py) built from real replayed evaluations.

The evaluations are replays of the bundled Docker recordings (no Docker needed): the support
demo regression (new-key-on-retry) and the reference, the durable-kv commit-on-exit fault and a
robot-evidence-review fault. Synthetic records cover what the recordings do not contain
(validation errors, protocol faults, hostile text).
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalarc import packs
from evalarc.bundle import EvidenceFolder
from evalarc.errors import InputError
from evalarc.packs import EpisodeLabels, PackTraceView, materialize_workspace, pack_trace_view
from evalarc.pages.evaluation import build_evaluation_page, recording_reader
from evalarc.pages.render import render_page
from evalarc.pages.trace import (
    Episode,
    ReportReview,
    TranscriptView,
    build_episode,
    build_report_review,
    build_trace,
    build_transcript,
    parse_events,
)
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate


def replay_evaluation(root: Path, task: str, fault: str | None) -> Path:
    """A seed-17 evaluation folder of the reference (or one fault) replayed from recordings."""
    name = fault or "reference"
    workspace = root / "workspaces" / task / name
    workspace.parent.mkdir(parents=True, exist_ok=True)
    materialize_workspace(task, "python", reference=True, fault=fault, dest=workspace,
                          contract=False)
    folder = root / f"{task}-{name}"
    run_evaluate(workspace, folder,
                 EvaluateOptions(task=task, backend="replay", image=None, seeds=(17,)))
    return folder


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("trace-evaluations")
    return {
        "new-key-on-retry": replay_evaluation(root, "support-routing", "new-key-on-retry"),
        "support-reference": replay_evaluation(root, "support-routing", None),
        "commit-on-exit": replay_evaluation(root, "durable-kv", "commit-on-exit"),
        "assume-meters": replay_evaluation(root, "robot-evidence-review", "assume-meters"),
    }


def load(folder: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((folder / "evaluation.json").read_text("utf-8"))
    return report


def case_of(folder: Path, case_id: str) -> dict[str, Any]:
    return next(case for case in load(folder)["cases"] if case["case_id"] == case_id)


def events_of(folder: Path, case: dict[str, Any]) -> list[dict[str, Any]]:
    data = (folder / "recordings" / f"{case['recording_sha256']}.jsonl").read_bytes()
    events = parse_events(data)
    assert events is not None
    return events


SUPPORT_LABELS = pack_trace_view("support-routing").episode
assert SUPPORT_LABELS is not None


def episode(case: dict[str, Any]) -> Episode:
    built = build_episode(case, "case-x", SUPPORT_LABELS)
    assert built is not None
    return built


# --------------------------------------------------------------------------- support episodes


def test_new_key_on_retry_shows_the_committed_failure_and_the_duplicate_write(
        evaluations: dict[str, Path]) -> None:
    case = case_of(evaluations["new-key-on-retry"], "retry-after-commit")
    view = episode(case)
    assert [step.title.split(" · ")[0] for step in view.steps] == [
        "get_ticket", "assign_queue", "add_note", "add_note", "close_ticket", "finish"]
    assert view.summary == "5 tool calls, 1 injected error, 1 retry, finished."
    assert [(chip.name, chip.outcome) for chip in view.checks] == [
        ("routing", "pass"), ("notes", "fail"), ("closure", "pass"), ("scope", "pass"),
        ("protocol", "pass")]
    failed = view.steps[2]
    assert (failed.outcome, failed.tone) == ("injected error", "warn")
    assert failed.error == "temporarily_unavailable · retryable"
    assert failed.error_source.startswith("Injected by the scenario")
    assert failed.idempotency_key == "review"
    assert "committed before the failure" in failed.change_note
    assert [(c.subject, c.field, c.detail) for c in failed.changes] == [
        ("T-cd68615c", "notes", "+1 appended: Reviewed request T-cd68615c.")]
    retry = view.steps[3]
    assert retry.idempotency_key == "review-retry"
    assert retry.retry.startswith(
        'Retry of step 3 with a new idempotency key "review-retry" (step 3 sent "review")')
    assert "writes a second time" in retry.retry
    assert (retry.outcome, retry.tone) == ("ok · duplicate write", "bad")
    assert retry.changes[0].after.count("Reviewed request T-cd68615c.") == 2
    finish = view.steps[5]
    assert (finish.kind, finish.not_scored, finish.message) == ("finish", True, "none")
    assert not any(step.not_scored for step in view.steps[:5])
    changed = {(row.subject, row.field) for row in view.state if row.changed}
    assert changed == {("T-cd68615c", "queue"), ("T-cd68615c", "status"),
                       ("T-cd68615c", "notes")}
    assert {row.subject for row in view.state} == {"T-cd68615c", "U-51436d1f"}


def test_the_reference_retries_with_the_same_key_and_the_service_replays(
        evaluations: dict[str, Path]) -> None:
    view = episode(case_of(evaluations["support-reference"], "retry-after-commit"))
    retry = view.steps[3]
    assert retry.idempotency_key == "review"
    assert retry.retry.startswith('Retry of step 3 with the same idempotency key "review"')
    assert (retry.outcome, retry.tone) == ("replayed", "ok")
    assert retry.changes == []
    assert retry.change_note.startswith("No state change in this step: the service replayed")
    assert [check.outcome for check in view.checks] == ["pass"] * 5


def test_a_failure_before_the_write_changes_nothing(evaluations: dict[str, Path]) -> None:
    view = episode(case_of(evaluations["support-reference"], "retry-before-commit"))
    failed = next(step for step in view.steps if step.outcome == "injected error")
    assert failed.title.startswith("assign_queue")
    assert (failed.changes, failed.change_note) == ([], "No state change in this step.")
    retry = view.steps[failed.index + 1]
    assert retry.retry == f"Retry of step {failed.index + 1} (same tool on the same ticket)."
    assert retry.outcome == "ok" and retry.changes


def _support_case(trace: list[dict[str, Any]]) -> dict[str, Any]:
    ticket = {"category": "billing", "queue": "inbox", "resolved": False, "status": "open",
              "notes": ["n"]}
    return {"case_id": "route-open-ticket", "seed": 1, "status": "agent_error",
            "checks": {"routing": False, "protocol": False, "scope": None},
            "initial_state": {"T-1": ticket}, "final_state": {"T-1": ticket}, "trace": trace}


def test_validation_errors_protocol_faults_and_finish_messages() -> None:
    trace = [
        {"step": 0, "type": "tool_call",
         "action": {"tool": "assign_queue", "arguments": {"ticket_id": "T-1", "queue": 5}},
         "result": {"ok": False, "error": {"code": "invalid_arguments", "retryable": False}},
         "status": "tool_error", "error_source": "tool_validation", "changes": {}},
        {"step": 1, "type": "tool_call",
         "action": {"tool": "assign_queue", "arguments": {"ticket_id": "T-1", "queue": "q"}},
         "result": {"ok": True}, "status": "ok", "error_source": None, "changes": {}},
        {"step": 2, "type": "finish", "action": {"finish": True, "message": "Score 1.0"}},
        {"type": "agent_error", "error": "candidate exited with code 3"},
    ]
    view = episode(_support_case(trace))
    invalid = view.steps[0]
    assert (invalid.outcome, invalid.tone) == ("validation error", "bad")
    assert invalid.error == "invalid_arguments · not retryable"
    assert invalid.error_source == "Rejected by the tool's own validation."
    assert [(fact.label, fact.value) for fact in invalid.arguments] == [
        ("ticket_id", "T-1"), ("queue", "5")]
    # A non-retryable error is not retried: the next call is a fresh call.
    assert view.steps[1].retry == ""
    assert (view.steps[2].message, view.steps[2].not_scored) == ("“Score 1.0”", True)
    fault = view.steps[3]
    assert (fault.kind, fault.outcome, fault.message) == (
        "agent_error", "agent error", "candidate exited with code 3")
    assert view.summary == "2 tool calls, 1 validation error, finished."
    assert [chip.outcome for chip in view.checks] == ["fail", "fail", "unassessed"]


def test_a_record_without_a_trace_has_no_episode() -> None:
    assert build_episode({"case_id": "x", "trace": []}, "a", SUPPORT_LABELS) is None
    assert build_episode({"case_id": "x"}, "a", SUPPORT_LABELS) is None
    odd = episode(_support_case([{"type": "tool_call", "action": "not an object"}]))
    assert (odd.steps[0].kind, odd.steps[0].tone) == ("tool_call", "bad")


# --------------------------------------------------------------------------- transcripts


def test_durable_kv_transcript_shows_processes_restarts_kills_and_the_first_mismatch(
        evaluations: dict[str, Path]) -> None:
    folder = evaluations["commit-on-exit"]
    case = case_of(folder, "sigkill-after-delete")
    view = build_transcript(case, events_of(folder, case), "case-14", pack_trace_view("durable-kv"))
    assert view is not None
    assert [run.title for run in view.processes] == [
        "Process 1", "Process 2 · restart after EOF", "Process 3 · restart after a kill"]
    assert [run.ending for run in view.processes] == [
        "stdin closed (EOF); exit code 0",
        "killed with SIGKILL, as the case plans (a crash); exit code -9",
        "killed by the grader after the failure; exit code -9",
    ]
    outcomes = [(ex.number, ex.outcome) for run in view.processes for ex in run.exchanges]
    assert outcomes == [(1, "matched"), (2, "matched"), (3, "first mismatch")]
    assert view.processes[0].exchanges[0].request.startswith('{"op": "put", "key": "客户/')
    mismatch = view.mismatch
    assert mismatch is not None
    assert (mismatch.number, mismatch.process) == (3, 3)
    assert mismatch.expected == '{"ok": true, "found": false}'
    assert json.loads(mismatch.actual)["found"] is True
    assert mismatch.message.startswith("response mismatch at request 3")
    assert view.summary == ("3 processes, 2 restarts, 2 kills, 3 requests, 2 matched, "
                            "first failure at request 3.")


def test_an_oracle_that_disagrees_with_the_grader_is_not_shown(
        evaluations: dict[str, Path]) -> None:
    folder = evaluations["commit-on-exit"]
    case = case_of(folder, "sigkill-after-delete")

    def wrong(state: dict[str, Any], request: Any) -> Any:
        return {"ok": "something else entirely, not what the grader said"}

    view = build_transcript(case, events_of(folder, case), "a",
                            PackTraceView(expected_response=wrong))
    assert view is not None and view.mismatch is not None
    assert view.mismatch.expected == ""
    assert view.mismatch.message == case["error"]
    without = build_transcript(case, events_of(folder, case), "a")
    assert without is not None and without.mismatch is not None
    assert without.mismatch.expected == ""


def test_a_request_without_a_response_and_an_agent_fault() -> None:
    events = [
        {"event": "start", "session": 0, "t": 0.0, "argv": ["x"]},
        {"event": "send", "session": 0, "t": 0.1, "line": '{"op": "get", "key": "k"}'},
        {"event": "recv", "session": 0, "t": 0.2, "line": '{"ok": true, "found": false}'},
        {"event": "send", "session": 0, "t": 0.3, "line": '{"op": "put", "key": "k"}'},
        {"event": "fault", "session": 0, "t": 10.3, "kind": "agent",
         "message": "response timeout"},
        {"event": "kill", "session": 0, "t": 10.3},
        {"event": "exit", "session": 0, "t": 10.4, "code": -9},
        {"event": "stderr", "session": 0, "t": 10.4, "tail": "<b>boom</b>", "stdout_bytes": 1,
         "stderr_bytes": 11},
    ]
    case = {"status": "agent_error", "checks_completed": 1, "error": "response timeout",
            "checks": {"basic": False}}
    view = build_transcript(case, events, "a")
    assert view is not None
    run = view.processes[0]
    assert [(ex.outcome, ex.response) for ex in run.exchanges] == [
        ("matched", '{"ok": true, "found": false}'), ("no valid response", "(no response)")]
    assert run.ending == "agent fault: response timeout; exit code -9"
    assert run.stderr == "<b>boom</b>"
    assert view.mismatch is not None and view.mismatch.actual == "(no response)"
    assert build_transcript(case, None, "a") is None
    assert build_transcript(case, [], "a") is None


def test_parse_events_refuses_what_is_not_a_recording() -> None:
    assert parse_events(b'{"event": "eof", "session": 0, "t": 1}\n') == [
        {"event": "eof", "session": 0, "t": 1}]
    assert parse_events(b"[1]\n") is None
    assert parse_events(b"not json\n") is None
    assert parse_events(b"\xff\xfe") is None


# --------------------------------------------------------------------------- robot reviews


def test_robot_fields_against_expected_values_and_tolerances(
        evaluations: dict[str, Path]) -> None:
    folder = evaluations["assume-meters"]
    case = next(case for case in load(folder)["cases"] if case["status"] == "failed")
    view = build_report_review(case, "a", pack_trace_view("robot-evidence-review"))
    assert isinstance(view, ReportReview)
    fields = {item.name: item for item in view.fields}
    assert list(fields) == list(case["expected"])
    failed = {name for name, item in fields.items() if item.verdict == "does not match"}
    assert failed == set(case["problems"]) and failed
    assert all(item.tone == "ok" for name, item in fields.items() if name not in failed)
    speed = fields["speed_m_s"]
    assert speed.rule == "within 1e-06 absolute or 1e-07 relative"
    assert speed.dimension == "coordinates"
    gap = abs(case["trace"][0]["response"]["report"]["speed_m_s"] - case["expected"]["speed_m_s"])
    assert speed.difference == f"{gap:.3g}"
    assert fields["position_m"].rule.startswith("each of 3 components within 1e-06")
    assert fields["position_m"].difference.startswith("max ")
    assert fields["frame"].rule == "exactly this integer"
    assert fields["frame"].difference == "—"
    assert fields["source_sha256"].rule == "exactly this text"
    assert view.summary == f"{len(fields)} report fields, {len(failed)} outside their rule."


def test_robot_envelope_key_and_environment_problems() -> None:
    expected = {"frame": 3, "time_seconds": 0.1, "missing_frames": []}
    envelope = {"status": "failed", "problems": ["envelope"], "expected": expected,
                "trace": [{"request": {}, "response": {"ok": False}}], "checks": {}}
    view = build_report_review(envelope, "a")
    assert view is not None
    assert {item.verdict for item in view.fields} == {"does not match"}
    assert {item.actual for item in view.fields} == {"(missing)"}
    assert view.notes[0].startswith('The response is not an {"ok": true')
    assert view.fields[1].rule == "within the pack's tolerance"
    keys = {"status": "failed", "problems": ["report keys"], "expected": expected,
            "trace": [{"request": {}, "response": {
                "ok": True, "extra": 1,
                "report": {"frame": 3, "time_seconds": 0.1, "bonus": True}}}]}
    view = build_report_review(keys, "a")
    assert view is not None
    assert view.notes == ["Report keys not in the contract: bonus.",
                          "Report keys missing: missing_frames.",
                          "Envelope keys not in the contract: extra."]
    assert [item.verdict for item in view.fields] == ["matches", "matches", "matches"]
    assert view.fields[2].actual == "(missing)"
    unassessed = {"status": "environment_error", "problems": [], "expected": expected,
                  "trace": [], "error": "Docker could not start"}
    view = build_report_review(unassessed, "a")
    assert view is not None
    assert {item.verdict for item in view.fields} == {"unassessed"}
    assert view.summary == "3 report fields, none assessed."
    assert build_report_review({"status": "failed"}, "a") is None


def test_huge_and_non_finite_numbers_do_not_break_the_difference() -> None:
    case = {"status": "failed", "problems": ["time_seconds"], "expected": {"time_seconds": 0.5},
            "trace": [{"response": {"ok": True, "report": {"time_seconds": 10**400}}}]}
    view = build_report_review(case, "a")
    assert view is not None and view.fields[0].difference == "not finite"


# --------------------------------------------------------------------------- on the page


def test_each_pack_declares_its_view_and_the_view_is_built_from_the_declaration() -> None:
    support = build_trace(pack_trace_view("support-routing"), _support_case(
        [{"type": "finish", "action": {"finish": True}}]), None, "a")
    assert isinstance(support, Episode)
    assert (support.subject_label, support.scored_state) == ("Ticket", "the final ticket state")
    robot = build_trace(pack_trace_view("robot-evidence-review"),
                        {"expected": {"frame": 1}, "trace": []}, None, "a")
    assert isinstance(robot, ReportReview)
    assert robot.fields[0].dimension == "protocol"
    durable = pack_trace_view("durable-kv")
    assert durable.view == "transcript" and callable(durable.expected_response)
    events = [{"event": "send", "session": 0, "t": 0, "line": "{}"}]
    other = build_trace(pack_trace_view("some-other-pack"), {"status": "passed"}, events, "a")
    assert isinstance(other, TranscriptView)
    assert other.processes[0].exchanges[0].outcome == "recorded"


def test_an_episode_uses_the_words_its_pack_declares() -> None:
    labels = EpisodeLabels("order_id", "Order", "token", "the final order book")
    trace = [
        {"type": "tool_call", "status": "tool_error", "error_source": "injected",
         "action": {"tool": "ship", "arguments": {"order_id": "O-1", "token": "a"}},
         "result": {"ok": False, "error": {"code": "busy", "retryable": True}}},
        {"type": "tool_call", "status": "ok",
         "action": {"tool": "ship", "arguments": {"order_id": "O-1", "token": "a"}},
         "result": {"ok": True}},
        {"type": "finish", "action": {"finish": True}},
    ]
    view = build_episode({"trace": trace, "checks": {}}, "a", labels)
    assert view is not None
    assert view.steps[0].title == "ship · O-1"
    assert [fact.label for fact in view.steps[0].arguments] == [
        "order_id", "token (idempotency key)"]
    assert view.steps[1].retry.startswith('Retry of step 1 with the same idempotency key "a"')
    page = render_page("_trace.html.j2", title="t", trace=view)
    assert "<th>Order</th>" in page and "the verifier reads only the final order book." in page
    assert "Ticket" not in page and "ticket" not in page


def test_no_page_or_site_module_names_a_pack() -> None:
    root = Path(__file__).resolve().parents[1]
    names = [folder.name for folder in (root / "packs").iterdir()
             if (folder / "pack.toml").is_file()]
    assert len(names) == 3
    sources = [*(root / "evalarc" / "pages").glob("*.py"),
               *(root / "evalarc" / "site").glob("*.py"),
               *(root / "site_templates").glob("*.j2")]
    for module in sources:
        text = module.read_text("utf-8")
        for pack in names:
            assert pack not in text and pack.replace("-", "_") not in text, (module.name, pack)


@pytest.fixture()
def pack_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the bundled support-routing pack in a packs folder of its own."""
    bundled = packs.packs_root()
    shutil.copytree(bundled / "support-routing", tmp_path / "support-routing",
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(packs, "packs_root", lambda: tmp_path)
    packs.load_pack.cache_clear()
    pack_trace_view.cache_clear()
    yield tmp_path
    packs.load_pack.cache_clear()
    pack_trace_view.cache_clear()


def test_the_views_file_is_outside_the_grader_fingerprint(pack_root: Path) -> None:
    before = packs.grader_sha256(packs.load_pack("support-routing"))
    views = pack_root / "support-routing" / "views.toml"
    views.write_text(views.read_text("utf-8").replace('"Ticket"', '"Case"'), "utf-8")
    packs.load_pack.cache_clear()
    pack_trace_view.cache_clear()
    assert packs.grader_sha256(packs.load_pack("support-routing")) == before
    labels = pack_trace_view("support-routing").episode
    assert labels is not None and labels.subject_label == "Case"


@pytest.mark.parametrize(("text", "problem"), [
    ("schema_version = 'evalarc.pack-views.v9'\n[trace]\nview = 'episode'\n",
     "newer than the evalarc.pack-views.v1"),
    ("schema_version = 'evalarc.pack-views.v1'\n[trace]\nview = 'slideshow'\n",
     "trace.view must be one of transcript, episode, report-fields"),
    ("schema_version = 'evalarc.pack-views.v1'\n[trace]\nview = 'transcript'\noracle = 'nope'\n",
     "the grader has no nope"),
    ("schema_version = 'evalarc.pack-views.v1'\n[trace]\nview = 'transcript'\n"
     "oracle = 'MAX_ACTIONS'\n", "the grader's MAX_ACTIONS is not a function"),
    ("schema_version = 'evalarc.pack-views.v1'\n[trace]\nview = 'transcript'\n"
     "subject_label = 'x'\n", "trace.subject_label does not apply to a transcript view"),
    ("schema_version = 'evalarc.pack-views.v1'\n[trace]\nview = 'episode'\n",
     "trace.subject_argument must be present"),
    ("schema_version = 'evalarc.pack-views.v1'\n[trace\n", "cannot read pack views"),
])
def test_a_broken_views_file_is_refused_naming_it(pack_root: Path, text: str, problem: str) -> None:
    views = pack_root / "support-routing" / "views.toml"
    views.write_text(text, "utf-8")
    with pytest.raises(InputError) as caught:
        pack_trace_view("support-routing")
    assert str(views) in caught.value.message and problem in caught.value.message


def test_a_pack_without_a_views_file_shows_its_recordings(pack_root: Path) -> None:
    (pack_root / "support-routing" / "views.toml").unlink()
    assert pack_trace_view("support-routing") == PackTraceView()


def test_the_evaluation_page_opens_failing_traced_cases_and_reads_recordings(
        evaluations: dict[str, Path]) -> None:
    folder = evaluations["commit-on-exit"]
    report = load(folder)
    page = build_evaluation_page(report, recording_reader(EvidenceFolder(folder)))
    by_id = {(row.case_id, row.seed): row for row in page.cases}
    failing = by_id[("sigkill-after-delete", 17)]
    assert isinstance(failing.trace, TranscriptView) and failing.open
    assert failing.trace.mismatch is not None and failing.trace.mismatch.expected
    assert all(isinstance(row.trace, TranscriptView) for row in page.cases)
    assert {row.open for row in page.cases if row.status == "passed"} <= {False}
    # Without a reader (the report folder's own page) a transcript-only pack has no replay.
    assert all(row.trace is None for row in build_evaluation_page(report).cases)
    support = build_evaluation_page(load(evaluations["new-key-on-retry"]))
    assert [row.open for row in support.cases] == [False, False, False, True]


def test_a_recording_that_does_not_hash_to_its_name_is_not_read(
        evaluations: dict[str, Path], tmp_path: Path) -> None:
    folder = evaluations["commit-on-exit"]
    name = case_of(folder, "sigkill-after-delete")["recording_sha256"]
    reader = recording_reader(EvidenceFolder(folder))
    assert reader(name)
    copy_dir = tmp_path / "copy"
    (copy_dir / "recordings").mkdir(parents=True)
    (copy_dir / "recordings" / f"{name}.jsonl").write_bytes(
        (folder / "recordings" / f"{name}.jsonl").read_bytes() + b"\n")
    assert recording_reader(EvidenceFolder(copy_dir))(name) is None
    assert reader("../evaluation") is None
    assert reader("0" * 64) is None


HOSTILE = '</code><script>alert(1)</script><img src=x onerror=alert(2)>"\''


def _render(case: dict[str, Any], task: str = "support-routing") -> str:
    report = {
        "created_at": "2026-01-01T00:00:00+00:00", "evalarc_version": "0",
        "task": {"id": task, "version": "0.1.0", "domain": "d", "split": "s"},
        "candidate_sha256": "a" * 64, "grader_sha256": "b" * 64, "cases_sha256": "c" * 64,
        "runtime": {"backend": "replay"}, "seeds": [1], "valid": True, "status": "failed",
        "score": 0.5, "resolved": False, "dimensions": {}, "cases": [case],
        "evaluation_seconds": 1.0,
    }
    page = build_evaluation_page(report)
    return render_page("evaluation.html.j2", title="t", page=page)


@pytest.mark.parametrize("mutate", [
    lambda case: case["trace"][2]["action"].update(message=HOSTILE),
    lambda case: case["trace"][0]["action"].update(tool=HOSTILE),
    lambda case: case["trace"][0]["action"]["arguments"].update(ticket_id=HOSTILE),
    lambda case: case["final_state"].update({HOSTILE: {HOSTILE: HOSTILE}}),
])
def test_hostile_trace_text_is_escaped(mutate: Callable[[dict[str, Any]], None]) -> None:
    trace = [
        {"step": 0, "type": "tool_call",
         "action": {"tool": "get_ticket", "arguments": {"ticket_id": "T-1"}},
         "result": {"ok": True}, "status": "ok", "error_source": None, "changes": {}},
        {"step": 1, "type": "tool_call",
         "action": {"tool": "close_ticket", "arguments": {"ticket_id": "T-1"}},
         "result": {"ok": True}, "status": "ok", "error_source": None,
         "changes": {"T-1": {"before": {"status": "open"}, "after": {"status": "closed"}}}},
        {"step": 2, "type": "finish", "action": {"finish": True, "message": "done"}},
    ]
    case = {**_support_case(trace), "duration_seconds": 0.1, "error": None}
    hostile = copy.deepcopy(case)
    mutate(hostile)
    html = _render(hostile)
    assert "<script>alert" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'data-step-label="1 get_ticket"' in _render(case)
