"""Group a diff's changes so a reviewer reads causes, not rows (the ``groups`` block of diff.json).

Three groupings, all pure and deterministic over the two runs and the change rows:

- **Vanished and appeared**: a whole check (scorer, assertion, test), provider or case that is
  recorded on one side only is one line, not one ``removed``/``added`` row per case.
- **Clusters of blocking changes by a shared failure signature**: each blocking row gets one
  signature, the first that applies of
  1. the shape of the current output (JSON wrapped in a Markdown code fence; JSON that lacks a
     field the baseline's output had for the same case; output that is not JSON where the
     baseline's was);
  2. the failure text (error type and message, or the scorer's explanation), with numbers,
     quoted strings and long hex ids masked so "expected 3, got 4" and "expected 5, got 2"
     share a pattern;
  3. the change kind itself (``removed``, or no evidence recorded).
  Rows sharing a signature form a cluster with its count and members.

This groups and explains; it never changes the gate: ``gate_passed`` and ``blocking_changes``
are computed before and without it.
"""

from __future__ import annotations

import json
import re
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evalarc.formats.model import Run, SampleMeta
from evalarc.review.diff_model import (
    BLOCKING_KINDS,
    ChangeCluster,
    ChangeGroups,
    ChangeRow,
    ClusterMember,
    PresenceChange,
)
from evalarc.review.lazy import LazySequence
from evalarc.review.pairing import ChangeRows

GROUPS_NOTE = (
    "Clusters group blocking changes by a shared failure signature (output shape, error or "
    "explanation pattern); they explain the evidence and never change the gate."
)
SIGNATURE_CHARS = 160
"""A failure text is masked and cut to this many characters to form its signature."""
OUTPUT_SCAN_CHARS = 20_000
"""Only this much of an output is inspected for its shape (SampleMeta keeps at most this)."""

