"""Pair every (case, check) of two runs and classify each pair's change (the rows of diff.json).

Each side of a pair gets a :class:`Tally`; one ordered rule list (:func:`classify`) turns the two
tallies into a change kind. :func:`pair_checks` makes one pass over both runs and returns the
counts of every kind, the header's row counts and the change rows as a :class:`ChangeRows`
sequence, which keeps three small fields per row and builds each row when it is read. Pure: reads
only the in-memory model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from evalarc.canonical import JSONValue
from evalarc.formats.model import Attempt, Run
from evalarc.review.diff_model import (
    BLOCKING_KINDS,
    KIND_ORDER,
    AttemptDetail,
    ChangeRow,
    SideTally,
)
from evalarc.review.lazy import LazySequence
from evalarc.review.natural import natural_sort
from evalarc.review.stats import intervals_overlap, wilson_interval

_KIND_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}
_KEPT = 4096
"""Entries each cache of repeats here may hold (check-name orders, tallies)."""


@dataclass(frozen=True, slots=True)
class Tally:
    """One side of one (case, check): passes, assessed attempts and all attempts."""

    passed: int
    assessed: int
    attempts: int
    covered: int | None = None
    """Assessed runs when some attempts are reruns of a failed attempt (JUnit rerun plugins):
    a test retried until it passed was covered once, not once per try. None: every attempt is
    its own run, so coverage is ``assessed``."""

    @property
    def coverage(self) -> int:
        return self.assessed if self.covered is None else self.covered

    def counts(self) -> SideTally:
        """The side as diff.json records it (``covered`` is not recorded)."""
        return SideTally(self.passed, self.assessed, self.attempts)

    def to_json(self) -> dict[str, int]:
        return self.counts().to_json()


_TALLIES: dict[tuple[int, int, int, int | None], Tally] = {}


def tally(attempts: Sequence[Attempt]) -> Tally:
    """Count passes and assessed attempts (``passed is None`` is unassessed)."""
    passed = 0
    assessed = 0
    runs = 0
    run_assessed = False
    reruns = False
    for attempt in attempts:
        if attempt.rerun:
            reruns = True
        else:
            runs += run_assessed
            run_assessed = False
        if attempt.passed is None:
            continue
        assessed += 1
        run_assessed = True
        if attempt.passed:
            passed += 1
    runs += run_assessed
    covered = runs if reruns else None
    # Tallies repeat across checks (1 of 1, 0 of 1, ...): each is made once and shared.
    key = (passed, assessed, len(attempts), covered)
    found = _TALLIES.get(key)
    if found is None:
        found = Tally(passed=passed, assessed=assessed, attempts=len(attempts), covered=covered)
        if len(_TALLIES) < _KEPT:
            _TALLIES[key] = found
    return found


def _rate_below(lower: Tally, upper: Tally) -> bool:
    """Exact ``rate(lower) < rate(upper)`` where a rate is passed/assessed, 0 when nothing was
    assessed (cross-multiplied so large counts cannot round two different rates together)."""
    lower_den = lower.assessed or 1
    upper_den = upper.assessed or 1
    return lower.passed * upper_den < upper.passed * lower_den


def classify(baseline: Tally | None, current: Tally | None) -> str | None:
    """The change kind of one (case, check), or None when it is unchanged.

    The first matching rule wins; the order is part of the contract (spec 2.3).
    """
    if baseline is None:
        return "added"
    if current is None:
        return "removed"
    if baseline.passed >= 1 and current.assessed == 0:
        return "unassessed"
    if _rate_below(current, baseline):
        return "regressed" if current.passed == 0 else "less_reliable"
    if current.coverage < baseline.coverage:
        return "less_covered"
    if _rate_below(baseline, current):
        return "improved"
    return None


def within_sampling_noise(baseline: Tally | None, current: Tally | None) -> bool | None:
    """The descriptive noise flag of a change row; None when it does not apply.

    It needs both sides and more than one assessed attempt on at least one of them. A clean
    swing (no side varies between attempts) is never noise; otherwise the Wilson intervals decide.
    """
    if baseline is None or current is None:
        return None
    if baseline.assessed <= 1 and current.assessed <= 1:
        return None
    varies = 0 < baseline.passed < baseline.assessed or 0 < current.passed < current.assessed
    if not varies:
        return False
    return intervals_overlap(
        wilson_interval(baseline.passed, baseline.assessed),
        wilson_interval(current.passed, current.assessed),
    )


def same_output_different_verdict(*sides: Sequence[Attempt]) -> int:
    """How many recorded outputs (by SHA-256) were graded both pass and fail across ``sides``."""
    verdicts: dict[str, set[bool]] = {}
    for attempts in sides:
        for attempt in attempts:
            if attempt.output_sha256 is None or attempt.passed is None:
                continue
            verdicts.setdefault(attempt.output_sha256, set()).add(attempt.passed)
    return sum(1 for seen in verdicts.values() if len(seen) == 2)


def _detail(attempt: Attempt) -> AttemptDetail:
    return AttemptDetail(attempt.passed, attempt.value, attempt.evidence)


def attempt_detail(attempts: Sequence[Attempt]) -> tuple[AttemptDetail, ...]:
    """The attempts a reader should look at: every non-passing one, else the first attempt."""
    failing = tuple(_detail(attempt) for attempt in attempts if attempt.passed is not True)
    if failing:
        return failing
    return (_detail(attempts[0]),) if attempts else ()


def _change_row(
    case_id: str,
    check: str,
    kind: str,
    baseline: Sequence[Attempt] | None,
    current: Sequence[Attempt] | None,
    baseline_tally: Tally | None,
    current_tally: Tally | None,
) -> ChangeRow:
    return ChangeRow(
        case_id=case_id,
        check=check,
        kind=kind,
        baseline=baseline_tally.counts() if baseline_tally else None,
        baseline_detail=attempt_detail(baseline) if baseline else None,
        current=current_tally.counts() if current_tally else None,
        current_detail=attempt_detail(current) if current else None,
        within_sampling_noise=within_sampling_noise(baseline_tally, current_tally),
        same_output_different_verdict=same_output_different_verdict(baseline or (), current or ()),
    )


@dataclass(frozen=True, slots=True)
class Pairing:
    """Every (case, check) of two runs compared: the tally of each change kind plus
    ``unchanged``, the listed rows, and the row counts the report's header states."""

    counts: dict[str, int]
    rows: ChangeRows
    blocking: int
    blocking_within_sampling_noise: int
    same_output_different_verdict: int


