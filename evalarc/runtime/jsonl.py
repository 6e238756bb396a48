"""The JSON-lines conversation with a candidate, independent of how the bytes travel.

Pure logic shared by every backend that talks to a process through byte streams (local pipes,
a Docker CLI child, an attached container socket): encode one request line, accumulate stdout and
stderr chunks under the per-session output limit, cut stdout at the first newline into one
response, parse that response as finite JSON, and keep the stderr tail for diagnostics. The
backends own the clocks and the file descriptors; this module never reads or sleeps.

The fault messages are the spec's wording (durable-kv §1.7, support-routing §A.4); backends
should raise :class:`AgentFault` with these constants rather than spelling their own.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

from evalarc.canonical import JSONValue
from evalarc.runtime.protocol import AgentFault

RESPONSE_TIMEOUT = "response timeout"
STDIN_WRITE_TIMEOUT = "stdin write timeout"
CLOSED_STDIN = "candidate closed stdin"
NO_COMPLETE_RESPONSE = "candidate exited without a complete response"
OUTPUT_LIMIT_EXCEEDED = "stdout/stderr output limit exceeded"
NOT_FINITE_JSON = "response is not finite JSON"
NO_EXIT_AFTER_EOF = "candidate did not exit after EOF"
UNSOLICITED_STDOUT = "candidate emitted unsolicited stdout"
CASE_BUDGET_EXHAUSTED = "case time budget exhausted"

_JSON_WHITESPACE = b" \t\r\n"


def exit_code_message(code: int) -> str:
    """The fault for a non-zero exit after EOF, e.g. ``candidate exited with code 3``."""
    return f"candidate exited with code {code}"


def encode_request(request: JSONValue, limit_bytes: int) -> bytes:
    """One request line: ASCII-escaped JSON, finite numbers only, newline-terminated.

    Raises ValueError when ``request`` holds NaN/Infinity or the line (newline included) is longer
    than ``limit_bytes``: both are bugs in the pack, never the candidate's fault.
    """
    line = (json.dumps(request, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")
    if len(line) > limit_bytes:
        raise ValueError(
            f"request line of {len(line)} bytes exceeds the request limit of {limit_bytes} bytes "
            f"({limit_bytes / 1024:g} KiB)"
        )
    return line


def capped_deadline(now: float, timeout: float, case_deadline: float,
                    timeout_message: str) -> tuple[float, str]:
    """The deadline of one wait and the fault to raise when it passes.

    A per-exchange wait never outlives the case: when the case deadline comes first, running out
    of time is reported as the exhausted case budget instead of ``timeout_message``.
    """
    own_deadline = now + timeout
    if case_deadline <= own_deadline:
        return case_deadline, CASE_BUDGET_EXHAUSTED
    return own_deadline, timeout_message


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite constant {name}")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text[:40]} overflows")
    return number


def parse_response(line: bytes) -> JSONValue:
    """Parse one response line (without its newline) as a single finite JSON document.

    Invalid UTF-8, invalid JSON, NaN/Infinity, overflowing numbers (``1e999``), integers past
    Python's digit limit and nesting too deep to parse all raise AgentFault ("response is not
    finite JSON"). Surrounding whitespace (a ``\\r`` before the newline) is accepted. Duplicate
    keys keep the last value, as ``json.loads`` does.
    """
    try:
        text = line.decode("utf-8")
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as error:
        raise AgentFault(NOT_FINITE_JSON) from error


def describe_line(line: bytes) -> dict[str, str]:
    """Transcript fields for response bytes: ``line`` (UTF-8 text) and, when the bytes are not
    valid UTF-8, also ``raw_b64`` so a replay gets the exact bytes back."""
    try:
        return {"line": line.decode("utf-8")}
    except UnicodeDecodeError:
        return {
            "line": line.decode("utf-8", errors="replace"),
            "raw_b64": base64.b64encode(line).decode("ascii"),
        }


def line_bytes(fields: dict[str, Any]) -> bytes:
    """Invert :func:`describe_line`: the exact bytes a transcript ``recv`` event stands for."""
    raw = fields.get("raw_b64")
    if isinstance(raw, str):
        return base64.b64decode(raw, validate=True)
    text = fields.get("line")
    if not isinstance(text, str):
        raise ValueError("transcript line event has neither line nor raw_b64")
    return text.encode("utf-8")


class ResponseReader:
    """Accumulates one session's output and hands out response lines.

    Feed it what the process wrote, in any chunking. stdout and stderr together may not exceed
    ``output_limit_bytes`` (the chunk that crosses the limit raises AgentFault). stdout is kept
    until a newline completes a response; bytes after that newline stay buffered and become the
    next response (or unsolicited stdout at EOF). Only the last ``stderr_tail_bytes`` of stderr
    are kept.
    """

    def __init__(self, output_limit_bytes: int, stderr_tail_bytes: int = 2048) -> None:
        if output_limit_bytes <= 0:
            raise ValueError("output limit must be positive")
        if stderr_tail_bytes < 0:
            raise ValueError("stderr tail size must not be negative")
        self._limit = output_limit_bytes
        self._tail_limit = stderr_tail_bytes
        self._stdout = bytearray()
        self._scan_from = 0
        self._stderr_tail = bytearray()
        self.stdout_bytes = 0
        """stdout bytes received so far."""
        self.stderr_bytes = 0
        """stderr bytes received so far."""

    @property
    def output_bytes(self) -> int:
        """stdout + stderr bytes received so far (what the output limit counts)."""
        return self.stdout_bytes + self.stderr_bytes

    def feed_stdout(self, chunk: bytes) -> None:
        self.stdout_bytes += len(chunk)
        self._stdout += chunk
        self._check_limit()

    def feed_stderr(self, chunk: bytes) -> None:
        self.stderr_bytes += len(chunk)
        if self._tail_limit:
            self._stderr_tail += chunk[-self._tail_limit:]
            del self._stderr_tail[:-self._tail_limit]
        self._check_limit()

    def _check_limit(self) -> None:
        if self.output_bytes > self._limit:
            raise AgentFault(OUTPUT_LIMIT_EXCEEDED)

    def has_line(self) -> bool:
        """True when a complete response line is buffered."""
        found = self._stdout.find(b"\n", self._scan_from)
        if found < 0:
            self._scan_from = len(self._stdout)
            return False
        return True

    def take_line(self) -> bytes | None:
        """Remove and return the first complete line (without ``\\n``), or None if there is none."""
        end = self._stdout.find(b"\n", self._scan_from)
        if end < 0:
            self._scan_from = len(self._stdout)
            return None
        line = bytes(self._stdout[:end])
        del self._stdout[:end + 1]
        self._scan_from = 0
        return line

    def pending_stdout(self) -> bytes:
        """stdout received but not yet taken as a response."""
        return bytes(self._stdout)

    def has_unsolicited_stdout(self) -> bool:
        """True when buffered stdout holds anything besides whitespace."""
        return bool(bytes(self._stdout).strip(_JSON_WHITESPACE))

    def stderr_tail(self) -> str:
        """The kept stderr tail decoded as UTF-8 with replacement."""
        return bytes(self._stderr_tail).decode("utf-8", errors="replace")
