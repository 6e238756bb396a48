"""The ``local`` backend: candidates run as host processes over pipes (trusted code only).

Each session is one child process in its own POSIX session (so SIGKILL to its process group takes
any grandchildren with it), with a minimal environment, the snapshot as working directory and a
fresh per-case state directory (mode 0700) under ``work_root``. All pipe I/O is non-blocking and
multiplexed with ``poll`` (no descriptor-number ceiling, unlike ``select``), so a candidate that
floods output while we write cannot deadlock us, and every wait is capped by both the response
timeout and the case deadline. Process exit is watched through a pidfd where Linux offers one.

:class:`PipeSession` holds the pipe half (polling, the EOF wait, killing the group) on top of the
protocol half both backends share (:mod:`evalarc.runtime.session_common`); a launcher of a
different child can reuse it and override the ``_before_kill``, ``_exit_failure`` and
``_stdout_closed_failure`` hooks.
"""

from __future__ import annotations

import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from evalarc.errors import EnvironmentFailure
from evalarc.runtime.jsonl import (
    CASE_BUDGET_EXHAUSTED,
    CLOSED_STDIN,
    NO_COMPLETE_RESPONSE,
    NO_EXIT_AFTER_EOF,
    RESPONSE_TIMEOUT,
    STDIN_WRITE_TIMEOUT,
    ResponseReader,
    capped_deadline,
    exit_code_message,
)
from evalarc.runtime.protocol import AgentFault, Limits, Transcript
from evalarc.runtime.session_common import (
    CaseClock,
    Session,
    check_case_budget,
    host_runtime,
    kill_sessions,
)
from evalarc.runtime.snapshot import expand_command

LOCAL_PATH = "/bin:/usr/bin"
"""The platform default PATH handed to local candidates (no host PATH, no secrets)."""
CLEANUP_TIMEOUT = 5.0
"""Seconds a killed local process may take to be reaped before cleanup counts as failed."""
_READ_CHUNK = 65536
_POLL_INTERVAL = 0.01


