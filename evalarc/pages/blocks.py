"""The building blocks every page model shares, defined once: cards, facts, check chips, triage
rows and the few number and word formats more than one page uses.

Their markup is defined once too, as macros in ``site_templates/_blocks.html.j2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Card:
    """One figure of a page's card row."""

    value: str
    label: str
    alert: bool = False
    """Drawn as an alert: the figure is the reason the verdict is not a pass."""


@dataclass(frozen=True)
class Fact:
    """One labelled value (reproduction records, a call's arguments, a mismatch)."""

    label: str
    value: str


@dataclass(frozen=True)
class CheckChip:
    """One check's outcome as a badge."""

    name: str
    outcome: str
    """``pass``, ``fail`` or ``unassessed``."""
    tone: str


@dataclass(frozen=True)
class TriageRow:
    """One case that needs attention, its category, its checks and what to do next."""

    case_id: str
    category: str
    checks: str
    next_step: str


def check_outcome(value: object) -> tuple[str, str]:
    """A check's recorded value as its outcome word and tone: ``True`` passes, ``False``
    fails and anything else (``None``) is unassessed."""
    if value is True:
        return "pass", "ok"
    if value is False:
        return "fail", "bad"
    return "unassessed", "warn"


def check_chips(checks: object) -> list[CheckChip]:
    """A ``{check: true | false | null}`` mapping as chips, in its order (none otherwise)."""
    if not isinstance(checks, Mapping):
        return []
    return [CheckChip(str(name), *check_outcome(value)) for name, value in checks.items()]


def score_text(value: float | None) -> str:
    """A score to four decimals; ``unavailable`` when there is none."""
    return "unavailable" if value is None else f"{value:.4f}"


def plural(count: int, word: str, plural_word: str | None = None) -> str:
    """``1 restart``, ``2 restarts``; ``plural_word`` for irregular plurals."""
    return f"{count} {word if count == 1 else (plural_word or word + 's')}"