_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\r?\n(?P<body>[\s\S]*?)\r?\n?```\s*\Z")
_QUOTED = re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`")
_HEX = re.compile(r"\b(?=[0-9a-f]*[0-9])[0-9a-f]{8,}\b", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Signature:
    """Why one blocking row failed, as a short shared phrase."""

    basis: str
    """``output`` (output shape), ``failure`` (error or explanation text) or ``kind``."""
    text: str


@dataclass(frozen=True)
class Cluster:
    signature: Signature
    kind: str
    """The members' change kind when they share one, else ``mixed``."""
    members: Sequence[ClusterMember]


# --------------------------------------------------------------------------- signatures


def mask_text(text: str) -> str:
    """The pattern of a failure text: quoted strings, hex ids and numbers masked, spaces folded,
    cut to SIGNATURE_CHARS."""
    masked = _QUOTED.sub("'…'", text)
    masked = _HEX.sub("#", masked)
    masked = _NUMBER.sub("N", masked)
    masked = _SPACE.sub(" ", masked).strip()
    if len(masked) > SIGNATURE_CHARS:
        masked = masked[:SIGNATURE_CHARS] + "…"
    return masked


def _json_object(text: str) -> dict[str, Any] | None:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def fenced_json(text: str) -> bool:
    """Whether ``text`` is JSON wrapped in a Markdown code fence."""
    match = _FENCE.match(text[:OUTPUT_SCAN_CHARS])
    if match is None:
        return False
    body = match.group("body").strip()
    if not body.startswith(("{", "[")):
        return False
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


def output_shape(outputs: Sequence[str], baseline_outputs: Sequence[str]) -> str | None:
    """The shape problem of the current outputs against the baseline's, or None."""
    if not outputs:
        return None
    if any(fenced_json(text) for text in outputs):
        return "output: JSON wrapped in a Markdown code fence"
    base_objects = [obj for obj in map(_json_object, baseline_outputs) if obj is not None]
    if not base_objects:
        return None
    base_keys = set().union(*(obj.keys() for obj in base_objects))
    current_objects = [_json_object(text) for text in outputs]
    if any(obj is None for obj in current_objects):
        return "output: not a JSON object (the baseline's was)"
    missing: set[str] = set()
    for obj in current_objects:
        assert obj is not None
        missing |= base_keys - obj.keys()
    if missing:
        names = ", ".join(repr(name) for name in sorted(missing)[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        field = "field" if len(missing) == 1 else "fields"
        return f"output: JSON lacks the {field} {names}{more}"
    return None


def _outputs(samples: Sequence[SampleMeta], check: str, failing_only: bool) -> list[str]:
    texts: list[str] = []
    for meta in samples:
        if meta.output_text is None:
            continue
        verdict = meta.verdicts.get(check)
        if failing_only and verdict is True:
            continue
        texts.append(meta.output_text)
    return texts


def _failure_texts(row: ChangeRow) -> list[str]:
    texts: list[str] = []
    for attempt in row.detail("current"):
        if attempt.passed is True:
            continue
        evidence = attempt.evidence
        if evidence is not None and evidence.strip():
            texts.append(evidence)
    return texts


def signature_of(row: ChangeRow, baseline: Run, current: Run) -> Signature:
    """The one signature of a blocking change row (see the module docstring)."""
    kind = row.kind
    case_id, check = row.case_id, row.check
    if kind == "removed":
        return Signature("kind", "check no longer recorded")
    outputs = _outputs(current.samples.get(case_id, ()), check, failing_only=True)
    base_outputs = _outputs(baseline.samples.get(case_id, ()), check, failing_only=False)
    shape = output_shape(outputs, base_outputs)
    if shape is not None:
        return Signature("output", shape)
    patterns = Counter(mask_text(text) for text in _failure_texts(row))
    patterns.pop("", None)
    if patterns:
        # The most common pattern among the row's failing attempts; ties by text.
        text = min(patterns.items(), key=lambda item: (-item[1], item[0]))[0]
        return Signature("failure", text)
    return Signature("kind", f"{kind.replace('_', ' ')}, no evidence recorded")


class ClusterMembers(LazySequence[ClusterMember]):
    """The members of one cluster: positions into the diff's change rows, each member made from
    its row's key when read (a cluster of every vanished check holds four bytes per member)."""

    __slots__ = ("_positions", "_rows")

    def __init__(self, rows: ChangeRows, positions: array[int]) -> None:
        self._rows = rows
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    def _at(self, index: int) -> ClusterMember:
        return ClusterMember(*self._rows.key(self._positions[index]))


_REMOVED = Signature("kind", "check no longer recorded")


def cluster_changes(rows: ChangeRows, baseline: Run, current: Run) -> list[Cluster]:
    """Blocking rows grouped by signature: largest cluster first, then by signature text;
    members in row order."""
    grouped: dict[Signature, tuple[array[int], set[str]]] = {}
    for position, (_, _, kind) in enumerate(rows.row_keys()):
        if kind not in BLOCKING_KINDS:
            continue
        # A vanished check needs no evidence: its signature is its kind (no row is built).
        signature = (
            _REMOVED if kind == "removed" else signature_of(rows[position], baseline, current)
        )
        entry = grouped.get(signature)
        if entry is None:
            entry = grouped[signature] = (array("I"), set())
        entry[0].append(position)
        entry[1].add(kind)
    clusters = []
    for signature, (positions, kinds) in grouped.items():
        clusters.append(
            Cluster(
                signature,
                kinds.pop() if len(kinds) == 1 else "mixed",
                ClusterMembers(rows, positions),
            )
        )
    clusters.sort(key=lambda cluster: (-len(cluster.members), cluster.signature.text))
    return clusters


# --------------------------------------------------------------------------- presence


def _checks_of(run: Run) -> set[str]:
    return {check for checks in run.cases.values() for check in checks}


def _providers_of(run: Run) -> list[str]:
    providers = run.identity.get("providers")
    if not isinstance(providers, list):
        return []
    return sorted({str(name) for name in providers})


def presence_changes(rows: ChangeRows, baseline: Run, current: Run) -> Sequence[PresenceChange]:
    """Checks, providers and cases recorded on one side only, with the rows each accounts for."""
    found: list[PresenceChange] = []
    # One pass over the rows' keys (no row is built): counting per name by rescanning them made a
    # file of many one-sided cases quadratic (450,000 removed cases: hours).
    by_check: Counter[tuple[str, str]] = Counter()
    providers: dict[str, Counter[str]] = {"removed": Counter(), "added": Counter()}
    base_providers, cur_providers = _providers_of(baseline), _providers_of(current)
    suffixes = [(name, f" · {name}") for name in sorted(set(base_providers) ^ set(cur_providers))]
    for case_id, check, kind in rows.row_keys():
        if kind in ("removed", "added"):
            by_check[(kind, check)] += 1
            for name, suffix in suffixes:
                if case_id.endswith(suffix):
                    providers[kind][name] += 1
    base_checks, cur_checks = _checks_of(baseline), _checks_of(current)
    sided = (("vanished", "removed"), ("appeared", "added"))
    for side, kind in sided:
        only = base_checks - cur_checks if side == "vanished" else cur_checks - base_checks
        for name in sorted(only):
            found.append(PresenceChange("check", name, side, by_check[(kind, name)]))
    for side, names in (
        ("vanished", sorted(set(base_providers) - set(cur_providers))),
        ("appeared", sorted(set(cur_providers) - set(base_providers))),
    ):
        for name in names:
            kind = "removed" if side == "vanished" else "added"
            found.append(PresenceChange("provider", name, side, providers[kind][name]))
    vanished = OneSidedCases(baseline, current, "vanished")
    appeared = OneSidedCases(current, baseline, "appeared")
    return Joined(found, vanished, appeared)


class OneSidedCases(LazySequence[PresenceChange]):
    """The cases one run records and the other does not, in plain order, each with the number of
    rows it accounts for (every check of such a case is one ``removed`` or ``added`` row). Keeps
    only the list of ids; a line is made when read."""

    __slots__ = ("_ids", "_mine", "_side")

    def __init__(self, mine: Run, other: Run, side: str) -> None:
        self._mine = mine.cases
        self._side = side
        self._ids = [case_id for case_id in mine.cases if case_id not in other.cases]
        self._ids.sort()

    def __len__(self) -> int:
        return len(self._ids)

    def _at(self, index: int) -> PresenceChange:
        case_id = self._ids[index]
        return PresenceChange("case", case_id, self._side, len(self._mine[case_id]))


class Joined(LazySequence[PresenceChange]):
    """Several sequences read as one."""

    __slots__ = ("_parts",)

    def __init__(self, *parts: Sequence[PresenceChange]) -> None:
        self._parts = tuple(part for part in parts if len(part))

    def __len__(self) -> int:
        return sum(len(part) for part in self._parts)

    def __iter__(self) -> Iterator[PresenceChange]:
        for part in self._parts:
            yield from part

    def _at(self, index: int) -> PresenceChange:
        for part in self._parts:
            if index < len(part):
                return part[index]
            index -= len(part)
        raise IndexError("presence index out of range")


def change_groups(rows: ChangeRows, baseline: Run, current: Run) -> ChangeGroups:
    """The ``groups`` block of diff.json."""
    clusters = cluster_changes(rows, baseline, current)
    return ChangeGroups(
        blocking_checks=sum(len(cluster.members) for cluster in clusters),
        causes=len(clusters),
        clusters=tuple(
            ChangeCluster(
                signature=cluster.signature.text,
                basis=cluster.signature.basis,
                kind=cluster.kind,
                count=len(cluster.members),
                members=cluster.members,
            )
            for cluster in clusters
        ),
        presence=presence_changes(rows, baseline, current),
        note=GROUPS_NOTE,
    )
