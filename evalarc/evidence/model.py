"""The case-evidence model: what one side of one case shows in a case view.

A side is a list of titled sections; a section is a list of labelled texts. Readers (one per
result format, beside this module) fill it from a preserved input file; the diff page puts it
into evidence chunks. Every text is bounded: at most TEXT_BYTES bytes of UTF-8 are kept, and
the item says how long the full text was (the full text stays in the bundled input file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TEXT_BYTES = 4096
"""Bytes of one text kept in a case view; longer texts say "truncated at N bytes"."""
MAX_ITEMS = 120
"""Items kept per section (transcripts are the long ones); the rest are counted."""
COMPACT_CHARS = 100
"""A value whose JSON is at most this long is shown on one line, longer ones indented."""
MAX_SECTIONS = 48
"""Sections kept per side (epochs x scorers, repeats x assertions); the rest are counted."""


def cut_text(text: str, limit: int = TEXT_BYTES) -> tuple[str, int | None]:
    """``text`` cut to ``limit`` UTF-8 bytes at a character boundary, and its full byte length
    when it was cut (None when whole)."""
    if len(text) * 4 <= limit:
        return text, None  # fast path: even all 4-byte characters would fit
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, None
    kept = data[:limit].decode("utf-8", "ignore")
    return kept, len(data)


def as_text(value: object) -> str:
    """A value as display text: strings as they are, anything else as sorted JSON."""
    if isinstance(value, str):
        return value
    try:
        compact = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        if len(compact) <= COMPACT_CHARS:
            return compact
        return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1, default=str)
    except (ValueError, TypeError, RecursionError):
        return repr(value)


@dataclass(frozen=True, slots=True)
class Item:
    label: str
    text: str
    full_bytes: int | None = None
    """The full text's length in bytes when ``text`` was cut."""
    pre: bool = False
    """Shown as preformatted text (code, tracebacks, JSON)."""
    mark: str = ""
    """``diverge`` on the first transcript step where the two sides differ."""
    same: str | None = None
    """What a divergence compares when it is not ``label`` + ``text``: the value without its
    usage and timing fields (:func:`without_usage`); never written to the page."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"l": self.label, "t": self.text}
        if self.full_bytes is not None:
            data["cut"] = self.full_bytes
        if self.pre:
            data["pre"] = 1
        if self.mark:
            data["mark"] = self.mark
        return data


USAGE_KEYS = frozenset(
    {
        "usage",
        "model_usage",
        "role_usage",
        "timestamp",
        "created",
        "completed",
        "started",
        "time",
        "duration",
        "elapsed",
        "latency",
        "working_start",
        "cost",
        "total_cost",
    }
)
"""Keys of usage and timing figures: two runs of the same steps differ in them alone."""
USAGE_SUFFIXES = ("_tokens", "_time", "_at", "_ms", "_seconds", "_cost")


def is_usage_key(key: object) -> bool:
    """A token count, cost, duration or timestamp field, by its name."""
    return isinstance(key, str) and (key in USAGE_KEYS or key.endswith(USAGE_SUFFIXES))


def without_usage(value: object) -> object:
    """``value`` with every usage and timing field (:func:`is_usage_key`) left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_usage(v) for k, v in value.items() if not is_usage_key(k)}
    if isinstance(value, list):
        return [without_usage(v) for v in value]
    return value


def item(label: str, value: object, *, pre: bool = False, compared: bool = False) -> Item:
    """One labelled text; ``compared``: a transcript step, whose usage and timing fields a
    divergence ignores."""
    text, full = cut_text(as_text(value))
    same = None
    if compared and isinstance(value, dict | list):
        kept = without_usage(value)
        if kept != value:
            same = cut_text(as_text(kept))[0]
    return Item(label, text, full, pre or not isinstance(value, str), same=same)