class ChangeRows(LazySequence[ChangeRow]):
    """The change rows of a diff, sorted by kind order, then case and check in natural order.

    A row is built from the two runs each time it is read: only its case id, check name and kind
    are kept (two references and a byte), so a diff of hundreds of thousands of changed checks
    holds a few bytes per row instead of the rows themselves."""

    __slots__ = ("_baseline", "_cases", "_checks", "_current", "_kinds")

    def __init__(
        self,
        baseline: Run,
        current: Run,
        cases: list[str],
        checks: list[str],
        kinds: bytearray,
    ) -> None:
        self._baseline = baseline
        self._current = current
        self._cases = cases
        self._checks = checks
        self._kinds = kinds

    def __len__(self) -> int:
        return len(self._kinds)

    @property
    def runs(self) -> tuple[Run, Run]:
        """The baseline and current runs the rows were paired from."""
        return self._baseline, self._current

    def key(self, index: int) -> tuple[str, str]:
        """The (case id, check) of row ``index``, without building the row."""
        return self._cases[index], self._checks[index]

    def kind(self, index: int) -> str:
        return KIND_ORDER[self._kinds[index]]

    def row_keys(self) -> Iterator[tuple[str, str, str]]:
        """(case id, check, kind) of every row in order, without building the rows."""
        return zip(
            self._cases, self._checks, (KIND_ORDER[rank] for rank in self._kinds), strict=True
        )

    def _at(self, index: int) -> ChangeRow:
        case_id, check = self._cases[index], self._checks[index]
        base_attempts = _attempts(self._baseline, case_id, check)
        cur_attempts = _attempts(self._current, case_id, check)
        return _change_row(
            case_id,
            check,
            KIND_ORDER[self._kinds[index]],
            base_attempts,
            cur_attempts,
            tally(base_attempts) if base_attempts is not None else None,
            tally(cur_attempts) if cur_attempts is not None else None,
        )


