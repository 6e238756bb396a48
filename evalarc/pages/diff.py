"""The diff report page: a typed page model built from the typed diff report, then rendered.

The model holds every decision (verdict wording, tones, fractions); the template only lays it
out, so the model can be tested without HTML.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalarc.bundle import EvidenceFolder
from evalarc.errors import EvalArcError
from evalarc.evidence import read_case_evidence
from evalarc.evidence.model import DIVERGENCE_PAIRING
from evalarc.pages.blocks import Card
from evalarc.pages.case_views import CaseViews, build_case_views
from evalarc.pages.record_fields import RecordField, record_fields
from evalarc.pages.render import render_page
from evalarc.review.diff_model import (
    KIND_ORDER,
    PARTITIONS,
    SIDES,
    AttemptDetail,
    ChangeGroups,
    DiffReport,
    PassRate,
    Pool,
    RunSummary,
    SideTally,
)

HTML_ROWS = 500
"""Changed-check rows a diff page renders as HTML (what a reader without JavaScript sees), on a
report folder's page and a site's alike; the rest stay in diff.json and ride in a JSON data
island that ``assets/evalarc.js`` pages through on demand. Fewer HTML rows keep a 20,000-case
page light and quick to parse (measured in bench/site.py)."""
EVIDENCE_CHARS = 400

IslandCell = str | tuple[str, str]
"""A table cell bound for a JSON data island: plain text, or ``(text, style)`` where style is
``code``, ``case`` (a case id that opens its case view) or a badge class
(``badge ok``/``badge bad``)."""
MEMBERS_SHOWN = 12
"""Members listed under each cluster on the page (all of them are in diff.json)."""
PAGE_ROWS = 10_000
"""Changed checks a page lists (HTML rows and data island together), the first in report
order, so blocking kinds come first; diff.json lists every one. A diff of hundreds of thousands
of changed checks would otherwise make a page of a hundred megabytes."""
PRESENCE_SHOWN = 200
"""Vanished or appeared checks, providers and cases listed on a page (diff.json has all)."""
MAX_VIEW_CASES = 25_000
"""A diff whose runs hold more cases than this gets case views for the cases of the changes
its page lists only, not for every case."""
REPORT_SECTIONS: dict[str, str] = {
    "schema_version": "inputs",
    "created_at": "inputs",
    "format": "inputs",
    "baseline": "inputs",
    "current": "inputs",
    "counts": "cards",
    "numeric_pass_threshold": "notes",
    "blocking_changes": "cards",
    "blocking_changes_within_sampling_noise": "verdict",
    "changes_with_same_output_different_verdict": "notes",
    "baseline_incomplete": "verdict",
    "current_incomplete": "verdict",
    "gate_passed": "verdict",
    "changes": "changed-checks",
    "groups": "causes",
    "interpretation": "notes",
    "sampling_noise_note": "notes",
    "usage": "usage",
    "generalization": "generalization",
    "generalization_required": "verdict",
    "generalization_passed": "verdict",
    "leakage": "leakage",
    "cost_gate": "usage",
}
"""Every top-level key of diff.json -> the id of the page section that shows it."""
PICK_MAX_DISTINCT = 4096
"""A column with at most this many distinct cells is stored as indexes into a small table."""


def _styled(cell: IslandCell) -> tuple[str, str]:
    return (cell, "") if isinstance(cell, str) else cell


def table_island(rows: list[list[IslandCell]]) -> dict[str, Any]:
    """Rows as a compact, column-oriented island for ``assets/evalarc.js``.

    ``{"count": N, "columns": [column, ...]}``; a column is ``{"text": [N strings]}`` (with an
    optional ``"style"`` for every cell) or ``{"pick": [N indexes], "from": [strings],
    "styles": [style per string]}`` for columns that repeat (change kinds, checks, pass counts).
    The page script builds cells from it with textContent only, so no value becomes markup.
    """
    width = max((len(row) for row in rows), default=0)
    columns: list[dict[str, Any]] = []
    for index in range(width):
        pairs = [_styled(row[index] if index < len(row) else "") for row in rows]
        distinct = list(dict.fromkeys(pairs))
        styles = {style for _, style in distinct}
        repeats = len(distinct) <= PICK_MAX_DISTINCT and len(distinct) * 4 <= len(pairs)
        if repeats or len(styles) > 1:
            position = {pair: number for number, pair in enumerate(distinct)}
            columns.append(
                {
                    "pick": [position[pair] for pair in pairs],
                    "from": [text for text, _ in distinct],
                    "styles": [style for _, style in distinct],
                }
            )
        else:
            columns.append({"text": [text for text, _ in pairs], "style": styles.pop()})
    return {"count": len(rows), "columns": columns}


@dataclass(frozen=True)
class ChangeRow:
    label: str
    tone: str
    kind: str
    case_id: str
    check: str
    baseline: str
    current: str
    baseline_evidence: str
    current_evidence: str
    cause: str
    """The row's cluster as ``#N`` (blocking rows), else empty."""


