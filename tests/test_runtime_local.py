"""The local backend against real candidate processes (tests/candidates/behaviours/main.py)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from evalarc.errors import EnvironmentFailure
from evalarc.runtime.local import LocalBackend, PipeSession
from evalarc.runtime.protocol import (
    AgentFault,
    Backend,
    CaseRun,
    Limits,
    Session,
    Transcript,
)
from evalarc.runtime.session_common import CaseClock

CANDIDATE = Path(__file__).parent / "candidates" / "behaviours"
# Roomy limits where timing is not under test (a loaded machine starts Python slowly) and tight
# ones where it is.
FAST = Limits(response_timeout=3.0, case_timeout=10.0, session_output_limit_bytes=200_000)
TIGHT = Limits(response_timeout=0.5, case_timeout=10.0, session_output_limit_bytes=200_000)


def backend_for(behaviour: str, tmp_path: Path, limits: Limits = FAST) -> LocalBackend:
    command = ["{python}", "-I", "-B", "main.py", behaviour, "{state}"]
    return LocalBackend(CANDIDATE, command, limits, tmp_path / "work")


def fault_of(action: object) -> str:
    assert callable(action)
    with pytest.raises(AgentFault) as caught:
        action()
    return caught.value.message


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if gone(pid):
            return True
        time.sleep(0.02)
    return gone(pid)


def test_backend_satisfies_the_contract(tmp_path: Path) -> None:
    backend: Backend = backend_for("serve", tmp_path)
    with backend.open_case("17/contract") as run:
        typed_run: CaseRun = run
        session: Session = typed_run.start_session()
        assert session.exchange({"op": "get"}) == {"echo": {"op": "get"}, "seen": 1}
        session.stop_eof()
    manager: AbstractContextManager[CaseRun] = backend.open_case("x")
    assert manager is not None


def test_well_behaved_service_shares_state_across_sessions(tmp_path: Path) -> None:
    backend = backend_for("serve", tmp_path)
    with backend.open_case("17/read-write-delete") as run:
        state_dir = run.state_dir
        assert state_dir.parent == (tmp_path / "work").resolve()
        assert state_dir.name.startswith("state-1-17-read-write-delete-")
        assert state_dir.stat().st_mode & 0o777 == 0o700
        first = run.start_session()
        assert first.exchange({"op": "put", "key": "ключ", "value": 1.5}) == {
            "echo": {"op": "put", "key": "ключ", "value": 1.5}, "seen": 1}
        assert first.exchange(None) == {"echo": None, "seen": 2}
        first.stop_eof()
        assert first.exit_code == 0
        assert "handling null" in first.stderr_tail()
        second = run.start_session()
        assert second.exchange([]) == {"echo": [], "seen": 3}
        second.kill()
        assert second.exit_code == -9
    assert not state_dir.exists()
    events = [(event["event"], event["session"]) for event in run.transcript.events]
    assert events == [
        ("start", 0), ("send", 0), ("recv", 0), ("send", 0), ("recv", 0), ("eof", 0),
        ("exit", 0), ("stderr", 0),
        ("start", 1), ("send", 1), ("recv", 1), ("kill", 1), ("exit", 1), ("stderr", 1),
    ]
    start = run.transcript.events[0]
    assert start["argv"] == [sys.executable, "-I", "-B", "main.py", "serve", str(state_dir)]
    send = run.transcript.events[1]
    assert send["line"] == '{"op": "put", "key": "\\u043a\\u043b\\u044e\\u0447", "value": 1.5}'
    assert run.transcript.events[2]["line"] == (
        '{"echo": {"op": "put", "key": "\\u043a\\u043b\\u044e\\u0447", "value": 1.5}, "seen": 1}')
    assert run.transcript.events[6]["code"] == 0
    assert run.transcript.events[12]["code"] == -9
    assert run.transcript.events[7]["stdout_bytes"] > 0
    times = [event["t"] for event in run.transcript.events]
    assert times == sorted(times)


def test_fresh_state_per_case(tmp_path: Path) -> None:
    backend = backend_for("serve", tmp_path)
    for _ in range(2):
        with backend.open_case("17/fresh") as run:
            session = run.start_session()
            assert session.exchange({}) == {"echo": {}, "seen": 1}
            session.stop_eof()


def test_minimal_environment_and_working_directory(tmp_path: Path) -> None:
    os.environ["EVALARC_TEST_SECRET"] = "do-not-leak"
    try:
        backend = backend_for("env", tmp_path)
        with backend.open_case("env") as run:
            response = run.start_session().exchange({})
    finally:
        del os.environ["EVALARC_TEST_SECRET"]
    assert response["cwd"] == str(CANDIDATE.resolve())
    environment = {key: value for key, value in response["env"].items() if key != "LC_CTYPE"}
    assert environment == {"PATH": "/bin:/usr/bin", "LANG": "C.UTF-8"}


def test_placeholders_are_plain_substring_substitution(tmp_path: Path) -> None:
    command = ["{python}", "-I", "-B", "{workspace}/main.py", "env", "{state}/db file;$HOME"]
    backend = LocalBackend(CANDIDATE, command, FAST, tmp_path / "work")
    with backend.open_case("args") as run:
        argv = run.start_session().exchange({})["argv"]
        assert argv == [str(CANDIDATE.resolve() / "main.py"), "env",
                        f"{run.state_dir}/db file;$HOME"]
    assert backend.runtime()["command"] == command


def test_runtime_object(tmp_path: Path) -> None:
    runtime = backend_for("serve", tmp_path).runtime()
    assert runtime["backend"] == "local"
    assert runtime["image"] is None and runtime["image_id"] is None
    assert runtime["command"] == ["{python}", "-I", "-B", "main.py", "serve", "{state}"]
    assert runtime["response_timeout_seconds"] == 3.0
    assert runtime["case_timeout_seconds"] == 10.0
    assert runtime["session_output_limit_bytes"] == 200_000
    assert runtime["request_limit_bytes"] == 8192
    assert runtime["startup_timeout_seconds"] == 30.0
    assert runtime["python"] == ".".join(str(part) for part in sys.version_info[:3])
    # What decides comparability, not the kernel build of the host.
    assert (runtime["os"], runtime["architecture"]) == (platform.system(), platform.machine())
    assert "platform" not in runtime


def test_response_timeout_kills_the_silent_candidate(tmp_path: Path) -> None:
    with backend_for("sleep", tmp_path, TIGHT).open_case("slow") as run:
        session = run.start_session()
        began = time.monotonic()
        assert fault_of(lambda: session.exchange({"op": "get"})) == "response timeout"
        assert 0.45 <= time.monotonic() - began < 1.5
        assert wait_gone(session.pid)
        kinds = [event["event"] for event in run.transcript.events]
        assert kinds == ["start", "send", "fault", "kill", "exit", "stderr"]
        assert run.transcript.events[2]["message"] == "response timeout"
        with pytest.raises(RuntimeError):
            session.exchange({})


def test_case_budget_caps_the_response_deadline(tmp_path: Path) -> None:
    limits = Limits(response_timeout=5.0, case_timeout=0.6)
    with backend_for("sleep", tmp_path, limits).open_case("budget") as run:
        began = time.monotonic()
        message = fault_of(lambda: run.start_session().exchange({}))
        assert message == "case time budget exhausted"
        assert time.monotonic() - began < 1.5
        assert fault_of(run.start_session) == "case time budget exhausted"
        assert run.transcript.events[-1] == {
            "event": "fault", "session": 1, "t": run.transcript.events[-1]["t"],
            "message": "case time budget exhausted", "kind": "agent"}


def test_case_budget_is_shared_across_sessions(tmp_path: Path) -> None:
    # Every answer takes ~0.3 s, far inside the response timeout; only the sum runs out.
    limits = Limits(response_timeout=3.0, case_timeout=1.2)
    with backend_for("slow", tmp_path, limits).open_case("shared") as run:
        began = time.monotonic()
        with pytest.raises(AgentFault) as caught:
            for _ in range(10):
                session = run.start_session()
                session.exchange({})
                session.stop_eof()
        assert caught.value.message == "case time budget exhausted"
        assert 1.15 <= time.monotonic() - began < 2.5
        assert len(run.sessions) >= 2


def test_nan_and_overflow_are_not_finite_json(tmp_path: Path) -> None:
    for behaviour in ("nan", "overflow"):
        with backend_for(behaviour, tmp_path).open_case(behaviour) as run:
            session = run.start_session()
            assert fault_of(lambda s=session: s.exchange({})) == "response is not finite JSON"
            recv = [event for event in run.transcript.events if event["event"] == "recv"]
            assert len(recv) == 1 and "ok" in recv[0]["line"]


@pytest.mark.parametrize("behaviour", ["flood", "flood-stderr"])
def test_output_flood_hits_the_session_limit(tmp_path: Path, behaviour: str) -> None:
    with backend_for(behaviour, tmp_path).open_case(behaviour) as run:
        session = run.start_session()
        began = time.monotonic()
        assert fault_of(lambda: session.exchange({})) == "stdout/stderr output limit exceeded"
        assert time.monotonic() - began < 2.5
        assert session.output_bytes > 200_000
        assert wait_gone(session.pid)
        if behaviour == "flood-stderr":
            assert session.stderr_tail() == "e" * 2048


def test_closed_stdout_is_an_incomplete_response(tmp_path: Path) -> None:
    with backend_for("close-stdout", tmp_path).open_case("closed") as run:
        session = run.start_session()
        began = time.monotonic()
        message = fault_of(lambda: session.exchange({}))
        assert message == "candidate exited without a complete response"
        assert time.monotonic() - began < 2.5


def test_partial_line_then_exit(tmp_path: Path) -> None:
    with backend_for("partial-exit", tmp_path).open_case("partial") as run:
        session = run.start_session()
        message = fault_of(lambda: session.exchange({}))
        assert message == "candidate exited without a complete response"


def test_closed_stdin_is_reported(tmp_path: Path) -> None:
    with backend_for("close-stdin", tmp_path).open_case("stdin") as run:
        session = run.start_session()
        time.sleep(0.3)  # let it start and close its end of the pipe
        assert fault_of(lambda: session.exchange({})) == "candidate closed stdin"


def test_stdin_write_timeout_when_the_pipe_stays_full(tmp_path: Path) -> None:
    limits = Limits(response_timeout=0.5, case_timeout=10.0, request_limit_bytes=1 << 20)
    with backend_for("deaf", tmp_path, limits).open_case("write") as run:
        session = run.start_session()
        began = time.monotonic()
        assert fault_of(lambda: session.exchange("x" * 900_000)) == "stdin write timeout"
        assert 0.45 <= time.monotonic() - began < 1.5


def test_nonzero_exit_after_eof(tmp_path: Path) -> None:
    with backend_for("exit-3", tmp_path).open_case("exit") as run:
        session = run.start_session()
        session.exchange({})
        assert fault_of(session.stop_eof) == "candidate exited with code 3"
        assert session.exit_code == 3
        kinds = [event["event"] for event in run.transcript.events]
        assert kinds == ["start", "send", "recv", "eof", "fault", "exit", "stderr"]


def test_ignoring_eof_is_a_fault_within_the_response_timeout(tmp_path: Path) -> None:
    with backend_for("ignore-eof", tmp_path, TIGHT).open_case("ignore") as run:
        session = run.start_session()
        session.exchange({})
        began = time.monotonic()
        assert fault_of(session.stop_eof) == "candidate did not exit after EOF"
        assert 0.45 <= time.monotonic() - began < 1.5
        assert wait_gone(session.pid)
        assert session.exit_code == -9


def test_unsolicited_stdout_after_eof(tmp_path: Path) -> None:
    with backend_for("trailing", tmp_path).open_case("trailing") as run:
        session = run.start_session()
        session.exchange({})
        assert fault_of(session.stop_eof) == "candidate emitted unsolicited stdout"


def test_trailing_whitespace_after_eof_is_fine(tmp_path: Path) -> None:
    with backend_for("trailing-space", tmp_path).open_case("space") as run:
        session = run.start_session()
        session.exchange({})
        session.stop_eof()
        assert session.exit_code == 0


def test_extra_lines_become_the_next_answer_or_unsolicited_stdout(tmp_path: Path) -> None:
    with backend_for("extra-lines", tmp_path).open_case("extra") as run:
        session = run.start_session()
        assert session.exchange({"n": 1}) == {"echo": {"n": 1}, "seen": 1}
        assert session.exchange({"n": 2}) == {"extra": True}
        assert fault_of(session.stop_eof) == "candidate emitted unsolicited stdout"


def test_kill_takes_the_whole_process_group(tmp_path: Path) -> None:
    with backend_for("grandchild", tmp_path).open_case("group") as run:
        session = run.start_session()
        pids = session.exchange({})
        assert pids["parent"] == session.pid
        assert not gone(pids["child"])
        session.kill()
        assert gone(pids["parent"])
        assert wait_gone(pids["child"])
        session.kill()  # idempotent
        assert [event["event"] for event in run.transcript.events].count("kill") == 1


def test_leaving_the_case_kills_running_sessions(tmp_path: Path) -> None:
    with backend_for("grandchild", tmp_path).open_case("leave") as run:
        session = run.start_session()
        pids = session.exchange({})
        state_dir = run.state_dir
    assert gone(pids["parent"]) and wait_gone(pids["child"])
    assert not state_dir.exists()
    assert run.transcript.events[-3]["event"] == "kill"


def test_leaving_the_case_on_an_exception_still_cleans_up(tmp_path: Path) -> None:
    with pytest.raises(KeyError), backend_for("serve", tmp_path).open_case("boom") as run:
        session = run.start_session()
        raise KeyError("harness bug")
    assert wait_gone(session.pid)
    assert not run.state_dir.exists()


def test_spawn_failure_is_an_environment_failure(tmp_path: Path) -> None:
    backend = LocalBackend(CANDIDATE, ["/nonexistent/runtime", "main.py"], FAST, tmp_path / "w")
    with backend.open_case("spawn") as run, pytest.raises(EnvironmentFailure) as caught:
        run.start_session()
    assert "/nonexistent/runtime" in caught.value.message
    assert run.transcript.events[-1]["kind"] == "environment"


def test_request_over_the_limit_is_a_value_error_not_a_fault(tmp_path: Path) -> None:
    with backend_for("serve", tmp_path).open_case("limit") as run:
        session = run.start_session()
        with pytest.raises(ValueError, match="8192"):
            session.exchange("x" * 9000)
        assert session.exchange({}) == {"echo": {}, "seen": 1}
        session.stop_eof()


def test_sessions_are_pipe_sessions(tmp_path: Path) -> None:
    with backend_for("serve", tmp_path).open_case("type") as run:
        assert isinstance(run.start_session(), PipeSession)


class LaunchCodeSession(PipeSession):
    """What a Docker-CLI backend does: exit codes 125-127 mean the launch failed."""

    def _exit_failure(self, code: int) -> AgentFault | EnvironmentFailure:
        if code in (125, 126, 127):
            return EnvironmentFailure(f"runtime could not start the candidate (exit {code})")
        return super()._exit_failure(code)


def test_pipe_session_hooks_let_another_launcher_classify_exits(tmp_path: Path) -> None:
    code = "import sys; sys.stdin.read(); sys.exit(int(sys.argv[1]))"
    opened = time.monotonic()
    clock = CaseClock(opened=opened, deadline=opened + 10.0)
    transcript = Transcript()
    for index, status in enumerate((126, 4)):
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", code, str(status)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, start_new_session=True)
        session = LaunchCodeSession(process, FAST, clock, transcript, index)
        expected = EnvironmentFailure if status == 126 else AgentFault
        with pytest.raises(expected):
            session.stop_eof()
        assert session.ended and session.exit_code == status
    faults = [(event["session"], event["kind"], event["message"])
              for event in transcript.events if event["event"] == "fault"]
    assert faults == [(0, "environment", "runtime could not start the candidate (exit 126)"),
                      (1, "agent", "candidate exited with code 4")]
