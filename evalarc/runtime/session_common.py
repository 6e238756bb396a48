"""What the ``local`` and ``docker`` backends share: the case clock, a session's protocol half
(exchange, diagnostics, fault handling, the closing records) and a case's start/close steps.

Each backend keeps its real differences in its own module: how a child is launched, how bytes
move (pipes versus Docker's multiplexed socket), how ``stop_eof`` waits for the exit and how a
killed process is cleaned up.
"""

from __future__ import annotations

import platform
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from evalarc.canonical import JSONValue
from evalarc.errors import EnvironmentFailure
from evalarc.runtime.jsonl import (
    CASE_BUDGET_EXHAUSTED,
    RESPONSE_TIMEOUT,
    UNSOLICITED_STDOUT,
    ResponseReader,
    capped_deadline,
    describe_line,
    encode_request,
    parse_response,
)
from evalarc.runtime.protocol import AgentFault, Limits, Transcript


@dataclass(frozen=True, slots=True)
class CaseClock:
    """The monotonic origin and deadline of one case, shared by its sessions."""

    opened: float
    deadline: float

    def elapsed(self) -> float:
        return time.monotonic() - self.opened

    @classmethod
    def start(cls, case_timeout: float) -> CaseClock:
        """A clock opened now whose deadline is ``case_timeout`` seconds away."""
        opened = time.monotonic()
        return cls(opened=opened, deadline=opened + case_timeout)


class Session(ABC):
    """The backend-agnostic half of one candidate session.

    Any AgentFault or EnvironmentFailure during :meth:`exchange` ends the session: the failure
    is recorded, the process killed (:meth:`_finish`) and the failure re-raised.
    """

    index: int
    """0-based position of this session in its case."""
    _limits: Limits
    _clock: CaseClock
    _transcript: Transcript
    _reader: ResponseReader
    _ended: bool

    # -- diagnostics --------------------------------------------------------------------------

    @property
    def stdout_bytes(self) -> int:
        return self._reader.stdout_bytes

    @property
    def stderr_bytes(self) -> int:
        return self._reader.stderr_bytes

    @property
    def output_bytes(self) -> int:
        return self._reader.output_bytes

    @property
    def ended(self) -> bool:
        return self._ended

    def stderr_tail(self) -> str:
        return self._reader.stderr_tail()

    # -- the protocol -------------------------------------------------------------------------

    def exchange(self, request: JSONValue) -> JSONValue:
        line = encode_request(request, self._limits.request_limit_bytes)
        self._require_running()
        self._record("send", line=line[:-1].decode("ascii"))
        try:
            deadline, case_bound = self._response_deadline(RESPONSE_TIMEOUT)
            self._write(line, deadline, case_bound)
            response = self._read_line(deadline, case_bound)
            self._record("recv", **describe_line(response))
            return parse_response(response)
        except (AgentFault, EnvironmentFailure) as failure:
            self._fail(failure)
            raise

    def stop_eof(self) -> None:
        """Close stdin and wait for a clean exit; any other end is the session's failure."""
        self._require_running()
        try:
            self._close_stdin()
            self._record("eof")
            self._wait_clean_exit()
            if self._reader.has_unsolicited_stdout():
                raise AgentFault(UNSOLICITED_STDOUT)
        except (AgentFault, EnvironmentFailure) as failure:
            self._fail(failure)
            raise
        self._finish(killed=False)

    def kill(self) -> None:
        if not self._ended:
            self._finish(killed=True)

    # -- what each backend provides -----------------------------------------------------------

    @abstractmethod
    def _write(self, data: bytes, deadline: float, case_bound: bool) -> None:
        """Send all of ``data`` to the candidate's stdin by ``deadline``."""

    @abstractmethod
    def _read_line(self, deadline: float, case_bound: bool) -> bytes:
        """The next complete stdout line, read by ``deadline``."""

    @abstractmethod
    def _close_stdin(self) -> None:
        """Signal end of input to the candidate (idempotent)."""

    @abstractmethod
    def _wait_clean_exit(self) -> None:
        """After EOF: wait for the exit, raising the failure for a timeout or non-zero code."""

    @abstractmethod
    def _finish(self, killed: bool) -> None:
        """End the session: make sure the process is gone, then record exit and diagnostics."""

    # -- shared internals ---------------------------------------------------------------------

    def _require_running(self) -> None:
        if self._ended:
            raise RuntimeError(f"session {self.index} has already ended")

    def _record(self, event: str, **data: Any) -> None:
        self._transcript.add(event, self.index, self._clock.elapsed(), **data)

    def _response_deadline(self, message: str) -> tuple[float, bool]:
        """A wait's deadline, and whether the case deadline (not ``message``'s) set it."""
        deadline, chosen = capped_deadline(
            time.monotonic(), self._limits.response_timeout, self._clock.deadline, message
        )
        return deadline, chosen == CASE_BUDGET_EXHAUSTED

    def _fail(self, failure: AgentFault | EnvironmentFailure) -> None:
        kind = "agent" if isinstance(failure, AgentFault) else "environment"
        self._record("fault", message=failure.message, kind=kind)
        self._finish(killed=True)

    def _record_exit(self, code: int | None) -> None:
        """The closing records of a session: its exit code, then its stderr tail and sizes."""
        self._record("exit", code=code)
        self._record(
            "stderr",
            tail=self._reader.stderr_tail(),
            stdout_bytes=self._reader.stdout_bytes,
            stderr_bytes=self._reader.stderr_bytes,
        )


def check_case_budget(transcript: Transcript, clock: CaseClock, index: int) -> None:
    """Refuse to start session ``index`` once the case deadline has passed (recorded)."""
    if time.monotonic() >= clock.deadline:
        transcript.add("fault", index, clock.elapsed(), message=CASE_BUDGET_EXHAUSTED, kind="agent")
        raise AgentFault(CASE_BUDGET_EXHAUSTED)


class _Killable(Protocol):
    def kill(self) -> None: ...


def kill_sessions(sessions: Iterable[_Killable], problems: list[str]) -> None:
    """Kill every session, in order, adding each cleanup failure's message to ``problems``."""
    for session in sessions:
        try:
            session.kill()
        except EnvironmentFailure as error:
            problems.append(error.message)


def host_runtime() -> dict[str, str]:
    """The interpreter and platform facts every backend's runtime record ends with."""
    return {
        "python": platform.python_version(),
        "os": platform.system(),
        "architecture": platform.machine(),
    }
