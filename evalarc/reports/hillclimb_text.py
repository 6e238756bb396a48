"""Render a hillclimb review (:class:`evalarc.review.hillclimb_model.HillclimbReport`) as
terminal lines and as summary.md.

Both read only the report, so what a reader sees is what ``verify`` recomputes. Labels, case ids
and hit texts come from result files and are untrusted: Markdown puts them in escaped code spans
and terminal lines fold control characters away.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalarc.reports.diff_text import escape_md_prose, leak_hit_table, markdown_lines, md_code
from evalarc.review.diff_model import Leakage
from evalarc.review.hillclimb import (
    category_text,
    fraction,
    interval_text,
    percent,
    points,
    ratio_text,
)
from evalarc.review.hillclimb_model import HillclimbReport, Stall, Step

MAX_MARKDOWN_STEPS = 50
MAX_MARKDOWN_HITS = 20
MAX_TERMINAL_HITS = 10


def _safe(value: object) -> str:
    """Fold control characters so a label cannot forge terminal lines."""
    return "".join(" " if ord(char) < 32 or ord(char) == 127 else char for char in str(value))


# -- terminal ---------------------------------------------------------------------------------


def step_line(step: Step) -> str:
    cost = step.cost
    cost_part = f", cost {cost.ratio:.3f}x" if cost is not None else ""
    line = (
        f"  {step.index}. {_safe(step.label)}: {step.decision} (tuning "
        f"{points(step.tuning.delta)}, held out {points(step.held_out.delta)}"
        f"{cost_part})"
    )
    if step.stalled:
        line += " — stalled"
    return line


def stall_line(stall: Stall) -> str:
    headroom = stall.tuning_headroom
    below = " (below the baseline's noise)" if stall.headroom_below_noise else ""
    return (
        f"  Stall after step {stall.after_step} (kept {_safe(stall.kept)}): "
        f"{stall.remaining_tuning_failures} tuning case(s) still failing "
        f"[{category_text(stall.categories)}]; tuning headroom {percent(headroom)}{below}. "
        f"{stall.advice}"
    )


def final_line(report: HillclimbReport) -> str:
    final = report.final
    held = final.held_out
    line = (
        f"Final kept: {_safe(final.label)} | held out {percent(held.baseline.pass_rate)}"
        f" -> {percent(held.current.pass_rate)}"
    )
    if held.within_sampling_noise:
        line += " (within noise)"
    if final.cost is not None:
        line += f" | cost ratio {final.cost.ratio:.3f}"
    return line


def terminal_lines(report: HillclimbReport, output_dir: str | None) -> list[str]:
    """What ``evalarc hillclimb-review`` prints (one string per line, no newlines inside)."""
    lines = [_safe(note) for note in report.notes]
    lines.extend(step_line(step) for step in report.steps)
    lines.extend(stall_line(stall) for stall in report.stalls)
    lines.append(final_line(report))
    leakage = report.leakage
    if leakage is not None:
        hits = leakage.hits
        line = f"Harness leakage: {len(hits)} hit(s)"
        if leakage.held_out_hits:
            line += f", {leakage.held_out_hits} from held-out cases"
        lines.append(line)
        for hit in hits[:MAX_TERMINAL_HITS]:
            where = "?" if hit.line is None else str(hit.line)
            lines.append(f"  {_safe(hit.file)}:{where} {hit.role} of {_safe(hit.case_id)}")
    lines.append(f"Recommendation: {report.recommendation} — {report.recommendation_text}")
    if output_dir is not None:
        lines.append(f"Report: {_safe(output_dir.rstrip('/') or '/')}/index.html")
    return lines


# -- Markdown ---------------------------------------------------------------------------------


def markdown_summary(report: HillclimbReport) -> str:
    """summary.md: recommendation heading, steps table, held-out baseline vs final, stalls,
    leakage and the scope."""
    split = report.split
    blocks = [
        f"### EvalArc hillclimb review: {md_code(report.recommendation)}",
        escape_md_prose(report.recommendation_text),
        f"Objective: **{report.objective}** · {split.tuning_cases} tuning case(s) · "
        f"{len(split.held_out_cases)} held-out case(s) · {len(report.steps)} step(s) "
        f"after the baseline {md_code(report.baseline.label)}",
    ]
    if report.notes:
        blocks.append("\n>\n".join(f"> {escape_md_prose(note)}" for note in report.notes))
    if report.steps:
        blocks.append(_steps_table(report.steps))
    blocks.append(_final_section(report))
    if report.stalls:
        blocks.append(_stalls_section(report.stalls))
    if report.leakage is not None:
        blocks.append(_leakage_section(report.leakage))
    blocks.append(f"<sub>{escape_md_prose(report.scope)}</sub>")
    return markdown_lines("\n\n".join(blocks) + "\n")


def _steps_table(steps: Sequence[Step]) -> str:
    rows = [
        "| Step | Compared with | Tuning | Held out | Cost ratio | Decision |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for step in steps[:MAX_MARKDOWN_STEPS]:
        decision = step.decision + (" (stalled)" if step.stalled else "")
        rows.append(
            f"| {step.index}. {md_code(step.label)} | {md_code(step.compared_with)} | "
            f"{points(step.tuning.delta)} | {points(step.held_out.delta)} | "
            f"{ratio_text(step.cost)} | {decision} |"
        )
    table = "\n".join(rows)
    hidden = len(steps) - MAX_MARKDOWN_STEPS
    if hidden > 0:
        table += f"\n\n{hidden} more step(s) are in `hillclimb.json`."
    return table


def _final_section(report: HillclimbReport) -> str:
    final = report.final
    rows = [
        f"| | Baseline {md_code(report.baseline.label)} | Final {md_code(final.label)} |",
        "| --- | ---: | ---: |",
    ]
    for part, name in ((final.held_out, "Held out"), (final.tuning, "Tuning")):
        rows.append(
            f"| {name} | {percent(part.baseline.pass_rate)} ({fraction(part.baseline)}) "
            f"| {percent(part.current.pass_rate)} ({fraction(part.current)}) |"
        )
        if part is final.held_out:
            rows.append(
                f"| Held-out 95% interval | {interval_text(part.baseline)} | "
                f"{interval_text(part.current)} |"
            )
    held = final.held_out
    noise = "within sampling noise" if held.within_sampling_noise else "beyond sampling noise"
    facts = [
        f"Held-out change {points(held.delta)} ({noise})",
        f"held-out blocking changes: {final.held_out_blocking_changes}",
    ]
    if final.cost is not None:
        facts.append(f"{md_code(final.cost.metric)} ratio {final.cost.ratio:.3f}")
    return "\n\n".join(
        ["#### Held out: baseline vs final kept", "\n".join(rows), " · ".join(facts) + "."]
    )


def _stalls_section(stalls: Sequence[Stall]) -> str:
    items = []
    for stall in stalls:
        below = ", below the baseline's noise" if stall.headroom_below_noise else ""
        items.append(
            f"- After step {stall.after_step} (kept {md_code(stall.kept)}): "
            f"{stall.remaining_tuning_failures} tuning case(s) still failing "
            f"({category_text(stall.categories)}); tuning headroom "
            f"{percent(stall.tuning_headroom)}{below}. {escape_md_prose(stall.advice)}"
        )
    return "#### Stalls\n\n" + "\n".join(items)


def _leakage_section(leakage: Leakage) -> str:
    hits = leakage.hits
    heading = f"#### Harness leakage: {len(hits)} hit(s)"
    if leakage.held_out_hits:
        heading += f", {leakage.held_out_hits} from held-out cases"
    blocks = [
        heading,
        f"Scanned {len(leakage.files_scanned)} file(s) for {leakage.materials_considered} "
        f"case text(s) of at least {leakage.min_chars} characters.",
    ]
    if hits:
        blocks.append(leak_hit_table(hits[:MAX_MARKDOWN_HITS]))
        if len(hits) > MAX_MARKDOWN_HITS:
            blocks.append(f"{len(hits) - MAX_MARKDOWN_HITS} more hit(s) are in `hillclimb.json`.")
    blocks.append(f"<sub>{escape_md_prose(leakage.scope)}</sub>")
    return "\n\n".join(blocks)
