"""The diff report (``evalarc.results-diff.v1``, diff.json) as typed values: one frozen dataclass
per part, fields in schema order, and the one place the schema is written and read.

``to_json()`` gives exactly the object ``evalarc diff`` writes (its key order is the file's);
``from_json(value, name)`` reads one back, refusing a newer schema version (naming the file and
both versions) and any malformed field with one line naming the file and the field. Numbers are
kept as read (an ``int`` stays an ``int``), so ``to_json(from_json(x)) == x`` for every report
EvalArc writes. Two parts stay plain JSON values (:data:`evalarc.canonical.JSONValue`) because
no reader takes them apart beyond one key: a run's ``identity`` (the reader's own facts; only
``status`` is read) and an attempt's raw score ``value``.

Pure: no file is read or written here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from evalarc import schemas
from evalarc.canonical import JSONValue
from evalarc.formats.model import Headline, Source
from evalarc.jsonwrite import LazyArray, Streamed, plain_json, write_pretty_json
from evalarc.review.model_json import Fields, Slow, report_fields

DIFF_SCHEMA = schemas.RESULTS_DIFF

BLOCKING_KINDS: tuple[str, ...] = (
    "regressed",
    "less_reliable",
    "unassessed",
    "less_covered",
    "removed",
)
"""Change kinds that fail the gate, in reporting order."""
NON_BLOCKING_KINDS: tuple[str, ...] = ("improved", "added")
KIND_ORDER: tuple[str, ...] = BLOCKING_KINDS + NON_BLOCKING_KINDS
SIDES: tuple[str, str] = ("baseline", "current")

_T = TypeVar("_T")


# -- reading ----------------------------------------------------------------------------------


_MISSING = object()


def _read(cls: Callable[[Fields], _T], value: object, name: str) -> _T:
    return cls(Fields(value, name))


def _source(data: Fields) -> Source:
    data.only("name", "sha256")
    return Source(data.text("name"), data.text("sha256"))


def _headline(data: Fields | None) -> Headline | None:
    if data is None:
        return None
    data.only("name", "value")
    return Headline(data.text("name"), data.opt_number("value"))


# -- change rows ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SideTally:
    """One side of a change row: passes, assessed attempts and all attempts."""

    passed: int
    assessed: int
    attempts: int

    def to_json(self) -> dict[str, int]:
        return {"passed": self.passed, "assessed": self.assessed, "attempts": self.attempts}

    @staticmethod
    def read(data: Fields) -> SideTally:
        data.only("passed", "assessed", "attempts")
        return SideTally(data.count("passed"), data.count("assessed"), data.count("attempts"))

    @staticmethod
    def quick(value: object) -> SideTally:
        if type(value) is not dict or len(value) != 3:
            raise Slow
        passed, assessed = value.get("passed"), value.get("assessed")
        attempts = value.get("attempts")
        if (
            type(passed) is int
            and type(assessed) is int
            and type(attempts) is int
            and passed >= 0
            and assessed >= 0
            and attempts >= 0
        ):
            return SideTally(passed, assessed, attempts)
        raise Slow


@dataclass(frozen=True, slots=True)
class AttemptDetail:
    """One recorded attempt a reader should look at (``baseline_detail``/``current_detail``)."""

    passed: bool | None
    value: JSONValue = None
    """The raw score as the source tool wrote it; None: not recorded (the key is absent)."""
    evidence: str | None = None

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {"passed": self.passed}
        if self.value is not None:
            data["value"] = self.value
        if self.evidence is not None:
            data["evidence"] = self.evidence
        return data

    @staticmethod
    def read(data: Fields) -> AttemptDetail:
        data.only("passed", "value", "evidence")
        value = data.data.get("value")
        if data.has("value") and value is None:
            raise data.fail("value", "is written only when recorded")
        evidence = data.text("evidence") if data.has("evidence") else None
        return AttemptDetail(data.opt_flag("passed"), value, evidence)

    @staticmethod
    def quick(value: object) -> AttemptDetail:
        if type(value) is not dict:
            raise Slow
        passed = value.get("passed", _MISSING)
        if passed is not True and passed is not False and passed is not None:
            raise Slow
        size = 1
        evidence = value.get("evidence")
        if evidence is not None:
            if type(evidence) is not str:
                raise Slow
            size += 1
        raw = value.get("value")
        if raw is not None:
            size += 1
        if len(value) != size:
            raise Slow  # an unknown key, or ``value``/``evidence`` written as null
        return AttemptDetail(passed, raw, evidence)


ROW_KEYS: tuple[str, ...] = (
    "case_id",
    "check",
    "kind",
    "baseline",
    "baseline_detail",
    "current",
    "current_detail",
    "within_sampling_noise",
    "same_output_different_verdict",
)
"""The fields of a change row, in the order they are written."""


@dataclass(frozen=True, slots=True)
class ChangeRow:
    """One (case, check) whose outcome changed."""

    case_id: str
    check: str
    kind: str
    """One of :data:`KIND_ORDER`."""
    baseline: SideTally | None
    """None: the check is not recorded in the baseline."""
    baseline_detail: tuple[AttemptDetail, ...] | None
    """None when the side recorded no attempt (the key is absent)."""
    current: SideTally | None
    current_detail: tuple[AttemptDetail, ...] | None
    within_sampling_noise: bool | None = None
    """None when it does not apply (the key is absent)."""
    same_output_different_verdict: int = 0
    """Recorded outputs graded both pass and fail (written only when positive)."""

    @property
    def blocking(self) -> bool:
        return self.kind in BLOCKING_KINDS

    def tally(self, side: str) -> SideTally | None:
        return self.baseline if side == "baseline" else self.current

    def detail(self, side: str) -> tuple[AttemptDetail, ...]:
        detail = self.baseline_detail if side == "baseline" else self.current_detail
        return detail or ()

    def to_json(self) -> dict[str, JSONValue]:
        row: dict[str, JSONValue] = {
            "case_id": self.case_id,
            "check": self.check,
            "kind": self.kind,
            "baseline": self.baseline.to_json() if self.baseline else None,
        }
        if self.baseline_detail is not None:
            row["baseline_detail"] = [attempt.to_json() for attempt in self.baseline_detail]
        row["current"] = self.current.to_json() if self.current else None
        if self.current_detail is not None:
            row["current_detail"] = [attempt.to_json() for attempt in self.current_detail]
        if self.within_sampling_noise is not None:
            row["within_sampling_noise"] = self.within_sampling_noise
        if self.same_output_different_verdict > 0:
            row["same_output_different_verdict"] = self.same_output_different_verdict
        return row

    @staticmethod
    def read(data: Fields) -> ChangeRow:
        data.only(*ROW_KEYS)
        sides: list[SideTally | None] = []
        details: list[tuple[AttemptDetail, ...] | None] = []
        for side in SIDES:
            tally = data.opt_obj(side)
            sides.append(SideTally.read(tally) if tally is not None else None)
            key = f"{side}_detail"
            details.append(
                data.each(key, AttemptDetail.read, AttemptDetail.quick) if data.has(key) else None
            )
        disagreements = 0
        if data.has("same_output_different_verdict"):
            disagreements = data.integer("same_output_different_verdict")
            if disagreements <= 0:
                raise data.fail("same_output_different_verdict", "is written only when positive")
        return ChangeRow(
            case_id=data.text("case_id"),
            check=data.text("check"),
            kind=data.choice("kind", KIND_ORDER),
            baseline=sides[0],
            baseline_detail=details[0],
            current=sides[1],
            current_detail=details[1],
            within_sampling_noise=data.flag("within_sampling_noise")
            if data.has("within_sampling_noise")
            else None,
            same_output_different_verdict=disagreements,
        )


_ROW_KEYS = frozenset(ROW_KEYS)
_KINDS = frozenset(KIND_ORDER)


def _quick_side(row: dict[str, object], side: str) -> SideTally | None:
    value = row.get(side, _MISSING)
    if value is None:
        return None
    return SideTally.quick(value)


def _quick_detail(row: dict[str, object], key: str) -> tuple[AttemptDetail, ...] | None:
    if key not in row:
        return None
    value = row[key]
    if type(value) is not list:
        raise Slow
    return tuple(AttemptDetail.quick(item) for item in value)


def _quick_row(value: object) -> ChangeRow:
    """:meth:`ChangeRow.read` for a well-formed row (the bulk of a large report), without the
    per-field bookkeeping; anything unusual goes to the careful reader."""
    if type(value) is not dict or not value.keys() <= _ROW_KEYS:
        raise Slow
    case_id, check, kind = value.get("case_id"), value.get("check"), value.get("kind")
    if type(case_id) is not str or type(check) is not str or type(kind) is not str:
        raise Slow
    if kind not in _KINDS:
        raise Slow
    noise = value.get("within_sampling_noise")
    if noise is not None and noise is not True and noise is not False:
        raise Slow
    if noise is None and "within_sampling_noise" in value:
        raise Slow
    disagreements = value.get("same_output_different_verdict", 0)
    if type(disagreements) is not int or (
        disagreements <= 0 and "same_output_different_verdict" in value
    ):
        raise Slow
    return ChangeRow(
        case_id=case_id,
        check=check,
        kind=kind,
        baseline=_quick_side(value, "baseline"),
        baseline_detail=_quick_detail(value, "baseline_detail"),
        current=_quick_side(value, "current"),
        current_detail=_quick_detail(value, "current_detail"),
        within_sampling_noise=noise,
        same_output_different_verdict=disagreements,
    )


@dataclass(frozen=True, slots=True)
class ChangeCounts:
    """How many (case, check) pairs got each change kind, plus ``unchanged``."""

    regressed: int
    less_reliable: int
    unassessed: int
    less_covered: int | None
    """None when the report leaves it out (it is written only when it happened)."""
    removed: int
    improved: int
    added: int
    unchanged: int

    def of(self, kind: str) -> int:
        """The count of ``kind`` (a change kind or ``unchanged``); 0 for a kind left out."""
        value = getattr(self, kind) if kind in _COUNT_KEYS else None
        return value if isinstance(value, int) else 0

    def total(self) -> int:
        return sum(self.of(kind) for kind in _COUNT_KEYS)

    def to_json(self) -> dict[str, int]:
        return {
            kind: self.of(kind)
            for kind in _COUNT_KEYS
            if kind != "less_covered" or self.less_covered is not None
        }

    @staticmethod
    def from_counts(counts: Mapping[str, int]) -> ChangeCounts:
        """From a tally of every kind; ``less_covered`` is kept only when it happened."""
        less_covered = counts.get("less_covered", 0)
        return ChangeCounts(
            regressed=counts.get("regressed", 0),
            less_reliable=counts.get("less_reliable", 0),
            unassessed=counts.get("unassessed", 0),
            less_covered=less_covered or None,
            removed=counts.get("removed", 0),
            improved=counts.get("improved", 0),
            added=counts.get("added", 0),
            unchanged=counts.get("unchanged", 0),
        )

    @staticmethod
    def read(data: Fields) -> ChangeCounts:
        data.only(*_COUNT_KEYS)
        return ChangeCounts(
            regressed=data.count("regressed"),
            less_reliable=data.count("less_reliable"),
            unassessed=data.count("unassessed"),
            less_covered=data.count("less_covered") if data.has("less_covered") else None,
            removed=data.count("removed"),
            improved=data.count("improved"),
            added=data.count("added"),
            unchanged=data.count("unchanged"),
        )


_COUNT_KEYS: tuple[str, ...] = (*KIND_ORDER, "unchanged")


# -- the two runs -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PassRate:
    """A run's pooled pass rate over every assessed check attempt, with its 95% interval."""

    name: str
    value: float | None
    passed: int
    assessed: int
    interval_95: tuple[float, float] | None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "name": self.name,
            "value": self.value,
            "passed": self.passed,
            "assessed": self.assessed,
            "interval_95": list(self.interval_95) if self.interval_95 is not None else None,
        }

    @staticmethod
    def read(data: Fields) -> PassRate:
        data.only("name", "value", "passed", "assessed", "interval_95")
        interval: tuple[float, float] | None = None
        if data.raw("interval_95") is not None:
            items = data.items("interval_95")
            if len(items) != 2 or not all(
                isinstance(item, int | float) and not isinstance(item, bool) for item in items
            ):
                raise data.fail("interval_95", "is not a pair of numbers")
            low, high = items
            assert isinstance(low, int | float) and isinstance(high, int | float)
            interval = (low, high)
        return PassRate(
            name=data.text("name"),
            value=data.opt_number("value"),
            passed=data.count("passed"),
            assessed=data.count("assessed"),
            interval_95=interval,
        )


