"""Render a health report (:class:`evalarc.review.health_model.HealthReport`) as terminal lines
and as summary.md.

Both read only the report, so what a reader sees is what ``verify`` recomputes. File names, case
ids, check names and messages that quote them are untrusted: Markdown puts identifiers in escaped
code spans and prose through the escaper; terminal lines fold control characters away.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalarc.reports.diff_text import escape_md_prose, markdown_lines, md_code
from evalarc.review.health import TRIAGE_NEXT_STEPS
from evalarc.review.health_model import (
    Finding,
    FindingItem,
    HealthReport,
    Plan,
    Provenance,
    RunSummary,
    Size,
    TriageEntry,
)

MAX_MARKDOWN_TRIAGE = 30
MAX_MARKDOWN_ITEMS = 10


def _fold(value: object) -> str:
    """One terminal line: control characters (newlines, escapes) become spaces."""
    return "".join(" " if ord(char) < 32 or ord(char) == 127 else char for char in str(value))


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _interval(interval: tuple[float, float] | None) -> str:
    return "—" if interval is None else f"{interval[0] * 100:.1f}–{interval[1] * 100:.1f}%"


def _number(value: float) -> str:
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _seconds(value: float | None, what: str) -> str:
    return f"no recorded duration {what}" if value is None else f"{_number(value)} s {what}"


def _usd(value: float | None, what: str) -> str:
    if value is None:
        return f"no recorded cost {what}"
    return f"${value:,.6f}".rstrip("0").rstrip(".") + f" {what}"


def warnings_label(report: HealthReport) -> str:
    return f"{report.warnings} warning(s)"


# -- terminal ---------------------------------------------------------------------------------


def terminal_lines(report: HealthReport, output_dir: str | None) -> list[str]:
    """What ``evalarc eval-health`` prints: a status line, one line per finding, the report."""
    rates = ", ".join(f"{_fold(run.source.name)} {_percent(run.pass_rate)}" for run in report.runs)
    lines = [f"Eval health: {warnings_label(report)} | Pass rate: {rates}"]
    for finding in report.findings:
        lines.append(f"  {finding.severity}: {finding.id} — {_fold(finding.message)}")
    if output_dir is not None:
        lines.append(f"Report: {_fold(output_dir.rstrip('/') or '/')}/index.html")
    return lines


# -- Markdown ---------------------------------------------------------------------------------


def markdown_heading(report: HealthReport) -> str:
    if report.healthy:
        return "### EvalArc eval health: no warnings"
    return f"### EvalArc eval health: {warnings_label(report)} before tuning"


def markdown_summary(report: HealthReport) -> str:
    """summary.md: heading, runs, noise, size, plan, provenance, triage and findings."""
    blocks = [markdown_heading(report), _runs_table(report.runs), _noise_line(report)]
    blocks.append(_size_line(report.size))
    if report.plan is not None:
        blocks.append(_plan_line(report.plan))
    if report.provenance is not None:
        blocks.append(_provenance_line(report.provenance))
    if report.triage:
        blocks.append(_triage_table(report.triage))
    if report.findings:
        blocks.append(_findings(report.findings))
    blocks.append(f"<sub>{escape_md_prose(report.scope)}</sub>")
    return markdown_lines("\n\n".join(blocks) + "\n")


def _runs_table(runs: Sequence[RunSummary]) -> str:
    rows = [
        "| File | Cases | Checks | Pass rate | 95% interval | Max attempts | Unassessed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        rows.append(
            f"| {md_code(run.source.name)} | {run.cases} | {run.checks} | "
            f"{_percent(run.pass_rate)} | {_interval(run.interval_95)} | "
            f"{run.max_attempts} | {run.attempts - run.assessed} |"
        )
    return "\n".join(rows)


def _noise_line(report: HealthReport) -> str:
    noise = report.noise
    text = (
        f"Resolvable change: about {_percent(noise.resolvable_change)} with "
        f"{noise.assessed_attempts} assessed attempt(s) in the last file"
    )
    if report.min_effect is not None:
        text += (
            f"; about {noise.attempts_for_min_effect} are needed to resolve "
            f"{_percent(report.min_effect)}"
        )
    return text + "."


def _size_line(size: Size) -> str:
    return (
        f"Size: {size.configurations} configuration(s) × {size.cases} case(s) × "
        f"{size.attempts_per_case} attempt(s); "
        f"{size.case_attempts_per_configuration} case attempts per configuration; "
        f"{_seconds(size.mean_seconds_per_attempt, 'per attempt')}; "
        f"{_usd(size.recorded_cost_usd_per_configuration, 'per configuration')}."
    )


def _plan_line(plan: Plan) -> str:
    return (
        f"Plan: {plan.cases} case(s) × {plan.attempts_per_case} attempt(s) × "
        f"{plan.configurations} configuration(s) = {plan.case_attempts} case attempts; "
        f"{_seconds(plan.serial_seconds, 'run serially')}; "
        f"{_usd(plan.cost_usd, 'in total')}."
    )


def _provenance_line(provenance: Provenance) -> str:
    counts = ", ".join(f"{source} {count}" for source, count in provenance.counts.items())
    text = (
        f"Provenance ({md_code(provenance.manifest.name)}): {provenance.declared} "
        f"declared case(s): {counts or 'none'}; {provenance.real} from real use"
    )
    if provenance.undeclared:
        text += f"; {len(provenance.undeclared)} undeclared"
    return text + "."


def _triage_table(triage: Sequence[TriageEntry]) -> str:
    rows = [
        "| Case | Category | Failing checks | Next step |",
        "| --- | --- | --- | --- |",
    ]
    for entry in triage[:MAX_MARKDOWN_TRIAGE]:
        checks = ", ".join(md_code(check) for check in entry.checks)
        rows.append(
            f"| {md_code(entry.case_id)} | {entry.category} | {checks} | "
            f"{TRIAGE_NEXT_STEPS[entry.category]} |"
        )
    text = "#### Failure triage (last file)\n\n" + "\n".join(rows)
    hidden = len(triage) - MAX_MARKDOWN_TRIAGE
    if hidden > 0:
        text += f"\n\n{hidden} more failing case(s) are in `health.json`."
    return text


def _item_line(item: FindingItem) -> str:
    where = f"{md_code(item.file)} " if item.file is not None else ""
    text = (
        f"  - {where}{md_code(item.case_id)} / {md_code(item.check)}: "
        f"{item.passed}/{item.assessed} passed, {item.attempts} attempt(s)"
    )
    if item.detail is not None:
        text += f" ({escape_md_prose(item.detail)})"
    return text


def _findings(findings: Sequence[Finding]) -> str:
    lines = ["#### Findings", ""]
    for finding in findings:
        lines.append(f"- **{finding.severity}** `{finding.id}`: {escape_md_prose(finding.message)}")
        lines.extend(_item_line(item) for item in finding.items[:MAX_MARKDOWN_ITEMS])
        total = finding.total
        if total > MAX_MARKDOWN_ITEMS:
            lines.append(f"  - {total - MAX_MARKDOWN_ITEMS} more in `health.json`")
    return "\n".join(lines)
