"""Harness leakage: find case inputs or expected answers copied verbatim into harness files.

A prompt or scaffold that contains a case's own text can make that case pass without any real
capability, and a held-out case found there is no longer held out. :func:`collect_harness` reads
the files (the only I/O here); :func:`scan_leakage` is the pure scan over bytes already read.

Needles and files are compared in one folded form (:func:`normalize_text`): Unicode
compatibility forms folded (NFKC: a fullwidth ``Ｃａｐｉｔａｌ`` reads ``Capital``, a ligature its
letters), every format character dropped (Unicode category Cf: zero-width spaces and joiners,
soft hyphens, bidi controls, the BOM), whitespace runs made one space, and case folded. A copy
salted with invisible characters or typed in fullwidth letters is therefore still found; such a
copy is what someone hiding a leak from a verbatim scan would write.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evalarc.errors import UsageError
from evalarc.formats.harness import HarnessFile
from evalarc.formats.model import Run

MIN_LEAK_CHARS = 4
"""The shortest ``--leak-min-chars`` accepted; shorter needles match almost anything."""
MAX_HITS = 200
"""Hits listed in a report; the rest are counted only through ``truncated``."""
HIT_TEXT_CHARS = 160

# Up to this many needles a C-speed find per needle beats one Python-level pass over the text.
_DIRECT_SEARCH_NEEDLES = 256

LEAKAGE_SCOPE = (
    "The scan looks for case inputs and expected answers copied verbatim, ignoring case, "
    "whitespace, invisible format characters and Unicode compatibility forms (NFKC), into the "
    "harness files. Paraphrased, translated or encoded copies are not found, and a hit on a "
    "short, common text can be a coincidence."
)

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def normalize_text(text: str) -> str:
    """The form needles and files share: NFKC, format characters (Cf) dropped, whitespace runs
    to one space, trimmed, casefolded (see the module docstring)."""
    if not text.isascii():
        # Cf dropped before NFKC (a joiner between a letter and a combining mark must not block
        # their composition) and again after it, so the result holds none whatever NFKC yields.
        text = _drop_format(unicodedata.normalize("NFKC", _drop_format(text)))
    return " ".join(text.split()).casefold()


def _drop_format(text: str) -> str:
    """``text`` without its format characters (Unicode category Cf)."""
    table = {
        ord(char): None
        for char in set(_NON_ASCII.findall(text))
        if unicodedata.category(char) == "Cf"
    }
    return text.translate(table) if table else text


@dataclass(frozen=True, slots=True)
class _Owner:
    case_id: str
    role: str
    text: str


def _needles(runs: Sequence[Run], min_chars: int) -> tuple[dict[str, list[_Owner]], int]:
    """Normalized needle -> owners, and how many distinct owners qualified."""
    by_needle: dict[str, list[_Owner]] = {}
    seen: set[_Owner] = set()
    for run in runs:
        for case_id in sorted(run.material):
            for material in run.material[case_id]:
                owner = _Owner(case_id, material.role, material.text)
                if owner in seen:
                    continue
                seen.add(owner)
                needle = normalize_text(material.text)
                if len(needle) >= min_chars:
                    by_needle.setdefault(needle, []).append(owner)
    considered = sum(len(owners) for owners in by_needle.values())
    return by_needle, considered


@dataclass(frozen=True, slots=True)
class _NormalizedFile:
    """A file's normalized text with the span of each non-blank line inside it."""

    text: str
    starts: list[int]
    ends: list[int]
    line_numbers: list[int]


def _normalize_file(text: str) -> _NormalizedFile:
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    numbers: list[int] = []
    offset = 0
    for number, line in enumerate(text.splitlines(), start=1):
        normalized = normalize_text(line)
        if not normalized:
            continue
        if parts:
            offset += 1  # the joining space
        starts.append(offset)
        offset += len(normalized)
        ends.append(offset)
        numbers.append(number)
        parts.append(normalized)
    # Every line break is whitespace, so this equals normalize_text(text).
    return _NormalizedFile(" ".join(parts), starts, ends, numbers)


def _first_line(needle: str, document: _NormalizedFile, position: int) -> int | None:
    """The first 1-based line that holds the whole needle, searching from its first occurrence
    at ``position``; None when every occurrence spans lines."""
    while position != -1:
        index = bisect_right(document.starts, position) - 1
        if index >= 0 and position + len(needle) <= document.ends[index]:
            return document.line_numbers[index]
        position = document.text.find(needle, position + 1)
    return None


