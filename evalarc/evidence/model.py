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

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"l": self.label, "t": self.text}
        if self.full_bytes is not None:
            data["cut"] = self.full_bytes
        if self.pre:
            data["pre"] = 1
        if self.mark:
            data["mark"] = self.mark
        return data


def item(label: str, value: object, *, pre: bool = False) -> Item:
    text, full = cut_text(as_text(value))
    return Item(label, text, full, pre or not isinstance(value, str))


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

    def add(self, label: str, value: object, *, pre: bool = False) -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        if len(self.items) >= MAX_ITEMS:
            self.dropped += 1
            return
        self.items.append(item(label, value, pre=pre))

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


def mark_divergence(baseline: SideEvidence | None, current: SideEvidence | None) -> None:
    """Mark the first transcript step where the two sides differ (label or text), on both.

    Compares the first transcript section of each side step by step; a side that ends early
    diverges at its length (the other side's next step is marked)."""
    if baseline is None or current is None:
        return
    base = next((s for s in baseline.sections if s.kind == "transcript"), None)
    cur = next((s for s in current.sections if s.kind == "transcript"), None)
    if base is None or cur is None:
        return
    for index in range(max(len(base.items), len(cur.items))):
        left = base.items[index] if index < len(base.items) else None
        right = cur.items[index] if index < len(cur.items) else None
        if (
            left is not None
            and right is not None
            and (left.label, left.text)
            == (
                right.label,
                right.text,
            )
        ):
            continue
        for section, step in ((base, left), (cur, right)):
            if step is not None:
                section.items[index] = Item(
                    step.label, step.text, step.full_bytes, step.pre, "diverge"
                )
        return