def pair_row(baseline: Run, current: Run, case_id: str, check: str) -> ChangeRow | None:
    """The change row of one (case, check) of the two runs, or None when it is unchanged (what
    :func:`pair_checks` lists for that pair)."""
    base_attempts = _attempts(baseline, case_id, check)
    cur_attempts = _attempts(current, case_id, check)
    base_tally = tally(base_attempts) if base_attempts is not None else None
    cur_tally = tally(cur_attempts) if cur_attempts is not None else None
    kind = classify(base_tally, cur_tally)
    if kind is None:
        return None
    return _change_row(case_id, check, kind, base_attempts, cur_attempts, base_tally, cur_tally)


def _attempts(run: Run, case_id: str, check: str) -> Sequence[Attempt] | None:
    checks = run.cases.get(case_id)
    return checks.get(check) if checks is not None else None


def _paired_ids(baseline: Mapping[str, object], current: Mapping[str, object]) -> list[str]:
    """Every id of either mapping once, in natural order (a list, not a set: a set of half a
    million ids costs several times the list)."""
    ids = list(baseline)
    ids.extend(item for item in current if item not in baseline)
    natural_sort(ids)
    return ids


_KEPT_ORDERS = 64


def pair_checks(baseline: Run, current: Run) -> Pairing:
    """Pair every (case, check) of both runs: the tally of every kind plus ``unchanged``, the
    change rows (:class:`ChangeRows`) and the header's row counts."""
    counts = dict.fromkeys((*KIND_ORDER, "unchanged"), 0)
    by_kind: list[tuple[list[str], list[str]]] = [([], []) for _ in KIND_ORDER]
    noise = 0
    disagreeing = 0
    empty: Mapping[str, Sequence[Attempt]] = {}
    # Cases of one run mostly name the same checks in the same order: their paired order is
    # sorted once (a few shapes kept; the order depends only on the two key sequences).
    orders: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for case_id in _paired_ids(baseline.cases, current.cases):
        base_checks = baseline.cases.get(case_id, empty)
        cur_checks = current.cases.get(case_id, empty)
        shape = (tuple(base_checks), tuple(cur_checks))
        order = orders.get(shape)
        if order is None:
            order = _paired_ids(base_checks, cur_checks)
            if len(orders) < _KEPT_ORDERS:
                orders[shape] = order
        for check in order:
            base_attempts = base_checks.get(check)
            cur_attempts = cur_checks.get(check)
            base_tally = tally(base_attempts) if base_attempts is not None else None
            cur_tally = tally(cur_attempts) if cur_attempts is not None else None
            kind = classify(base_tally, cur_tally)
            if kind is None:
                counts["unchanged"] += 1
                continue
            counts[kind] += 1
            rank = _KIND_RANK[kind]
            cases, checks = by_kind[rank]
            cases.append(case_id)
            checks.append(check)
            if kind in BLOCKING_KINDS and within_sampling_noise(base_tally, cur_tally):
                noise += 1
            if same_output_different_verdict(base_attempts or (), cur_attempts or ()) > 0:
                disagreeing += 1
    all_cases: list[str] = []
    all_checks: list[str] = []
    kinds = bytearray()
    for rank, (cases, checks) in enumerate(by_kind):
        all_cases.extend(cases)
        all_checks.extend(checks)
        kinds.extend(bytes([rank]) * len(cases))
        cases.clear()
        checks.clear()
    rows = ChangeRows(baseline, current, all_cases, all_checks, kinds)
    blocking = sum(counts[kind] for kind in BLOCKING_KINDS)
    return Pairing(counts, rows, blocking, noise, disagreeing)


def changed_checks(baseline: Run, current: Run) -> tuple[ChangeRows, dict[str, int]]:
    """Pair every (case, check) of both runs; return the listed change rows (sorted by kind
    order, then case and check in natural order) and the tally of every kind plus ``unchanged``."""
    pairing = pair_checks(baseline, current)
    return pairing.rows, pairing.counts


def compare_checks(
    baseline: Run, current: Run
) -> tuple[list[dict[str, JSONValue]], dict[str, int]]:
    """:func:`changed_checks` with each row as its diff.json object."""
    rows, counts = changed_checks(baseline, current)
    return [row.to_json() for row in rows], counts
