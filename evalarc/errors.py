"""One exception hierarchy; the CLI turns each into ``evalarc: <message>`` and an exit code.

Candidate failures are data (``failed``/``agent_error`` in reports), not exceptions. These
exceptions are for input EvalArc cannot use and for environments it cannot run in.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes shared by every command."""

    ACCEPTED = 0
    """The evidence is valid and the decision is yes (gate passed, records consistent, ...)."""
    REJECTED = 1
    """The evidence is valid but the decision is no (a check lost passes, a fault survived, ...)."""
    INVALID = 2
    """Invalid input, incomparable inputs, or an environment failure."""
    CANCELLED = 130
    """Interrupted by the user (Ctrl-C)."""


class EvalArcError(Exception):
    """Base of every error EvalArc reports to its user; the message is one line."""

    exit_code: ExitCode = ExitCode.INVALID

    def __init__(self, message: str) -> None:
        super().__init__(_one_line(message))

    @property
    def message(self) -> str:
        return str(self)


class InputError(EvalArcError):
    """An input file (result log, split, report folder, site, candidate) is unusable."""


class UsageError(EvalArcError):
    """Options that cannot work together or are out of range."""


class IncomparableError(EvalArcError):
    """Two inputs are individually valid but cannot be compared with each other."""


class OutputError(EvalArcError):
    """An output location is unusable (exists already, not writable, disk full)."""


class EnvironmentFailure(EvalArcError):
    """The infrastructure (Docker engine, image, filesystem) failed."""


class VerificationError(EvalArcError):
    """Saved evidence contradicts itself or its inputs, or is unsafe to read."""


def _one_line(message: str) -> str:
    """Fold a message onto one line so a hostile file name cannot forge log lines."""
    return " ".join(message.replace("\r", " ").replace("\n", " ").split()) or "unknown error"
