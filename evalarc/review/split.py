"""Held-out case splits (read by :mod:`evalarc.formats.split`): partition cases, judge
generalization.

A split names the cases that were never used while tuning. Comparing the pooled pass rate of the
held-out cases with that of the tuning cases tells whether a gain carries over to unseen cases or
only fits the ones the tuner looked at.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from typing import Any

from evalarc.errors import InputError
from evalarc.formats.model import Run
from evalarc.formats.split import CaseSplit
from evalarc.review.stats import intervals_overlap, wilson_interval

_GLOB_CHARS = frozenset("*?[")
# The blocking kinds of evalarc.review.diff (which imports this module, hence the copy).
_BLOCKING = frozenset({"regressed", "less_reliable", "unassessed", "less_covered", "removed"})

GENERALIZATION_STATES = (
    "held_out_regressions",
    "generalizes",
    "overfitting_signal",
    "held_out_gain_within_noise",
    "no_measurable_gain",
)
EXPLANATIONS = {
    "held_out_regressions": (
        "At least one held-out check lost passes or coverage, so the change does not carry over "
        "to cases it was not tuned on."
    ),
    "generalizes": (
        "The held-out cases improved by more than sampling noise, so the gain carries over to "
        "cases that were not used for tuning."
    ),
    "overfitting_signal": (
        "The tuning cases improved beyond sampling noise but the held-out cases did not, which "
        "is the pattern of a change fitted to the cases it was tuned on."
    ),
    "held_out_gain_within_noise": (
        "The held-out pass rate rose, but by less than sampling noise; record more attempts or "
        "cases before counting it as a gain."
    ),
    "no_measurable_gain": "The held-out pass rate did not rise.",
}
GENERALIZATION_SCOPE = (
    "Partitions pool every recorded attempt of their cases. The split only helps when the "
    "held-out cases were truly kept away from whoever tuned the system; EvalArc cannot check "
    "that beyond the optional harness leakage scan."
)


def _is_glob(entry: str) -> bool:
    return any(char in _GLOB_CHARS for char in entry)


def partition(split: CaseSplit, case_ids: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split ``case_ids`` into (held-out, tuning), both sorted.

    Entries with ``* ? [`` are case-sensitive globs, others exact ids. Every entry must match a
    recorded case, and at least one case must remain for tuning (InputError otherwise).
    """
    cases = sorted(set(case_ids))
    known = set(cases)
    held: set[str] = set()
    unmatched: list[str] = []
    globs: list[str] = []
    for entry in split.held_out:
        if _is_glob(entry):
            globs.append(entry)
        elif entry in known:
            held.add(entry)
        else:
            unmatched.append(entry)
    if globs:
        held |= _glob_members(globs, cases, unmatched)
    if unmatched:
        missing = set(unmatched)
        first = next(entry for entry in split.held_out if entry in missing)
        raise InputError(
            f"{split.source.name}: held_out entry {first[:80]!r} matches no recorded case"
        )
    if len(held) == len(cases):
        raise InputError(
            f"{split.source.name}: every case is held out; leave at least one case for tuning"
        )
    held_out_ids = [case for case in cases if case in held]
    tuning_ids = [case for case in cases if case not in held]
    return held_out_ids, tuning_ids


def _glob_members(globs: list[str], cases: list[str], unmatched: list[str]) -> set[str]:
    """Cases matched by any glob; appends globs matching nothing to ``unmatched``.

    One combined pattern finds the members in a single pass; the group that matched marks its
    glob as used. Only globs never credited that way are retried on their own.
    """
    patterns = [fnmatch.translate(glob) for glob in globs]
    combined = re.compile(
        "|".join(f"(?P<g{index}>{pattern})" for index, pattern in enumerate(patterns))
    )
    members: set[str] = set()
    used: set[int] = set()
    for case in cases:
        match = combined.match(case)
        if match is not None:
            members.add(case)
            if match.lastgroup is not None:
                used.add(int(match.lastgroup[1:]))
    for index, glob in enumerate(globs):
        if index in used:
            continue
        single = re.compile(patterns[index])
        if not any(single.match(case) for case in members):
            unmatched.append(glob)
    return members


def _pool(run: Run, case_ids: Sequence[str]) -> dict[str, Any]:
    passed = assessed = attempts = 0
    for case_id in case_ids:
        for check_attempts in run.cases.get(case_id, {}).values():
            attempts += len(check_attempts)
            for attempt in check_attempts:
                if attempt.passed is None:
                    continue
                assessed += 1
                passed += attempt.passed is True
    return {
        "passed": passed,
        "assessed": assessed,
        "attempts": attempts,
        "pass_rate": passed / assessed if assessed else None,
    }


def _partition_review(
    case_ids: Sequence[str], baseline: Run, current: Run, blocking: int
) -> dict[str, Any]:
    base = _pool(baseline, case_ids)
    cur = _pool(current, case_ids)
    delta = (
        cur["pass_rate"] - base["pass_rate"]
        if base["pass_rate"] is not None and cur["pass_rate"] is not None
        else None
    )
    overlap = intervals_overlap(
        wilson_interval(base["passed"], base["assessed"]),
        wilson_interval(cur["passed"], cur["assessed"]),
    )
    return {
        "cases": len(case_ids),
        "baseline": base,
        "current": cur,
        "delta": delta,
        "within_sampling_noise": overlap,
        "improved_beyond_noise": delta is not None and delta > 0 and not overlap,
        "blocking_changes": blocking,
    }


def generalization_state(tuning: dict[str, Any], held_out: dict[str, Any]) -> str:
    """The first matching state, from worst (held-out regressions) to no gain."""
    if held_out["blocking_changes"] > 0:
        return "held_out_regressions"
    if held_out["improved_beyond_noise"]:
        return "generalizes"
    if tuning["improved_beyond_noise"]:
        return "overfitting_signal"
    if held_out["delta"] is not None and held_out["delta"] > 0:
        return "held_out_gain_within_noise"
    return "no_measurable_gain"


def review_generalization(
    diff_rows: Sequence[dict[str, Any]], baseline: Run, current: Run, split: CaseSplit
) -> dict[str, Any]:
    """The ``generalization`` object of diff.json: pooled tuning vs held-out rates and a state."""
    held_out_ids, tuning_ids = partition(split, baseline.cases.keys() | current.cases.keys())
    held = set(held_out_ids)
    held_blocking = tuning_blocking = 0
    for row in diff_rows:
        if row["kind"] not in _BLOCKING:
            continue
        if row["case_id"] in held:
            held_blocking += 1
        else:
            tuning_blocking += 1
    tuning = _partition_review(tuning_ids, baseline, current, tuning_blocking)
    held_out = _partition_review(held_out_ids, baseline, current, held_blocking)
    state = generalization_state(tuning, held_out)
    return {
        "split": {
            "source": split.source.to_json(),
            "description": split.description,
            "entries": list(split.held_out),
            "held_out_cases": held_out_ids,
        },
        "partitions": {"tuning": tuning, "held_out": held_out},
        "state": state,
        "explanation": EXPLANATIONS[state],
        "scope": GENERALIZATION_SCOPE,
    }