@dataclass(frozen=True, slots=True)
class RunSummary:
    """The ``baseline``/``current`` block: where the run came from and its pooled pass rate."""

    source: Source
    identity: dict[str, JSONValue]
    """The reader's identity facts (Inspect task/model/status/epochs, promptfoo providers, ...),
    kept as JSON: only ``status`` is read (see :attr:`status`)."""
    incomplete: bool
    headline: Headline | None
    cases: int
    checks: int
    check_pass_rate: PassRate

    @property
    def status(self) -> str | None:
        status = self.identity.get("status")
        return None if status is None else str(status)

    @property
    def headline_value(self) -> float | None:
        return self.headline.value if self.headline is not None else None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "source": self.source.to_json(),
            "identity": self.identity,
            "incomplete": self.incomplete,
            "headline": self.headline.to_json() if self.headline is not None else None,
            "cases": self.cases,
            "checks": self.checks,
            "check_pass_rate": self.check_pass_rate.to_json(),
        }

    @staticmethod
    def read(data: Fields) -> RunSummary:
        data.only(
            "source", "identity", "incomplete", "headline", "cases", "checks", "check_pass_rate"
        )
        identity = data.obj("identity").data
        return RunSummary(
            source=_source(data.obj("source")),
            identity=identity,
            incomplete=data.flag("incomplete"),
            headline=_headline(data.opt_obj("headline")),
            cases=data.count("cases"),
            checks=data.count("checks"),
            check_pass_rate=PassRate.read(data.obj("check_pass_rate")),
        )