class _AnchorIndex:
    """Finds many needles in one pass over a text.

    Each needle is filed under one ``width``-character anchor taken from it, the one shared by
    the fewest other needles among a few sampled positions, so needles built from one template
    ("What is the capital of ...") still get distinct anchors. One slide over the text looks up
    each window and checks the needles filed there in place.
    """

    _SAMPLES = 8

    def __init__(self, needles: Iterable[str], width: int) -> None:
        self.width = width
        sampled: dict[str, list[tuple[str, int]]] = {}
        frequency: Counter[str] = Counter()
        for needle in needles:
            last = len(needle) - width
            offsets = sorted({last * step // (self._SAMPLES - 1) for step in range(self._SAMPLES)})
            grams = [(needle[offset : offset + width], offset) for offset in offsets]
            sampled[needle] = grams
            frequency.update({gram for gram, _ in grams})
        self.anchors: dict[str, list[tuple[str, int]]] = {}
        for needle, grams in sampled.items():
            gram, offset = min(grams, key=lambda item: (frequency[item[0]], item[1]))
            self.anchors.setdefault(gram, []).append((needle, offset))

    def first_positions(self, text: str) -> dict[str, int]:
        """Needle -> index of its first occurrence in ``text``, for the needles present."""
        found: dict[str, int] = {}
        anchors = self.anchors
        width = self.width
        for position in range(len(text) - width + 1):
            filed = anchors.get(text[position : position + width])
            if filed is None:
                continue
            for needle, offset in filed:
                start = position - offset
                if start >= 0 and needle not in found and text.startswith(needle, start):
                    found[needle] = start
        return found


def _first_positions(
    text: str, needles: Iterable[str], index: _AnchorIndex | None
) -> dict[str, int]:
    """Needle -> first occurrence in ``text``: C-speed ``find`` per needle for a few needles,
    the one-pass anchor index for many (a ``find`` per needle would be quadratic)."""
    if index is not None:
        return index.first_positions(text)
    found: dict[str, int] = {}
    for needle in needles:
        position = text.find(needle)
        if position != -1:
            found[needle] = position
    return found


def _hit_order(hit: dict[str, Any]) -> tuple[Any, ...]:
    line = hit["line"]
    return (
        hit["partition"] != "held_out",
        hit["file"],
        line is None,
        line or 0,
        hit["case_id"],
        hit["role"],
        hit["text"],
    )


def _cut(text: str) -> str:
    return text[:HIT_TEXT_CHARS] + "…" if len(text) > HIT_TEXT_CHARS else text


def scan_leakage(
    runs: Sequence[Run],
    files: Sequence[HarnessFile],
    min_chars: int,
    held_out: frozenset[str] | None,
) -> dict[str, Any]:
    """The ``leakage`` object: every case text of ``runs`` (normalized length >= ``min_chars``)
    found in a harness file, held-out hits first, at most 200 listed. Non-UTF-8 files are not
    scanned."""
    if isinstance(min_chars, bool) or min_chars < MIN_LEAK_CHARS:
        raise UsageError(f"--leak-min-chars must be at least {MIN_LEAK_CHARS}")
    by_needle, considered = _needles(runs, min_chars)
    index = _AnchorIndex(by_needle, min_chars) if len(by_needle) > _DIRECT_SEARCH_NEEDLES else None

    scanned: list[dict[str, Any]] = []
    hits: list[dict[str, Any]] = []
    found_total = 0
    for harness_file in files:
        try:
            text = harness_file.data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        scanned.append(
            {
                "path": harness_file.label,
                "sha256": harness_file.sha256,
                "bytes": len(harness_file.data),
            }
        )
        if not by_needle:
            continue
        document = _normalize_file(text)
        positions = _first_positions(document.text, by_needle, index)
        for needle, owners in by_needle.items():
            if needle not in positions:
                continue
            line = _first_line(needle, document, positions[needle])
            for owner in owners:
                partition = None
                if held_out is not None:
                    partition = "held_out" if owner.case_id in held_out else "tuning"
                hits.append(
                    {
                        "file": harness_file.label,
                        "file_sha256": harness_file.sha256,
                        "line": line,
                        "case_id": owner.case_id,
                        "partition": partition,
                        "role": owner.role,
                        "text": _cut(owner.text),
                    }
                )
                found_total += 1
        if len(hits) > 8 * MAX_HITS:
            # Keep memory bounded however many hits a large harness produces.
            hits.sort(key=_hit_order)
            del hits[MAX_HITS:]
    hits.sort(key=_hit_order)
    del hits[MAX_HITS:]
    return {
        "files_scanned": scanned,
        "materials_considered": considered,
        "min_chars": min_chars,
        "hits": hits,
        "held_out_hits": sum(1 for hit in hits if hit["partition"] == "held_out"),
        "truncated": found_total > MAX_HITS,
        "scope": LEAKAGE_SCOPE,
    }
