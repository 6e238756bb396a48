"""The contract between task packs and the backends that run candidates.

A pack drives a case as a list of *sessions* (one candidate process lifetime each) inside one
:class:`CaseRun` (a fresh, per-case state directory that the sessions share). It sends one JSON
request line, reads exactly one JSON response line, and ends each session by closing stdin
(``stop_eof``) or by killing the process right after the last acknowledgement (``kill``).

Backends (``local``, ``docker``, and later ``replay``) implement these protocols; packs never
know which one they talk to. Candidate misbehaviour raises :class:`AgentFault` (graded as
``agent_error``); infrastructure trouble raises :class:`~evalarc.errors.EnvironmentFailure`
(graded as ``environment_error``: the case is unassessed and the evaluation invalid). A wrong but
well-formed answer is not an exception: the pack compares it with its oracle (``failed``).

Every backend also records the complete transcript of each case (see :class:`Transcript`), so a
run can be replayed offline by hash.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalarc.canonical import JSONValue, compact_json, sha256_text


class AgentFault(Exception):
    """The candidate broke the protocol or a limit (timeout, bad JSON, output flood, ...).

    ``message`` uses the spec's wording, e.g. "response timeout", "response is not finite JSON",
    "case time budget exhausted", "did not exit after EOF".
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Limits:
    """Runtime limits of one evaluation (recorded in the runtime object of evaluation.json)."""

    response_timeout: float = 10.0
    """Seconds per exchange (writing the request and reading one response line), and for the
    exit after EOF."""
    case_timeout: float = 60.0
    """Seconds for a whole case, shared by all its sessions, start-ups and gaps included."""
    startup_timeout: float = 30.0
    """Seconds for a container to report readiness (not charged to the response timeout)."""
    session_output_limit_bytes: int = 1_048_576
    """stdout + stderr bytes one session may write."""
    request_limit_bytes: int = 8192
    """Longest request line the host will send (newline included); longer is a harness bug."""
    stderr_tail_bytes: int = 2048

    def to_json(self) -> dict[str, Any]:
        return {
            "response_timeout_seconds": self.response_timeout,
            "case_timeout_seconds": self.case_timeout,
            "startup_timeout_seconds": self.startup_timeout,
            "session_output_limit_bytes": self.session_output_limit_bytes,
            "request_limit_bytes": self.request_limit_bytes,
        }


@dataclass(slots=True)
class Transcript:
    """Everything that happened in one case, in order: the material a replay needs.

    Each event is a JSON object with at least ``event`` (``start``, ``ready``, ``send``,
    ``recv``, ``eof``, ``exit``, ``kill``, ``fault``, ``stderr``), ``session`` (0-based) and
    ``t`` (seconds since the case opened, rounded to milliseconds). ``start`` carries the
    expanded ``argv``; ``send`` the exact request ``line`` (text, without newline); ``recv`` the
    exact response ``line`` decoded as UTF-8 with replacement, plus ``raw_b64`` when the bytes
    were not UTF-8; ``exit`` the ``code`` (negative signal number when killed); ``fault`` the
    ``message`` and its ``kind`` (``agent`` or ``environment``); ``stderr`` the kept ``tail``
    with ``stdout_bytes`` and ``stderr_bytes``.
    """

    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, event: str, session: int, t: float, **data: Any) -> None:
        record: dict[str, Any] = {"event": event, "session": session, "t": round(t, 3)}
        record.update(data)
        self.events.append(record)

    def jsonl(self) -> str:
        """Canonical JSON lines; the recording's name is the SHA-256 of this text."""
        return "".join(compact_json(event) + "\n" for event in self.events)

    def sha256(self) -> str:
        return sha256_text(self.jsonl())


class Session(Protocol):
    """One running candidate process inside a case."""

    def exchange(self, request: JSONValue) -> JSONValue:
        """Send ``request`` as one ASCII-escaped JSON line; return the parsed response.

        Raises AgentFault for a timeout, a closed stdin, an exit without a full line, output over
        the limit, or a response that is not finite JSON; EnvironmentFailure for infrastructure.
        A request longer than the limit raises ValueError (a harness bug, not the candidate's).
        """
        ...

    def stop_eof(self) -> None:
        """Close stdin and require a clean exit (code 0, no further stdout) within the response
        timeout; raises AgentFault otherwise."""
        ...

    def kill(self) -> None:
        """Kill the process without warning; it must really be gone when this returns."""
        ...

    def stderr_tail(self) -> str:
        """The last ``Limits.stderr_tail_bytes`` of stderr, for diagnostics."""
        ...

    @property
    def exit_code(self) -> int | None:
        """The exit code once the process was reaped (negative signal number when killed)."""
        ...

    @property
    def output_bytes(self) -> int:
        """stdout + stderr bytes this session has written so far."""
        ...


class CaseRun(Protocol):
    """A fresh state directory and case deadline; sessions of one case share both."""

    transcript: Transcript

    def start_session(self) -> Session:
        """Start a fresh candidate process (raises AgentFault when the case budget is spent,
        EnvironmentFailure when the process or container cannot start)."""
        ...


class Backend(Protocol):
    """Where candidates run: ``local`` (trusted only), ``docker`` or ``replay``."""

    name: str

    def runtime(self) -> dict[str, Any]:
        """The runtime object for evaluation.json: backend, image id, command template, limits,
        platform."""
        ...

    def open_case(self, label: str) -> AbstractContextManager[CaseRun]:
        """Open one case (``label`` such as ``17/read-write-delete`` names its state folder and
        recording); leaving the context kills every process and removes what it made."""
        ...