# -- groups -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterMember:
    case_id: str
    check: str

    def to_json(self) -> dict[str, str]:
        return {"case_id": self.case_id, "check": self.check}

    @staticmethod
    def read(data: Fields) -> ClusterMember:
        data.only("case_id", "check")
        return ClusterMember(data.text("case_id"), data.text("check"))

    @staticmethod
    def quick(value: object) -> ClusterMember:
        if type(value) is not dict or len(value) != 2:
            raise Slow
        case_id, check = value.get("case_id"), value.get("check")
        if type(case_id) is not str or type(check) is not str:
            raise Slow
        return ClusterMember(case_id, check)


@dataclass(frozen=True, slots=True)
class ChangeCluster:
    """Blocking changes that share one failure signature."""

    signature: str
    basis: str
    """``output`` (output shape), ``failure`` (error or explanation text) or ``kind``."""
    kind: str
    """The members' change kind when they share one, else ``mixed``."""
    count: int
    members: Sequence[ClusterMember]

    def json_parts(self) -> Streamed:
        """The cluster's JSON with its members made one at a time (see :mod:`evalarc.jsonwrite`)."""
        return Streamed(
            signature=self.signature,
            basis=self.basis,
            kind=self.kind,
            count=self.count,
            members=LazyArray.of(self.members, ClusterMember.to_json),
        )

    def to_json(self) -> dict[str, JSONValue]:
        parts: dict[str, JSONValue] = plain_json(self.json_parts())
        return parts

    @staticmethod
    def read(data: Fields) -> ChangeCluster:
        data.only("signature", "basis", "kind", "count", "members")
        return ChangeCluster(
            signature=data.text("signature"),
            basis=data.text("basis"),
            kind=data.text("kind"),
            count=data.count("count"),
            members=data.each("members", ClusterMember.read, ClusterMember.quick),
        )