class PipeSession(Session):
    """One candidate process spoken to over stdin/stdout/stderr pipes.

    Any AgentFault ends the session: the fault is recorded, the process group is killed and the
    fault re-raised. Calling :meth:`exchange` or :meth:`stop_eof` on an ended session is a
    harness bug (RuntimeError); :meth:`kill` is always allowed and idempotent.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        limits: Limits,
        clock: CaseClock,
        transcript: Transcript,
        index: int,
    ) -> None:
        if process.stdin is None or process.stdout is None or process.stderr is None:
            raise ValueError("a pipe session needs stdin, stdout and stderr pipes")
        self._process = process
        self._limits = limits
        self._clock = clock
        self._transcript = transcript
        self.index = index
        """0-based position of this session in its case."""
        self._reader = ResponseReader(limits.session_output_limit_bytes, limits.stderr_tail_bytes)
        self._stdin_fd: int | None = process.stdin.fileno()
        self._open_fds = {process.stdout.fileno(), process.stderr.fileno()}
        self._stdout_fd = process.stdout.fileno()
        for descriptor in (self._stdin_fd, *self._open_fds):
            os.set_blocking(descriptor, False)
        self._pidfd = _open_pidfd(process.pid)
        self._ended = False

    # -- diagnostics --------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def exit_code(self) -> int | None:
        """The exit status once reaped (negative signal number when killed), else None."""
        return self._process.returncode

    # -- the exit after EOF (the rest of the protocol is in Session) --------------------------

    def _wait_clean_exit(self) -> None:
        deadline, message = capped_deadline(
            time.monotonic(),
            self._limits.response_timeout,
            self._clock.deadline,
            NO_EXIT_AFTER_EOF,
        )
        self._wait_exit(deadline, message)
        code = self._process.returncode
        assert code is not None
        if code != 0:
            raise self._exit_failure(code)

    # -- hooks for other process launchers ----------------------------------------------------

    def _before_kill(self) -> None:
        """Runs before the process group is killed (the Docker backend removes its container)."""

    def _exit_failure(self, code: int) -> AgentFault | EnvironmentFailure:
        """The failure for a non-zero exit after EOF (Docker maps 125-127 to the environment)."""
        return AgentFault(exit_code_message(code))

    def _stdout_closed_failure(self) -> AgentFault | EnvironmentFailure:
        """The failure when stdout ends before a complete response line."""
        return AgentFault(NO_COMPLETE_RESPONSE)

    # -- internals ----------------------------------------------------------------------------

    def _write(self, data: bytes, deadline: float, case_bound: bool) -> None:
        """Write all of ``data`` to stdin, draining stdout/stderr meanwhile."""
        if self._stdin_fd is None:
            raise AgentFault(CLOSED_STDIN)
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault(CASE_BUDGET_EXHAUSTED if case_bound else STDIN_WRITE_TIMEOUT)
            readable, writable = _wait(self._open_fds, self._stdin_fd, remaining)
            self._drain(readable)
            if writable:
                try:
                    written = os.write(self._stdin_fd, view)
                except BlockingIOError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    raise AgentFault(CLOSED_STDIN) from None
                view = view[written:]

    def _read_line(self, deadline: float, case_bound: bool) -> bytes:
        while True:
            line = self._reader.take_line()
            if line is not None:
                return line
            if self._stdout_fd not in self._open_fds:
                raise self._stdout_closed_failure()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault(CASE_BUDGET_EXHAUSTED if case_bound else RESPONSE_TIMEOUT)
            readable, _ = _wait(self._open_fds, None, remaining)
            self._drain(readable)

    def _drain(self, readable: Iterable[int]) -> None:
        """Read what is ready on the given output pipes into the reader (may raise AgentFault)."""
        for descriptor in readable:
            try:
                chunk = os.read(descriptor, _READ_CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                self._open_fds.discard(descriptor)
            elif descriptor == self._stdout_fd:
                self._reader.feed_stdout(chunk)
            else:
                self._reader.feed_stderr(chunk)

    def _wait_exit(self, deadline: float, message: str) -> None:
        """Drain output until the process has exited (and its pipes closed), or fault."""
        while self._process.poll() is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault(message)
            watched = set(self._open_fds)
            if self._pidfd is not None:
                watched.add(self._pidfd)
                timeout = remaining
            else:
                timeout = min(remaining, _POLL_INTERVAL)
            readable, _ = _wait(watched, None, timeout)
            self._drain(fd for fd in readable if fd != self._pidfd)
        # The process is gone; collect what it wrote last. A grandchild holding a pipe open must
        # not stretch this past the deadline, and is killed with the group afterwards anyway.
        while self._open_fds:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            readable, _ = _wait(self._open_fds, None, remaining)
            self._drain(readable)

    def _close_stdin(self) -> None:
        if self._stdin_fd is not None:
            self._stdin_fd = None
            stdin = self._process.stdin
            assert stdin is not None
            with suppress(BrokenPipeError):
                stdin.close()

    def _finish(self, killed: bool) -> None:
        """Kill the whole process group, reap the child, record exit and diagnostics."""
        if self._ended:
            return
        self._ended = True
        try:
            if killed and self._process.poll() is None:
                self._before_kill()
                self._record("kill")
            # Kill before closing stdin: a candidate that exits cleanly on EOF must not get the
            # chance to, or a "crash after acknowledgement" would test a clean shutdown instead.
            _kill_group(self._process.pid)
            self._close_stdin()
            try:
                self._process.wait(timeout=CLEANUP_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise EnvironmentFailure(
                    f"candidate process {self._process.pid} was not reaped within "
                    f"{CLEANUP_TIMEOUT:g} s of SIGKILL"
                ) from None
            self._collect_leftovers()
        finally:
            self._close_pipes()
        self._record_exit(self._process.returncode)

    def _collect_leftovers(self) -> None:
        """Read what is already in the pipes (for the stderr tail); limits no longer matter."""
        while self._open_fds:
            readable, _ = _wait(self._open_fds, None, 0)
            if not readable:
                return
            try:
                self._drain(readable)
            except AgentFault:
                return

    def _close_pipes(self) -> None:
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()
        self._open_fds.clear()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def _wait(
    readable: Collection[int], writable: int | None, timeout: float
) -> tuple[list[int], bool]:
    """Wait up to ``timeout`` seconds for input on ``readable`` (end of file and errors count as
    input, so the reader sees them) or room on ``writable``; return the ready ones."""
    poller = select.poll()
    for descriptor in readable:
        poller.register(descriptor, select.POLLIN)
    if writable is not None:
        poller.register(writable, select.POLLOUT)
    if not readable and writable is None:
        time.sleep(max(timeout, 0.0))
        return [], False
    ready_in: list[int] = []
    ready_out = False
    for descriptor, _events in poller.poll(max(0, math.ceil(timeout * 1000))):
        if descriptor == writable:
            ready_out = True  # POLLERR/POLLHUP included: the write then reports the broken pipe
        else:
            ready_in.append(descriptor)
    return ready_in, ready_out


def _open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux 5.3+), else None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        descriptor: int = opener(pid)
    except OSError:
        return None
    return descriptor


def _kill_group(pgid: int) -> None:
    # ESRCH: nobody is left in the group; EPERM: macOS reports a group of zombies this way.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class LocalCaseRun:
    """One case on the local backend: a fresh state directory and the case deadline."""

    def __init__(self, backend: LocalBackend, state_dir: Path, clock: CaseClock) -> None:
        self._backend = backend
        self.state_dir = state_dir
        self.clock = clock
        self.transcript = Transcript()
        self.sessions: list[PipeSession] = []
        self._closed = False

    def start_session(self) -> PipeSession:
        if self._closed:
            raise RuntimeError("case is closed")
        index = len(self.sessions)
        check_case_budget(self.transcript, self.clock, index)
        argv = self._backend.expand(self.state_dir)
        self.transcript.add("start", index, self.clock.elapsed(), argv=argv)
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                cwd=self._backend.snapshot_dir,
                env=self._backend.environment(),
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            message = f"could not start candidate command {argv[0]!r}: {reason}"
            self.transcript.add(
                "fault", index, self.clock.elapsed(), message=message, kind="environment"
            )
            raise EnvironmentFailure(message) from None
        session = PipeSession(process, self._backend.limits, self.clock, self.transcript, index)
        self.sessions.append(session)
        return session

    def close(self) -> None:
        """Kill every session still running and remove the state directory."""
        if self._closed:
            return
        self._closed = True
        problems: list[str] = []
        kill_sessions(self.sessions, problems)
        try:
            shutil.rmtree(self.state_dir)
        except FileNotFoundError:
            pass
        except OSError as error:
            problems.append(f"could not remove state directory {self.state_dir}: {error.strerror}")
        if problems:
            raise EnvironmentFailure("; ".join(problems))


class LocalBackend:
    """Runs the snapshot's command as host processes. Only for code the user trusts."""

    name = "local"

    def __init__(
        self, snapshot_dir: Path, command: list[str], limits: Limits, work_root: Path
    ) -> None:
        if not command:
            raise ValueError("the candidate command template is empty")
        self.snapshot_dir = snapshot_dir.resolve()
        self.command = list(command)
        self.limits = limits
        self.work_root = work_root.resolve()
        self.python = sys.executable
        self._cases = 0

    def runtime(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "image": None,
            "image_id": None,
            "command": list(self.command),
            **self.limits.to_json(),
            **host_runtime(),
        }

    def environment(self) -> dict[str, str]:
        """The whole environment a local candidate sees."""
        return {"PATH": LOCAL_PATH, "LANG": "C.UTF-8"}

    def expand(self, state_dir: Path) -> list[str]:
        return expand_command(self.command, self.python, str(self.snapshot_dir), str(state_dir))

    @contextmanager
    def open_case(self, label: str) -> Iterator[LocalCaseRun]:
        clock = CaseClock.start(self.limits.case_timeout)
        self._cases += 1
        try:
            self.work_root.mkdir(parents=True, exist_ok=True)
            state_dir = Path(
                tempfile.mkdtemp(
                    prefix=f"state-{self._cases}-{_folder_name(label)}-",
                    dir=self.work_root,
                )
            )
            state_dir.chmod(0o700)
        except OSError as error:
            raise EnvironmentFailure(
                f"could not create a state directory under {self.work_root}: {error.strerror}"
            ) from None
        run = LocalCaseRun(self, state_dir, clock)
        try:
            yield run
        finally:
            run.close()


def _folder_name(label: str) -> str:
    """A label such as ``17/read-write-delete`` made safe and short for a folder name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:60] or "case"
