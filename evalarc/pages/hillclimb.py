"""The hillclimb review page: a typed page model built from the hillclimb review
(:class:`evalarc.review.hillclimb_model.HillclimbReport`), then rendered.

The model makes every decision (verdict wording, tones, formatted numbers); the template only
lays it out, so the model is testable without HTML.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalarc.pages.blocks import Card, TriageRow
from evalarc.pages.record_fields import RecordField, record_fields
from evalarc.pages.render import render_page
from evalarc.review.diff_model import Leakage
from evalarc.review.hillclimb import (
    category_text,
    fraction,
    interval_text,
    percent,
    points,
    ratio_text,
)
from evalarc.review.hillclimb_model import Final, HillclimbReport, Stall

HIT_TEXT_CHARS = 160
MAX_HITS = 200


REPORT_SECTIONS: dict[str, str] = {
    "notes": "notes",
    "steps": "steps",
    "stalls": "steps",
    "final": "final",
    "leakage": "leakage",
    "runs": "inputs",
    "baseline": "inputs",
    "split": "inputs",
    "objective": "verdict",
    "format": "verdict",
    "recommendation": "verdict",
    "recommendation_text": "verdict",
    "merge_recommended": "verdict",
    "max_cost_ratio": "final",
    "scope": "scope",
}
"""Top-level keys of hillclimb.json that a dedicated section shows -> its id; every other key is in
the page's "Also recorded" block (:mod:`evalarc.pages.record_fields`)."""
REPORT_FILE = "hillclimb.json"


@dataclass(frozen=True)
class StepRow:
    index: int
    label: str
    compared_with: str
    tuning: str
    held_out: str
    cost_ratio: str
    decision: str
    tone: str
    reason: str
    stalled: bool


@dataclass(frozen=True)
class StallBlock:
    title: str
    summary: str
    advice: str
    rows: list[TriageRow]


@dataclass(frozen=True)
class FinalRow:
    partition: str
    baseline: str
    final: str
    change: str
    noise: str
    blocking: str


@dataclass(frozen=True)
class HitRow:
    file: str
    line: str
    case_id: str
    partition: str
    role: str
    text: str
    held_out: bool


@dataclass(frozen=True)
class RunRow:
    label: str
    name: str
    sha256: str


@dataclass(frozen=True)
class HillclimbPage:
    passed: bool
    verdict_title: str
    recommendation: str
    recommendation_text: str
    context: str
    cards: list[Card]
    notes: list[str]
    steps: list[StepRow]
    stalls: list[StallBlock]
    final_label: str
    final_rows: list[FinalRow]
    final_facts: str
    leakage_summary: str | None
    hits: list[HitRow]
    runs: list[RunRow]
    scope: str
    record: list[RecordField] = field(default_factory=list)
    """Top-level report fields without a dedicated section."""


def _verdict_title(report: HillclimbReport) -> str:
    if report.merge_recommended:
        return "Merge recommended"
    if report.recommendation == "no_change_kept":
        return "Nothing to merge: no step was kept"
    return "Do not merge"


def _final_rows(final: Final) -> list[FinalRow]:
    rows = []
    for part, name in ((final.held_out, "Held out"), (final.tuning, "Tuning")):
        base = part.baseline
        cur = part.current
        base_text = f"{fraction(base)} ({percent(base.pass_rate)})"
        cur_text = f"{fraction(cur)} ({percent(cur.pass_rate)})"
        if part is final.held_out:
            base_text += f" · 95% {interval_text(base)}"
            cur_text += f" · 95% {interval_text(cur)}"
        rows.append(
            FinalRow(
                partition=name,
                baseline=base_text,
                final=cur_text,
                change=points(part.delta),
                noise="yes" if part.within_sampling_noise else "no",
                blocking=str(part.blocking_changes),
            )
        )
    return rows