@dataclass(frozen=True, slots=True)
class PresenceChange:
    """A check, provider or case recorded on one side only."""

    what: str
    name: str
    side: str
    """``vanished`` (baseline only) or ``appeared`` (current only)."""
    rows: int

    def to_json(self) -> dict[str, JSONValue]:
        return {"what": self.what, "name": self.name, "side": self.side, "rows": self.rows}

    @staticmethod
    def read(data: Fields) -> PresenceChange:
        data.only("what", "name", "side", "rows")
        return PresenceChange(
            what=data.text("what"),
            name=data.text("name"),
            side=data.choice("side", ("vanished", "appeared")),
            rows=data.count("rows"),
        )


@dataclass(frozen=True, slots=True)
class ChangeGroups:
    """The ``groups`` block: causes of the blocking changes and one-sided checks/cases."""

    blocking_checks: int
    causes: int
    clusters: tuple[ChangeCluster, ...]
    presence: Sequence[PresenceChange]
    note: str

    def json_parts(self) -> Streamed:
        """The block's JSON with members and presence lines made one at a time."""
        return Streamed(
            blocking_checks=self.blocking_checks,
            causes=self.causes,
            clusters=LazyArray.of(self.clusters, ChangeCluster.json_parts),
            presence=LazyArray.of(self.presence, PresenceChange.to_json),
            note=self.note,
        )

    def to_json(self) -> dict[str, JSONValue]:
        parts: dict[str, JSONValue] = plain_json(self.json_parts())
        return parts

    @staticmethod
    def read(data: Fields) -> ChangeGroups:
        data.only("blocking_checks", "causes", "clusters", "presence", "note")
        return ChangeGroups(
            blocking_checks=data.count("blocking_checks"),
            causes=data.count("causes"),
            clusters=data.objects("clusters", ChangeCluster.read),
            presence=data.objects("presence", PresenceChange.read),
            note=data.text("note"),
        )

    @classmethod
    def from_json(cls, value: object, name: str) -> ChangeGroups:
        return _read(cls.read, value, name)


# -- promptfoo matrix -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MatrixSides:
    """Which providers (or prompts) each promptfoo run holds."""

    baseline: tuple[str, ...]
    current: tuple[str, ...]
    baseline_only: tuple[str, ...]
    current_only: tuple[str, ...]
    compared_across: bool
    """One on each side, compared with each other."""

    def only(self, side: str) -> tuple[str, ...]:
        return self.baseline_only if side == "baseline" else self.current_only

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "baseline": list(self.baseline),
            "current": list(self.current),
            "baseline_only": list(self.baseline_only),
            "current_only": list(self.current_only),
            "compared_across": self.compared_across,
        }

    @staticmethod
    def read(data: Fields) -> MatrixSides:
        data.only("baseline", "current", "baseline_only", "current_only", "compared_across")
        return MatrixSides(
            baseline=data.texts("baseline"),
            current=data.texts("current"),
            baseline_only=data.texts("baseline_only"),
            current_only=data.texts("current_only"),
            compared_across=data.flag("compared_across"),
        )


@dataclass(frozen=True, slots=True)
class Matrix:
    providers: MatrixSides
    prompts: MatrixSides

    def to_json(self) -> dict[str, JSONValue]:
        return {"providers": self.providers.to_json(), "prompts": self.prompts.to_json()}

    @staticmethod
    def read(data: Fields) -> Matrix:
        data.only("providers", "prompts")
        return Matrix(
            MatrixSides.read(data.obj("providers")), MatrixSides.read(data.obj("prompts"))
        )

    @classmethod
    def from_json(cls, value: object, name: str) -> Matrix:
        return _read(cls.read, value, name)