@dataclass(frozen=True)
class InputSide:
    role: str
    name: str
    sha256: str
    identity: str
    cases: int
    checks: int
    pass_rate: str
    incomplete: bool


@dataclass(frozen=True)
class ClusterView:
    number: int
    signature: str
    basis: str
    kind: str
    count: int
    members: list[tuple[str, str]]
    more: int


@dataclass(frozen=True)
class PresenceLine:
    text: str
    tone: str


@dataclass(frozen=True)
class CaseGroup:
    case_id: str
    changes: int
    kinds: str
    causes: str


@dataclass(frozen=True)
class Partition:
    name: str
    cases: int
    baseline: str
    current: str
    delta: str
    noise: str
    blocking: int


@dataclass(frozen=True)
class GeneralizationView:
    state: str
    explanation: str
    split_name: str
    description: str
    entries: str
    held_out_cases: str
    partitions: list[Partition]
    required: str
    scope: str


@dataclass(frozen=True)
class LeakHit:
    where: str
    case_id: str
    partition: str
    role: str
    text: str


@dataclass(frozen=True)
class LeakageView:
    summary: str
    files: list[tuple[str, str, str]]
    hits: list[LeakHit]
    scope: str


@dataclass(frozen=True)
class UsageRow:
    metric: str
    baseline: str
    current: str
    ratio: str
    complete: str


@dataclass(frozen=True)
class UsageView:
    matched_cases: int
    rows: list[UsageRow]
    cache_share: str
    gate: str
    gate_tone: str
    scope: str


@dataclass(frozen=True)
class DiffPage:
    passed: bool
    verdict_title: str
    reasons: str
    next_step: str
    format: str
    baseline_name: str
    current_name: str
    cards: list[Card]
    rows: list[ChangeRow]
    hidden_rows: int
    """Changes listed on the page beyond its HTML rows (in the data island)."""
    unlisted_rows: int
    """Changes beyond :data:`PAGE_ROWS`: in diff.json only."""
    more_rows: dict[str, Any]
    """The changes beyond the HTML rows as a :func:`table_island`, in the table's order, plus
    ``keys`` (``kind`` and ``cause`` per row) for the exact-match filters."""
    inputs: list[InputSide]
    interpretation: str
    kinds: list[tuple[str, int]]
    """(kind, rows) for the kind filter, in report order, kinds that occur only."""
    causes_line: str
    clusters: list[ClusterView]
    groups_note: str
    presence: list[PresenceLine]
    unlisted_presence: int
    """Presence lines beyond :data:`PRESENCE_SHOWN`: in diff.json only."""
    case_groups: list[CaseGroup]
    hidden_case_groups: int
    more_case_groups: dict[str, Any]
    generalization: GeneralizationView | None
    leakage: LeakageView | None
    usage: UsageView | None
    notes: list[str]
    case_index: dict[str, Any] | None = None
    """The case-view index (see :mod:`evalarc.pages.case_views`), or None without case views."""
    case_views_inline: list[Any] = field(default_factory=list)
    """Evaluation diffs: (case id, baseline trace, current trace) rendered inline."""
    record: list[RecordField] = field(default_factory=list)
    """Top-level report fields without a dedicated section (none today)."""
    divergence_pairing: str = ""
    """How a case view pairs the attempts whose first divergence it marks (Inspect: the only
    format whose case views hold transcripts); empty otherwise."""


def _fraction(tally: SideTally | None) -> str:
    if tally is None:
        return "absent"
    text = f"{tally.passed}/{tally.assessed}"
    unassessed = tally.attempts - tally.assessed
    return text + (f" ({unassessed} unassessed)" if unassessed else "")


def side_evidence(detail: tuple[AttemptDetail, ...]) -> str:
    """The distinct evidence texts of one side's recorded attempts, joined; "—" when none."""
    texts: list[str] = []
    for attempt in detail:
        evidence = attempt.evidence
        if evidence and evidence not in texts:
            texts.append(evidence)
    joined = "; ".join(texts)
    if len(joined) > EVIDENCE_CHARS:
        joined = joined[:EVIDENCE_CHARS] + "…"
    return joined or "—"