def _stall_block(stall: Stall) -> StallBlock:
    below = ", below the baseline's noise" if stall.headroom_below_noise else ""
    return StallBlock(
        title=f"Stall after step {stall.after_step} (kept {stall.kept})",
        summary=(
            f"{stall.remaining_tuning_failures} tuning case(s) still failing "
            f"({category_text(stall.categories)}); tuning headroom "
            f"{percent(stall.tuning_headroom)}{below}."
        ),
        advice=stall.advice,
        rows=[
            TriageRow(
                case_id=row.case_id,
                category=row.category.replace("_", " "),
                checks=", ".join(row.checks),
                next_step=row.next_step,
            )
            for row in stall.triage or ()
        ],
    )


def _hits(leakage: Leakage | None) -> tuple[str | None, list[HitRow]]:
    if leakage is None:
        return None, []
    hits = leakage.hits
    summary = (
        f"{len(hits)} hit(s) in {len(leakage.files_scanned)} scanned file(s), "
        f"{leakage.held_out_hits} from held-out cases."
    )
    rows = [
        HitRow(
            file=hit.file,
            line="?" if hit.line is None else str(hit.line),
            case_id=hit.case_id,
            partition="—" if hit.partition is None else hit.partition.replace("_", " "),
            role=hit.role,
            text=hit.text[:HIT_TEXT_CHARS],
            held_out=hit.partition == "held_out",
        )
        for hit in hits[:MAX_HITS]
    ]
    return summary, rows


def build_hillclimb_page(report: HillclimbReport) -> HillclimbPage:
    final = report.final
    held = final.held_out
    cost = final.cost
    split = report.split
    cards = [
        Card(percent(held.baseline.pass_rate), "baseline held-out pass rate"),
        Card(percent(held.current.pass_rate), "final kept held-out pass rate"),
        Card(
            points(held.delta),
            "held-out change" + (" (within noise)" if held.within_sampling_noise else ""),
            alert=held.within_sampling_noise or (held.delta or 0) < 0,
        ),
        Card(
            ratio_text(cost),
            "cost ratio (final / baseline)" if cost is None else f"{cost.metric} ratio",
            alert=report.objective == "cost"
            and (cost is None or cost.ratio >= 1 or cost.ratio > report.max_cost_ratio),
        ),
    ]
    steps = [
        StepRow(
            index=step.index,
            label=step.label,
            compared_with=step.compared_with,
            tuning=points(step.tuning.delta),
            held_out=points(step.held_out.delta),
            cost_ratio=ratio_text(step.cost),
            decision=step.decision.replace("_", " "),
            tone="ok" if step.kept else "bad",
            reason=step.reason,
            stalled=step.stalled,
        )
        for step in report.steps
    ]
    facts = [f"held-out blocking changes: {final.held_out_blocking_changes}"]
    if cost is not None:
        facts.append(f"{cost.metric} mean {cost.baseline_mean:.6g} → {cost.current_mean:.6g}")
    leakage_summary, hits = _hits(report.leakage)
    return HillclimbPage(
        record=record_fields(report.to_json(), REPORT_SECTIONS, REPORT_FILE),
        passed=report.merge_recommended,
        verdict_title=_verdict_title(report),
        recommendation=report.recommendation,
        recommendation_text=report.recommendation_text,
        context=(
            f"{report.format} results · objective {report.objective} · "
            f"{split.tuning_cases} tuning and {len(split.held_out_cases)} held-out cases · "
            f"{len(report.steps)} step(s) after {report.baseline.label}"
        ),
        cards=cards,
        notes=list(report.notes),
        steps=steps,
        stalls=[_stall_block(stall) for stall in report.stalls],
        final_label=final.label,
        final_rows=_final_rows(final),
        final_facts=" · ".join(facts),
        leakage_summary=leakage_summary,
        hits=hits,
        runs=[
            RunRow(label=run.label, name=run.source.name, sha256=run.source.sha256)
            for run in report.runs
        ],
        scope=report.scope,
    )


def render_hillclimb_page(report: HillclimbReport) -> str:
    return render_page(
        "hillclimb.html.j2", title="Hillclimb review", page=build_hillclimb_page(report)
    )