# -- usage and the cost gate ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UsageSide:
    """One side of one usage metric over the matched cases."""

    attempts: int
    reported: int
    total: float | None
    mean: float | None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "attempts": self.attempts,
            "reported": self.reported,
            "total": self.total,
            "mean": self.mean,
        }

    @staticmethod
    def read(data: Fields) -> UsageSide:
        data.only("attempts", "reported", "total", "mean")
        return UsageSide(
            data.count("attempts"),
            data.count("reported"),
            data.opt_number("total"),
            data.opt_number("mean"),
        )


@dataclass(frozen=True, slots=True)
class PairedUsage:
    """One metric over attempts paired by case and position (what the cost gate compares)."""

    pairs: int
    baseline_total: float
    current_total: float
    baseline_missing: int
    current_missing: int

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "pairs": self.pairs,
            "baseline_total": self.baseline_total,
            "current_total": self.current_total,
            "baseline_missing": self.baseline_missing,
            "current_missing": self.current_missing,
        }

    @staticmethod
    def read(data: Fields) -> PairedUsage:
        data.only("pairs", "baseline_total", "current_total", "baseline_missing", "current_missing")
        return PairedUsage(
            data.count("pairs"),
            data.number("baseline_total"),
            data.number("current_total"),
            data.count("baseline_missing"),
            data.count("current_missing"),
        )


@dataclass(frozen=True, slots=True)
class UsageMetric:
    baseline: UsageSide
    current: UsageSide
    ratio: float | None
    complete: bool
    paired: PairedUsage

    def side(self, side: str) -> UsageSide:
        return self.baseline if side == "baseline" else self.current

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "baseline": self.baseline.to_json(),
            "current": self.current.to_json(),
            "ratio": self.ratio,
            "complete": self.complete,
            "paired": self.paired.to_json(),
        }

    @staticmethod
    def read(data: Fields) -> UsageMetric:
        data.only("baseline", "current", "ratio", "complete", "paired")
        return UsageMetric(
            baseline=UsageSide.read(data.obj("baseline")),
            current=UsageSide.read(data.obj("current")),
            ratio=data.opt_number("ratio"),
            complete=data.flag("complete"),
            paired=PairedUsage.read(data.obj("paired")),
        )


@dataclass(frozen=True, slots=True)
class CacheShare:
    baseline: float | None
    current: float | None

    def to_json(self) -> dict[str, JSONValue]:
        return {"baseline": self.baseline, "current": self.current}

    @staticmethod
    def read(data: Fields) -> CacheShare:
        data.only("baseline", "current")
        return CacheShare(data.opt_number("baseline"), data.opt_number("current"))


@dataclass(frozen=True, slots=True)
class Usage:
    """The ``usage`` block: per recorded metric, both sides' mean per attempt over matched
    cases (metrics in report order)."""

    matched_cases: int
    metrics: dict[str, UsageMetric]
    cache_read_share: CacheShare | None
    """Present when both cached and total input tokens were recorded."""
    scope: str

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {
            "matched_cases": self.matched_cases,
            "metrics": {name: metric.to_json() for name, metric in self.metrics.items()},
        }
        if self.cache_read_share is not None:
            data["cache_read_share"] = self.cache_read_share.to_json()
        data["scope"] = self.scope
        return data

    @staticmethod
    def read(data: Fields) -> Usage:
        data.only("matched_cases", "metrics", "cache_read_share", "scope")
        metrics = data.obj("metrics")
        share = data.obj("cache_read_share") if data.has("cache_read_share") else None
        return Usage(
            matched_cases=data.count("matched_cases"),
            metrics={key: UsageMetric.read(metrics.obj(key)) for key in metrics.data},
            cache_read_share=CacheShare.read(share) if share is not None else None,
            scope=data.text("scope"),
        )

    @classmethod
    def from_json(cls, value: object, name: str) -> Usage:
        return _read(cls.read, value, name)


@dataclass(frozen=True, slots=True)
class MissingUsage:
    baseline: int
    current: int

    def to_json(self) -> dict[str, JSONValue]:
        return {"baseline": self.baseline, "current": self.current}


@dataclass(frozen=True, slots=True)
class CostGate:
    """The ``cost_gate`` block (``--max-cost-ratio``)."""

    metric: str
    max_ratio: float
    baseline_mean: float
    current_mean: float
    ratio: float
    compared_attempts: int
    attempts_without_usage: MissingUsage
    passed: bool

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "metric": self.metric,
            "max_ratio": self.max_ratio,
            "baseline_mean": self.baseline_mean,
            "current_mean": self.current_mean,
            "ratio": self.ratio,
            "compared_attempts": self.compared_attempts,
            "attempts_without_usage": self.attempts_without_usage.to_json(),
            "passed": self.passed,
        }

    @staticmethod
    def read(data: Fields) -> CostGate:
        data.only(
            "metric",
            "max_ratio",
            "baseline_mean",
            "current_mean",
            "ratio",
            "compared_attempts",
            "attempts_without_usage",
            "passed",
        )
        missing = data.obj("attempts_without_usage")
        missing.only("baseline", "current")
        return CostGate(
            metric=data.text("metric"),
            max_ratio=data.number("max_ratio"),
            baseline_mean=data.number("baseline_mean"),
            current_mean=data.number("current_mean"),
            ratio=data.number("ratio"),
            compared_attempts=data.count("compared_attempts"),
            attempts_without_usage=MissingUsage(
                missing.count("baseline"), missing.count("current")
            ),
            passed=data.flag("passed"),
        )

    @classmethod
    def from_json(cls, value: object, name: str) -> CostGate:
        return _read(cls.read, value, name)