def _headline(run: RunSummary) -> tuple[str, str]:
    headline = run.headline
    if headline is None or headline.value is None:
        return "—", "headline (none recorded)"
    return f"{headline.value:.4g}", headline.name


def _rate(side: Pool) -> str:
    rate = side.pass_rate
    shown = "—" if rate is None else f"{rate:.1%}"
    return f"{shown} ({side.passed}/{side.assessed})"


def _number(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _generalization(report: DiffReport) -> GeneralizationView | None:
    data = report.generalization
    if data is None:
        return None
    split = data.split
    partitions = []
    for name in PARTITIONS:
        part = data.partition(name)
        noise = "yes" if part.within_sampling_noise else "no"
        if part.improved_beyond_noise:
            noise += " (improved beyond noise)"
        delta = part.delta
        partitions.append(
            Partition(
                name=name.replace("_", "-"),
                cases=part.cases,
                baseline=_rate(part.baseline),
                current=_rate(part.current),
                delta="—" if delta is None else f"{delta:+.1%}",
                noise=noise,
                blocking=part.blocking_changes,
            )
        )
    required = ""
    if report.generalization_passed is not None:
        shown = "shown" if report.generalization_passed else "not shown"
        required = f"Generalization was required (--require-generalization) and is {shown}."
    held = split.held_out_cases
    return GeneralizationView(
        state=data.state.replace("_", " "),
        explanation=data.explanation,
        split_name=split.source.name,
        description=split.description or "",
        entries=", ".join(split.entries),
        held_out_cases=", ".join(held[:200])
        + (f" and {len(held) - 200} more" if len(held) > 200 else ""),
        partitions=partitions,
        required=required,
        scope=data.scope,
    )


def _leakage(report: DiffReport) -> LeakageView | None:
    data = report.leakage
    if data is None:
        return None
    hits = [
        LeakHit(
            where=f"{hit.file}:{hit.line}",
            case_id=hit.case_id,
            partition=(hit.partition or "—").replace("_", "-"),
            role=hit.role,
            text=hit.text,
        )
        for hit in data.hits
    ]
    files = [(entry.path, str(entry.bytes), entry.sha256) for entry in data.files_scanned]
    summary = (
        f"{len(hits)} hit(s), {data.held_out_hits} on held-out cases, in {len(files)} "
        f"harness file(s); {data.materials_considered} case inputs and expected answers of "
        f"at least {data.min_chars} characters were looked for."
    )
    if data.truncated:
        summary += " The hit list was truncated."
    return LeakageView(summary, files, hits, data.scope)


def _usage(report: DiffReport) -> UsageView:
    data = report.usage
    rows = []
    for metric, entry in data.metrics.items():
        sides = [
            f"{_number(side.mean)} per attempt ({side.reported}/{side.attempts} reported)"
            for side in (entry.baseline, entry.current)
        ]
        rows.append(
            UsageRow(
                metric,
                sides[0],
                sides[1],
                "—" if entry.ratio is None else f"{entry.ratio:.3f}×",
                "yes" if entry.complete else "no",
            )
        )
    share = data.cache_read_share
    cache_share = ""
    if share is not None:
        cache_share = (
            f"Cached share of input tokens: baseline {_number(share.baseline)}, "
            f"current {_number(share.current)}."
        )
    gate, tone = "No cost gate was asked for (--max-cost-ratio).", ""
    cost = report.cost_gate
    if cost is not None:
        verdict = "passed" if cost.passed else "failed"
        tone = "ok" if cost.passed else "bad"
        gate = (
            f"Cost gate {verdict}: {cost.metric} ratio {cost.ratio:.3f}× against the "
            f"limit {cost.max_ratio:g}× (baseline mean {_number(cost.baseline_mean)}, "
            f"current mean {_number(cost.current_mean)})."
        )
    return UsageView(data.matched_cases, rows, cache_share, gate, tone, data.scope)


_BASIS_LABELS = {"output": "output shape", "failure": "error or explanation"}


def _clusters(
    groups: ChangeGroups, listed: set[tuple[str, str]]
) -> tuple[list[ClusterView], dict[tuple[str, str], str]]:
    """The cluster views and the cause of each listed change (``listed``: the (case, check) of
    the changes the page lists; members beyond them are counted, not kept)."""
    views: list[ClusterView] = []
    cause_of: dict[tuple[str, str], str] = {}
    for number, cluster in enumerate(groups.clusters, start=1):
        shown: list[tuple[str, str]] = []
        for member in cluster.members:
            key = (member.case_id, member.check)
            if len(shown) < MEMBERS_SHOWN:
                shown.append(key)
            if key in listed:
                cause_of.setdefault(key, f"#{number}")
        views.append(
            ClusterView(
                number=number,
                signature=cluster.signature,
                basis=_BASIS_LABELS.get(cluster.basis, "change kind"),
                kind=cluster.kind.replace("_", " "),
                count=cluster.count,
                members=shown,
                more=max(0, len(cluster.members) - MEMBERS_SHOWN),
            )
        )
    return views, cause_of


def _presence(groups: ChangeGroups) -> list[PresenceLine]:
    lines = []
    for item in groups.presence[:PRESENCE_SHOWN]:
        vanished = item.side == "vanished"
        verb = "is recorded only in the baseline" if vanished else "is new in the current run"
        kind = "removed" if vanished else "added"
        lines.append(
            PresenceLine(
                f"{item.what.capitalize()} {item.name!r} {verb}: {item.rows} {kind} row(s).",
                "bad" if vanished else "ok",
            )
        )
    return lines


def _case_groups(rows: Sequence[ChangeRow]) -> list[CaseGroup]:
    by_case: dict[str, list[ChangeRow]] = {}
    for row in rows:
        by_case.setdefault(row.case_id, []).append(row)
    groups = []
    for case_id in sorted(by_case):
        changes = by_case[case_id]
        kinds: dict[str, int] = {}
        for row in changes:
            kinds[row.kind] = kinds.get(row.kind, 0) + 1
        kind_text = ", ".join(
            f"{count} {kind.replace('_', ' ')}"
            for kind, count in sorted(kinds.items(), key=lambda item: KIND_ORDER.index(item[0]))
        )
        causes = sorted({row.cause for row in changes if row.cause}, key=lambda c: int(c[1:]))
        groups.append(CaseGroup(case_id, len(changes), kind_text, " ".join(causes) or "—"))
    groups.sort(key=lambda group: (-group.changes, group.case_id))
    return groups


def build_diff_page(
    report: DiffReport,
    *,
    html_rows: int = HTML_ROWS,
    case_views: CaseViews | None = None,
    inline_cases: list[Any] | None = None,
) -> DiffPage:
    """The page model; ``html_rows`` changes are rendered as HTML, the rest go to the island.
    ``case_views`` (chunked evidence) makes every case id open its case view."""
    passed = report.passed
    blocking = report.blocking_changes
    reasons: list[str] = []
    if blocking:
        reasons.append(f"{blocking} check(s) lost passes or coverage")
    if report.current_incomplete:
        reasons.append("current run incomplete")
    if report.baseline_incomplete:
        reasons.append("baseline run incomplete")
    if report.generalization_passed is False:
        reasons.append("generalization was required and not shown")
    if report.cost_gate is not None and not report.cost_gate.passed:
        reasons.append("the cost gate failed")
    reason_text = "; ".join(reasons)
    reason_text = reason_text[:1].upper() + reason_text[1:]
    noisy = report.blocking_changes_within_sampling_noise
    if passed:
        next_step = ""
    elif reasons == ["baseline run incomplete"]:
        next_step = "Rerun the baseline to completion and compare again."
    else:
        next_step = "Read the causes and the blocking rows below and their evidence"
        if noisy:
            verb = "is" if noisy == 1 else "are"
            next_step += f"; {noisy} {verb} within sampling noise, so record more attempts"
        next_step += "."
    counts = report.counts
    base_value, base_label = _headline(report.baseline)
    cur_value, cur_label = _headline(report.current)
    groups = report.groups
    cards = [
        Card(base_value, f"baseline {base_label}"),
        Card(cur_value, f"current {cur_label}"),
        Card(str(blocking), "checks lost passes or coverage", alert=not report.gate_passed),
        Card(str(counts.improved), "checks improved"),
        Card(str(counts.added), "checks added"),
        Card(str(counts.removed), "checks removed", alert=bool(counts.removed)),
        Card(
            f"{report.baseline.cases} → {report.current.cases}",
            "cases (baseline → current)",
        ),
    ]
    if groups.clusters:
        cards.append(Card(str(groups.causes), "causes of the blocking checks"))
    listed = report.changes[:PAGE_ROWS]
    clusters, cause_of = _clusters(groups, {(row.case_id, row.check) for row in listed})
    rows = []
    kind_counts = {kind: report.counts.of(kind) for kind in KIND_ORDER}
    for change in listed:
        kind = change.kind
        tone = "bad" if change.blocking else "ok"
        label = ("✗ " if tone == "bad" else "✓ ") + kind.replace("_", " ")
        if change.within_sampling_noise is True:
            label += " · within noise"
        if change.same_output_different_verdict:
            label += " · same output, new verdict"
        rows.append(
            ChangeRow(
                label=label,
                tone=tone,
                kind=kind,
                case_id=change.case_id,
                check=change.check,
                baseline=_fraction(change.baseline),
                current=_fraction(change.current),
                baseline_evidence=side_evidence(change.detail("baseline"))
                if change.baseline is not None
                else "absent",
                current_evidence=side_evidence(change.detail("current"))
                if change.current is not None
                else "absent",
                cause=cause_of.get((change.case_id, change.check), ""),
            )
        )
    rest = rows[html_rows:]
    case_style = "case" if case_views is not None and not case_views.empty else "code"
    more_rows = table_island(
        [
            [
                (row.label, f"badge {row.tone}"),
                (row.case_id, case_style),
                row.check,
                row.baseline,
                row.current,
                row.baseline_evidence,
                row.current_evidence,
                row.cause,
            ]
            for row in rest
        ]
    )
    more_rows["keys"] = {
        "kind": table_island([[row.kind] for row in rest])["columns"],
        "cause": table_island([[row.cause] for row in rest])["columns"],
    }
    case_groups = _case_groups(rows)
    more_case_groups = table_island(
        [
            [(group.case_id, case_style), str(group.changes), group.kinds, group.causes]
            for group in case_groups[html_rows:]
        ]
    )
    inputs = [
        InputSide(
            role=role,
            name=report.side(role).source.name,
            sha256=report.side(role).source.sha256,
            identity=json.dumps(report.side(role).identity, sort_keys=True, ensure_ascii=False),
            cases=report.side(role).cases,
            checks=report.side(role).checks,
            pass_rate=_rate_of(report.side(role).check_pass_rate),
            incomplete=report.side(role).incomplete,
        )
        for role in SIDES
    ]
    blocking_count = groups.blocking_checks
    causes = groups.causes
    causes_line = (
        f"{blocking_count} blocking check{'s' if blocking_count != 1 else ''}: "
        f"{causes} cause{'s' if causes != 1 else ''}"
        if blocking_count
        else "No blocking checks."
    )
    notes = [
        f"Numeric scores pass at or above {report.numeric_pass_threshold:g} "
        "(numeric_pass_threshold).",
        f"{report.changes_with_same_output_different_verdict} change(s) where the same "
        "recorded output was graded both pass and fail.",
        f"{noisy} blocking change(s) within sampling noise. " + report.sampling_noise_note,
    ]
    return DiffPage(
        passed=passed,
        verdict_title="Gate passed: no check lost passes" if passed else "Gate failed",
        reasons=reason_text,
        next_step=next_step,
        format=report.format,
        baseline_name=inputs[0].name,
        current_name=inputs[1].name,
        cards=cards,
        rows=rows[:html_rows],
        hidden_rows=max(0, len(rows) - html_rows),
        unlisted_rows=len(report.changes) - len(rows),
        more_rows=more_rows,
        inputs=inputs,
        interpretation=report.interpretation,
        kinds=[(kind, kind_counts[kind]) for kind in KIND_ORDER if kind_counts[kind]],
        causes_line=causes_line,
        clusters=clusters,
        groups_note=groups.note,
        presence=_presence(groups),
        unlisted_presence=max(0, len(groups.presence) - PRESENCE_SHOWN),
        case_groups=case_groups[:html_rows],
        hidden_case_groups=max(0, len(case_groups) - html_rows),
        more_case_groups=more_case_groups,
        generalization=_generalization(report),
        leakage=_leakage(report),
        usage=_usage(report),
        notes=notes,
        case_index=None if case_views is None or case_views.empty else case_views.index,
        divergence_pairing=(
            DIVERGENCE_PAIRING
            if report.format == "inspect" and case_views is not None and not case_views.empty
            else ""
        ),
        case_views_inline=list(inline_cases or []),
        record=record_fields(_unsectioned(report), REPORT_SECTIONS, "diff.json"),
    )


def _unsectioned(report: DiffReport) -> dict[str, Any]:
    """The top-level fields of diff.json that no dedicated section shows (the promptfoo
    matrix), in report order, without writing the whole report out again."""
    data: dict[str, Any] = {}
    if report.matrix is not None:
        data["matrix"] = report.matrix.to_json()
    return data


def _rate_of(rate: PassRate) -> str:
    value = rate.value
    shown = "—" if value is None else f"{value:.1%}"
    return f"{shown} ({rate.passed}/{rate.assessed} {rate.name})"


@dataclass(frozen=True)
class TraceSide:
    role: str
    file: str
    trace: Any
    note: str


@dataclass(frozen=True)
class TracePair:
    case_id: str
    summary: str
    sides: list[TraceSide]


MAX_INLINE_TRACES = 200
"""Changed cases of an evaluation diff whose trace replays are rendered inline."""


def diff_case_views(
    folder: EvidenceFolder, params: dict[str, Any], report: DiffReport
) -> tuple[CaseViews | None, list[TracePair]]:
    """The case views of a diff report folder, from its preserved inputs: evidence chunks for
    Inspect, promptfoo and JUnit diffs; for evaluation diffs, both sides' trace replay of each
    changed case, rendered inline."""
    inputs = params.get("inputs")
    if not isinstance(inputs, list) or len(inputs) != 2:
        return None, []
    names = [str(entry.get("file")) for entry in inputs if isinstance(entry, dict)]
    if len(names) != 2:
        return None, []
    fmt = report.format
    if fmt == "evaluation":
        return None, _evaluation_traces(folder, names, report)
    only: set[str] | None = None
    if max(report.baseline.cases, report.current.cases) > MAX_VIEW_CASES:
        only = {row.case_id for row in report.changes[:PAGE_ROWS]}
    runs = getattr(report.changes, "runs", (None, None))  # a computed report's rows know them
    evidence = [
        read_case_evidence(folder.hash_file(name), fmt, only, run, report.numeric_pass_threshold)
        for name, run in zip(names, runs, strict=True)
    ]
    case_ids = sorted(evidence[0].keys() | evidence[1].keys())
    sources = (report.baseline.source.name, report.current.source.name)
    return build_case_views(case_ids, evidence[0], evidence[1], sources), []


def _evaluation_traces(
    folder: EvidenceFolder, names: list[str], report: DiffReport
) -> list[TracePair]:
    from evalarc.canonical import strict_loads
    from evalarc.packs import pack_trace_view
    from evalarc.pages.trace import build_trace

    documents: list[dict[str, Any]] = []
    for name in names:
        try:
            value = strict_loads(folder.read_bytes(name))
        except (EvalArcError, ValueError, UnicodeDecodeError, RecursionError):
            value = {}
        documents.append(value if isinstance(value, dict) else {})
    by_case: list[dict[str, dict[str, Any]]] = []
    for document in documents:
        cases: dict[str, dict[str, Any]] = {}
        for case in document.get("cases") or []:
            if isinstance(case, dict):
                cases[f"{case.get('seed')}/{case.get('case_id')}"] = case
        by_case.append(cases)
    changed: dict[str, list[str]] = {}
    for change in report.changes:
        changed.setdefault(change.case_id, []).append(
            f"{change.check} {change.kind.replace('_', ' ')}"
        )
    pairs: list[TracePair] = []
    for number, (case_id, what) in enumerate(sorted(changed.items())[:MAX_INLINE_TRACES]):
        sides = []
        for role, document, cases in zip(SIDES, documents, by_case, strict=True):
            source = report.side(role).source.name
            case = cases.get(case_id)
            task = document.get("task") if isinstance(document.get("task"), dict) else {}
            assert isinstance(task, dict)
            trace = None
            if case is not None:
                try:
                    view = pack_trace_view(str(task.get("id")))
                    trace = build_trace(view, case, None, f"c{number}-{role}")
                except (KeyError, TypeError, ValueError, AttributeError):
                    trace = None
            note = (
                "not recorded in this run"
                if case is None
                else "this case's trace lives in its recording, which stays in the "
                "evaluation's own report folder (see its page)"
            )
            sides.append(TraceSide(role, source, trace, note))
        pairs.append(TracePair(case_id, "; ".join(what), sides))
    return pairs


def render_diff_page(report: DiffReport) -> str:
    return render_page("diff.html.j2", title="Results diff", page=build_diff_page(report))