@dataclass(slots=True)
class Section:
    title: str
    tone: str = ""
    """``ok``, ``bad``, ``warn`` or empty."""
    kind: str = ""
    """``transcript`` for the steps compared across sides; empty otherwise."""
    items: list[Item] = field(default_factory=list)
    dropped: int = 0
    """Items beyond MAX_ITEMS that were not kept."""
    attempt: str = ""
    """Which attempt a transcript is (``epoch 2``), for the pairing of a divergence."""
    passed: bool | None = None
    """That attempt's verdict (None: unknown or unassessed); not written to the page."""

    def add(self, label: str, value: object, *, pre: bool = False) -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        if len(self.items) >= MAX_ITEMS:
            self.dropped += 1
            return
        self.items.append(item(label, value, pre=pre, compared=self.kind == "transcript"))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"title": self.title, "items": [i.to_json() for i in self.items]}
        if self.tone:
            data["tone"] = self.tone
        if self.kind:
            data["kind"] = self.kind
        if self.dropped:
            data["dropped"] = self.dropped
        return data


@dataclass(slots=True)
class SideEvidence:
    """One case as one input file records it."""

    sections: list[Section] = field(default_factory=list)
    dropped: int = 0

    def add(self, section: Section) -> None:
        if len(self.sections) >= MAX_SECTIONS:
            self.dropped += 1
            return
        self.sections.append(section)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"sections": [s.to_json() for s in self.sections]}
        if self.dropped:
            data["dropped"] = self.dropped
        return data


CaseEvidence = dict[str, SideEvidence]
"""Case id -> its evidence in one input file."""


DIVERGENCE_PAIRING = (
    "A case view marks the first transcript step where a baseline attempt that passed and a "
    "current attempt that failed differ (the same epoch where its verdict changed, else the "
    "first of each; for an improvement the reverse), ignoring token counts, costs, durations "
    "and timestamps."
)
"""The pairing :func:`mark_divergence` makes, in one sentence for the page."""


def _step(section: Section, index: int) -> tuple[str, str] | None:
    if index >= len(section.items):
        return None
    step = section.items[index]
    return step.label, step.text if step.same is None else step.same


def _first_changed(before: list[Section], after: list[Section]) -> tuple[Section, Section] | None:
    """A ``before`` attempt that passed and an ``after`` attempt that did not: the first
    ``after`` attempt that failed whose epoch passed before, else the first of each."""
    passed = [section for section in before if section.passed is True]
    failed = [section for section in after if section.passed is False]
    if not passed or not failed:
        return None
    for section in failed:
        same = next((other for other in passed if other.attempt == section.attempt), None)
        if same is not None:
            return same, section
    return passed[0], failed[0]


def pair_attempts(
    baseline: list[Section], current: list[Section]
) -> tuple[Section, Section] | None:
    """The (baseline, current) transcripts a divergence compares (see DIVERGENCE_PAIRING):
    a verdict that fell, else one that rose, else the first transcript of each side."""
    fell = _first_changed(baseline, current)
    if fell is not None:
        return fell
    rose = _first_changed(current, baseline)
    if rose is not None:
        return rose[1], rose[0]
    if baseline and current:
        return baseline[0], current[0]
    return None


def mark_divergence(baseline: SideEvidence | None, current: SideEvidence | None) -> None:
    """Mark the first transcript step where the paired attempts differ (label, and text without
    usage and timing fields), on both sides.

    The attempts are paired by :func:`pair_attempts` (DIVERGENCE_PAIRING says how, on the page);
    a side that ends early diverges at its length (the other side's next step is marked). When
    the two marked attempts are different epochs, each marked step's label names the other."""
    if baseline is None or current is None:
        return
    pair = pair_attempts(
        [s for s in baseline.sections if s.kind == "transcript"],
        [s for s in current.sections if s.kind == "transcript"],
    )
    if pair is None:
        return
    base, cur = pair
    for index in range(max(len(base.items), len(cur.items))):
        left, right = _step(base, index), _step(cur, index)
        if left is not None and left == right:
            continue
        others = (("current", cur), ("baseline", base))
        for section, (role, other) in zip((base, cur), others, strict=True):
            if index >= len(section.items):
                continue
            step = section.items[index]
            label = step.label
            if other.attempt and other.attempt != section.attempt:
                label = f"{label} · compared with {role} {other.attempt}"
            section.items[index] = Item(
                label, step.text, step.full_bytes, step.pre, "diverge", step.same
            )
        return