# -- held-out split and leakage ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SplitSummary:
    source: Source
    description: str | None
    entries: tuple[str, ...]
    """The split file's held-out entries (ids or globs)."""
    held_out_cases: tuple[str, ...]
    """The compared cases those entries name."""

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "source": self.source.to_json(),
            "description": self.description,
            "entries": list(self.entries),
            "held_out_cases": list(self.held_out_cases),
        }

    @staticmethod
    def read(data: Fields) -> SplitSummary:
        data.only("source", "description", "entries", "held_out_cases")
        return SplitSummary(
            source=_source(data.obj("source")),
            description=data.opt_text("description"),
            entries=data.texts("entries"),
            held_out_cases=data.texts("held_out_cases"),
        )


@dataclass(frozen=True, slots=True)
class Pool:
    """One side of one partition: pooled passes over every attempt of its cases."""

    passed: int
    assessed: int
    attempts: int
    pass_rate: float | None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "passed": self.passed,
            "assessed": self.assessed,
            "attempts": self.attempts,
            "pass_rate": self.pass_rate,
        }

    @staticmethod
    def read(data: Fields) -> Pool:
        data.only("passed", "assessed", "attempts", "pass_rate")
        return Pool(
            data.count("passed"),
            data.count("assessed"),
            data.count("attempts"),
            data.opt_number("pass_rate"),
        )


@dataclass(frozen=True, slots=True)
class PartitionReview:
    cases: int
    baseline: Pool
    current: Pool
    delta: float | None
    within_sampling_noise: bool
    improved_beyond_noise: bool
    blocking_changes: int

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "cases": self.cases,
            "baseline": self.baseline.to_json(),
            "current": self.current.to_json(),
            "delta": self.delta,
            "within_sampling_noise": self.within_sampling_noise,
            "improved_beyond_noise": self.improved_beyond_noise,
            "blocking_changes": self.blocking_changes,
        }

    @staticmethod
    def read(data: Fields) -> PartitionReview:
        data.only(
            "cases",
            "baseline",
            "current",
            "delta",
            "within_sampling_noise",
            "improved_beyond_noise",
            "blocking_changes",
        )
        return PartitionReview(
            cases=data.count("cases"),
            baseline=Pool.read(data.obj("baseline")),
            current=Pool.read(data.obj("current")),
            delta=data.opt_number("delta"),
            within_sampling_noise=data.flag("within_sampling_noise"),
            improved_beyond_noise=data.flag("improved_beyond_noise"),
            blocking_changes=data.count("blocking_changes"),
        )


PARTITIONS: tuple[str, str] = ("tuning", "held_out")


@dataclass(frozen=True, slots=True)
class Generalization:
    """The ``generalization`` block (``--held-out``): tuning vs held-out pooled rates."""

    split: SplitSummary
    tuning: PartitionReview
    held_out: PartitionReview
    state: str
    explanation: str
    scope: str

    def partition(self, name: str) -> PartitionReview:
        return self.tuning if name == "tuning" else self.held_out

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "split": self.split.to_json(),
            "partitions": {"tuning": self.tuning.to_json(), "held_out": self.held_out.to_json()},
            "state": self.state,
            "explanation": self.explanation,
            "scope": self.scope,
        }

    @staticmethod
    def read(data: Fields) -> Generalization:
        data.only("split", "partitions", "state", "explanation", "scope")
        partitions = data.obj("partitions")
        partitions.only(*PARTITIONS)
        return Generalization(
            split=SplitSummary.read(data.obj("split")),
            tuning=PartitionReview.read(partitions.obj("tuning")),
            held_out=PartitionReview.read(partitions.obj("held_out")),
            state=data.text("state"),
            explanation=data.text("explanation"),
            scope=data.text("scope"),
        )

    @classmethod
    def from_json(cls, value: object, name: str) -> Generalization:
        return _read(cls.read, value, name)


@dataclass(frozen=True, slots=True)
class ScannedFile:
    path: str
    sha256: str
    bytes: int

    def to_json(self) -> dict[str, JSONValue]:
        return {"path": self.path, "sha256": self.sha256, "bytes": self.bytes}

    @staticmethod
    def read(data: Fields) -> ScannedFile:
        data.only("path", "sha256", "bytes")
        return ScannedFile(data.text("path"), data.text("sha256"), data.count("bytes"))


@dataclass(frozen=True, slots=True)
class LeakHit:
    """Case text found verbatim in a harness file."""

    file: str
    file_sha256: str
    line: int | None
    case_id: str
    partition: str | None
    """``held_out``/``tuning`` with a split, else None."""
    role: str
    """``input`` or ``expected``."""
    text: str

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "file": self.file,
            "file_sha256": self.file_sha256,
            "line": self.line,
            "case_id": self.case_id,
            "partition": self.partition,
            "role": self.role,
            "text": self.text,
        }

    @staticmethod
    def read(data: Fields) -> LeakHit:
        data.only("file", "file_sha256", "line", "case_id", "partition", "role", "text")
        return LeakHit(
            file=data.text("file"),
            file_sha256=data.text("file_sha256"),
            line=data.opt_integer("line"),
            case_id=data.text("case_id"),
            partition=data.opt_text("partition"),
            role=data.text("role"),
            text=data.text("text"),
        )


@dataclass(frozen=True, slots=True)
class Leakage:
    """The ``leakage`` block (``--harness``)."""

    files_scanned: tuple[ScannedFile, ...]
    materials_considered: int
    min_chars: int
    hits: tuple[LeakHit, ...]
    held_out_hits: int
    truncated: bool
    scope: str

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "files_scanned": [item.to_json() for item in self.files_scanned],
            "materials_considered": self.materials_considered,
            "min_chars": self.min_chars,
            "hits": [hit.to_json() for hit in self.hits],
            "held_out_hits": self.held_out_hits,
            "truncated": self.truncated,
            "scope": self.scope,
        }

    @staticmethod
    def read(data: Fields) -> Leakage:
        data.only(
            "files_scanned",
            "materials_considered",
            "min_chars",
            "hits",
            "held_out_hits",
            "truncated",
            "scope",
        )
        return Leakage(
            files_scanned=data.objects("files_scanned", ScannedFile.read),
            materials_considered=data.count("materials_considered"),
            min_chars=data.count("min_chars"),
            hits=data.objects("hits", LeakHit.read),
            held_out_hits=data.count("held_out_hits"),
            truncated=data.flag("truncated"),
            scope=data.text("scope"),
        )

    @classmethod
    def from_json(cls, value: object, name: str) -> Leakage:
        return _read(cls.read, value, name)

    @classmethod
    def from_scan(cls, scan: Mapping[str, object]) -> Leakage:
        """The typed form of :func:`evalarc.review.leakage.scan_leakage`'s result."""
        return cls.from_json(scan, "the leakage scan")


# -- the report -------------------------------------------------------------------------------


REPORT_KEYS = (
    "schema_version",
    "created_at",
    "format",
    "baseline",
    "current",
    "counts",
    "numeric_pass_threshold",
    "blocking_changes",
    "blocking_changes_within_sampling_noise",
    "changes_with_same_output_different_verdict",
    "baseline_incomplete",
    "current_incomplete",
    "gate_passed",
    "changes",
    "groups",
    "interpretation",
    "sampling_noise_note",
    "matrix",
    "usage",
    "generalization",
    "leakage",
    "generalization_required",
    "generalization_passed",
    "cost_gate",
)
"""Every top-level key of diff.json, in the order it is written."""


@dataclass(frozen=True, slots=True)
class DiffReport:
    """diff.json: two runs compared check by check, and the gate's decision."""

    schema_version: str
    created_at: str
    format: str
    baseline: RunSummary
    current: RunSummary
    counts: ChangeCounts
    numeric_pass_threshold: float
    blocking_changes: int
    blocking_changes_within_sampling_noise: int
    changes_with_same_output_different_verdict: int
    baseline_incomplete: bool
    """Written only when true."""
    current_incomplete: bool
    gate_passed: bool
    """The quality gate: no blocking change and both runs finished."""
    changes: Sequence[ChangeRow]
    """Sorted by kind order, then case and check in natural order (a computed report builds each
    row when it is read: :class:`evalarc.review.pairing.ChangeRows`)."""
    groups: ChangeGroups
    interpretation: str
    sampling_noise_note: str
    matrix: Matrix | None
    """promptfoo diffs only."""
    usage: Usage
    generalization: Generalization | None
    """With ``--held-out`` only."""
    leakage: Leakage | None
    """With ``--harness`` only."""
    generalization_passed: bool | None
    """With ``--require-generalization`` only (then ``generalization_required`` is written
    true beside it); None otherwise."""
    cost_gate: CostGate | None
    """With ``--max-cost-ratio`` only."""

    @property
    def generalization_required(self) -> bool:
        return self.generalization_passed is not None

    @property
    def passed(self) -> bool:
        """The exit-code decision: the quality gate AND any required generalization AND any cost
        gate. (summary.md's heading and the Action's gate-passed use the quality gate alone.)"""
        if not self.gate_passed:
            return False
        if self.generalization_passed is False:
            return False
        return self.cost_gate is None or self.cost_gate.passed

    def side(self, side: str) -> RunSummary:
        return self.baseline if side == "baseline" else self.current

    def incomplete(self, side: str) -> bool:
        return self.baseline_incomplete if side == "baseline" else self.current_incomplete

    def blocking_rows(self) -> Iterator[ChangeRow]:
        return (row for row in self.changes if row.blocking)

    def to_json(self) -> dict[str, JSONValue]:
        """The diff.json object, keys in schema order (written with ``pretty_json``)."""
        report: dict[str, JSONValue] = plain_json(self.json_parts())
        return report

    def write_json(self, write: Callable[[str], object]) -> None:
        """Write diff.json's text (``pretty_json(self.to_json())``) through ``write`` in pieces,
        making the rows one at a time: memory stays that of the model, not of its text."""
        write_pretty_json(self.json_parts(), write)

    def json_parts(self) -> Streamed:
        """The diff.json object with its rows, cluster members and presence lines made when
        written (see :mod:`evalarc.jsonwrite`); :meth:`to_json` is its plain form."""
        report = Streamed()
        report["schema_version"] = self.schema_version
        report["created_at"] = self.created_at
        report["format"] = self.format
        report["baseline"] = self.baseline.to_json()
        report["current"] = self.current.to_json()
        report["counts"] = self.counts.to_json()
        report["numeric_pass_threshold"] = self.numeric_pass_threshold
        report["blocking_changes"] = self.blocking_changes
        report["blocking_changes_within_sampling_noise"] = (
            self.blocking_changes_within_sampling_noise
        )
        report["changes_with_same_output_different_verdict"] = (
            self.changes_with_same_output_different_verdict
        )
        if self.baseline_incomplete:
            report["baseline_incomplete"] = True
        report["current_incomplete"] = self.current_incomplete
        report["gate_passed"] = self.gate_passed
        report["changes"] = LazyArray.of(self.changes, ChangeRow.to_json)
        report["groups"] = self.groups.json_parts()
        report["interpretation"] = self.interpretation
        report["sampling_noise_note"] = self.sampling_noise_note
        if self.matrix is not None:
            report["matrix"] = self.matrix.to_json()
        report["usage"] = self.usage.to_json()
        if self.generalization is not None:
            report["generalization"] = self.generalization.to_json()
        if self.leakage is not None:
            report["leakage"] = self.leakage.to_json()
        if self.generalization_passed is not None:
            report["generalization_required"] = True
            report["generalization_passed"] = self.generalization_passed
        if self.cost_gate is not None:
            report["cost_gate"] = self.cost_gate.to_json()
        return report

    @staticmethod
    def from_json(value: object, name: str) -> DiffReport:
        """Read a diff.json object (``name``: the file as the user gave it). A newer schema
        version, a missing or malformed field and an unknown field are refused (InputError,
        one line naming the file)."""
        data = report_fields(value, DIFF_SCHEMA, name)
        data.only(*REPORT_KEYS)
        if data.has("generalization_required") or data.has("generalization_passed"):
            if data.raw("generalization_required") is not True:
                raise data.fail("generalization_required", "is written only as true")
            generalization_passed: bool | None = data.flag("generalization_passed")
        else:
            generalization_passed = None
        matrix = data.obj("matrix") if data.has("matrix") else None
        generalization = data.obj("generalization") if data.has("generalization") else None
        leakage = data.obj("leakage") if data.has("leakage") else None
        cost = data.obj("cost_gate") if data.has("cost_gate") else None
        return DiffReport(
            schema_version=data.text("schema_version"),
            created_at=data.text("created_at"),
            format=data.text("format"),
            baseline=RunSummary.read(data.obj("baseline")),
            current=RunSummary.read(data.obj("current")),
            counts=ChangeCounts.read(data.obj("counts")),
            numeric_pass_threshold=data.number("numeric_pass_threshold"),
            blocking_changes=data.count("blocking_changes"),
            blocking_changes_within_sampling_noise=data.count(
                "blocking_changes_within_sampling_noise"
            ),
            changes_with_same_output_different_verdict=data.count(
                "changes_with_same_output_different_verdict"
            ),
            baseline_incomplete=data.true_if_present("baseline_incomplete"),
            current_incomplete=data.flag("current_incomplete"),
            gate_passed=data.flag("gate_passed"),
            changes=data.each("changes", ChangeRow.read, _quick_row),
            groups=ChangeGroups.read(data.obj("groups")),
            interpretation=data.text("interpretation"),
            sampling_noise_note=data.text("sampling_noise_note"),
            matrix=Matrix.read(matrix) if matrix is not None else None,
            usage=Usage.read(data.obj("usage")),
            generalization=Generalization.read(generalization)
            if generalization is not None
            else None,
            leakage=Leakage.read(leakage) if leakage is not None else None,
            generalization_passed=generalization_passed,
            cost_gate=CostGate.read(cost) if cost is not None else None,
        )
