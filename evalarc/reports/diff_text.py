"""Render a diff report (:class:`~evalarc.review.diff_model.DiffReport`) as terminal lines and
as Markdown (summary.md).

Both renderings read only the report, never the runs, so what a reader sees is exactly what
verify can recompute. Every value that came from a result file is untrusted: Markdown puts it in
an escaped code span, and terminal lines fold control characters away.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence

from evalarc.review.diff_model import (
    KIND_ORDER,
    PARTITIONS,
    ChangeCounts,
    ChangeRow,
    CostGate,
    DiffReport,
    Generalization,
    Leakage,
    LeakHit,
    RunSummary,
    SideTally,
    Usage,
)
from evalarc.terminal import neutralize_workflow_commands

MAX_MARKDOWN_CHANGES = 50
MAX_MARKDOWN_HITS = 20
MAX_TERMINAL_HITS = 10
_MARKDOWN_HIT_TEXT = 80
_PROSE_SPECIALS = frozenset("\\`*_[]<>|!#~&")
_TOKEN_METRICS = frozenset(
    {"total_tokens", "input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"}
)
_PARTITION_LABELS = dict(zip(PARTITIONS, ("Tuning", "Held out"), strict=True))


# -- escaping ---------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def md_code(value: object) -> str:
    """An untrusted value as a Markdown code span that cannot break a table, a line or the span:
    ``|`` -> ``\\|``, backticks -> apostrophes, CR/LF -> spaces. A value holding ``##[`` (a CI
    runner reads ``##[error]`` anywhere in a line as a workflow command, and a code span cannot
    escape it) becomes an HTML ``<code>`` element with ``#`` as ``&#35;``: it reads the same."""
    text = _one_line(str(value)).replace("`", "'")
    if "##[" in text:
        escaped = html.escape(text, quote=False).replace("#", "&#35;").replace("|", "\\|")
        return f"<code>{escaped}</code>"
    text = text.replace("|", "\\|")
    return f"`{text}`" if text.strip() else "` `"


def markdown_lines(text: str) -> str:
    """A whole Markdown summary as written (summary.md, ``--markdown``, the job summary): no
    line may start a CI workflow command (``::`` after whitespace becomes ``\\:``, which
    Markdown renders as ``:``; see :func:`evalarc.terminal.neutralize_workflow_commands`)."""
    return neutralize_workflow_commands(text, colon="\\:")


def leak_hit_table(hits: Sequence[LeakHit]) -> str:
    """The Markdown table of leakage hits (diff and hillclimb summaries alike)."""
    rows = [
        "| File | Line | Case | Partition | Role | Text |",
        "| --- | ---: | --- | --- | --- | --- |",
    ]
    for hit in hits:
        line = "—" if hit.line is None else str(hit.line)
        partition = "—" if hit.partition is None else hit.partition.replace("_", " ")
        text = hit.text
        if len(text) > _MARKDOWN_HIT_TEXT:
            text = text[:_MARKDOWN_HIT_TEXT] + "…"
        rows.append(
            f"| {md_code(hit.file)} | {line} | {md_code(hit.case_id)} | {partition} | "
            f"{hit.role} | {md_code(text)} |"
        )
    return "\n".join(rows)


def escape_md_prose(text: str) -> str:
    """Untrusted free text as one line of Markdown prose with every markup character escaped."""
    return "".join(f"\\{char}" if char in _PROSE_SPECIALS else char for char in _one_line(text))


def _terminal_safe(value: object) -> str:
    """Fold control characters (newlines, escape sequences) so a value cannot forge lines."""
    return "".join(" " if ord(char) < 32 or ord(char) == 127 else char for char in str(value))


# -- number formats ---------------------------------------------------------------------------


def _decimal(value: float | None, places: int = 4) -> str:
    """``places`` decimals with trailing zeros stripped; an em dash when missing."""
    if value is None:
        return "—"
    text = f"{value:.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _points(delta: float | None) -> str:
    return "—" if delta is None else f"{delta * 100:+.1f} pp"


def _fraction(side: SideTally | None) -> str:
    if side is None:
        return "absent"
    text = f"{side.passed}/{side.assessed}"
    unassessed = side.attempts - side.assessed
    if unassessed:
        text += f" ({unassessed} unassessed)"
    return text


def _kind_label(kind: str) -> str:
    return kind.replace("_", " ")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _headline_value(summary: RunSummary) -> float | None:
    value = summary.headline_value
    return None if value is None else float(value)


def _status(summary: RunSummary) -> str:
    status = summary.status
    return "unknown" if status is None else status


# -- terminal ---------------------------------------------------------------------------------


def terminal_lines(report: DiffReport, output_dir: str | None) -> Iterator[str]:
    """The human summary ``evalarc diff`` prints (one string per line, no newlines inside),
    made as it is printed: a diff of hundreds of thousands of blocking checks prints one line
    each without holding them all."""
    counts = report.counts
    first = ""
    base_value = _headline_value(report.baseline)
    cur_value = _headline_value(report.current)
    if (
        base_value is not None
        and cur_value is not None
        and report.baseline.headline is not None
        and report.current.headline is not None
    ):
        name = report.baseline.headline.name or report.current.headline.name
        first = f"{_terminal_safe(name)}: {_decimal(base_value)} -> {_decimal(cur_value)} | "
    yield (
        f"{first}Checks that lost passes or coverage: {report.blocking_changes} | "
        f"Improved: {counts.improved} | Added: {counts.added} | "
        f"Unchanged: {counts.unchanged}"
    )
    noisy = report.blocking_changes_within_sampling_noise
    if noisy > 0:
        yield (
            f"  {noisy} of them within sampling noise: record more attempts to tell them apart; "
            "the gate still fails."
        )
    for row in report.blocking_rows():
        yield (
            f"  {row.kind}: {_terminal_safe(row.case_id)} / "
            f"{_terminal_safe(row.check)}: passed {_fraction(row.baseline)} -> "
            f"{_fraction(row.current)}"
        )
    for note in matrix_notes(report):
        yield f"  {_terminal_safe(note)}"
    if report.current_incomplete:
        status = _terminal_safe(_status(report.current))
        yield f"  The current run did not finish (status {status}); the gate fails."
    if report.baseline_incomplete:
        yield (
            f"  The baseline run did not finish (status "
            f"{_terminal_safe(_status(report.baseline))}); the gate fails. "
            f"{_plural(counts.added, 'check')} appear only in the current run; rerun the "
            "baseline to completion and compare again."
        )
    generalization = report.generalization
    if generalization is not None:
        tuning, held = generalization.tuning, generalization.held_out
        yield (
            f"Held-out split: {generalization.state} | tuning "
            f"{_points(tuning.delta)} ({tuning.cases} cases) | held out "
            f"{_points(held.delta)} ({held.cases} cases)"
        )
    if report.leakage is not None:
        yield from _terminal_leakage(report.leakage)
    if report.generalization_passed is False:
        yield (
            "  Generalization was required and not shown (held-out gain beyond noise and no "
            "held-out leakage); the gate fails."
        )
    cost = report.cost_gate
    if cost is not None:
        yield (
            f"Cost gate ({cost.metric}): current/baseline {cost.ratio:.3f}, limit "
            f"{cost.max_ratio:g} — {'pass' if cost.passed else 'fail'}{_cost_gap(cost)}"
        )
    if output_dir is not None:
        yield f"Report: {_terminal_safe(output_dir.rstrip('/') or '/')}/index.html"


def _cost_gap(cost: CostGate) -> str:
    """`` (over N attempt pairs; M baseline and K current attempts lacked usage)`` or ''."""
    missing = cost.attempts_without_usage
    text = f" (over {_plural(cost.compared_attempts, 'attempt pair')}"
    if missing.baseline or missing.current:
        text += (
            f"; {missing.baseline} baseline and {missing.current} current "
            "attempt(s) lacked usage and were left out"
        )
    return text + ")"


def matrix_notes(report: DiffReport) -> list[str]:
    """One sentence per provider or prompt that only one promptfoo run holds, or that changed
    between two runs of one provider or prompt each."""
    matrix = report.matrix
    if matrix is None:
        return []
    notes: list[str] = []
    for sides, word in ((matrix.providers, "provider"), (matrix.prompts, "prompt")):
        if sides.compared_across:
            base, cur = sides.baseline, sides.current
            if base != cur:
                notes.append(
                    f"{word.capitalize()} changed: {', '.join(base)} -> "
                    f"{', '.join(cur)} (each case compared across the change)"
                )
            continue
        for side in ("baseline", "current"):
            only = sides.only(side)
            if only:
                names = ", ".join(str(name) for name in only)
                label = (word if len(only) == 1 else word + "s").capitalize()
                fate = "removed" if side == "baseline" else "added"
                notes.append(f"{label} only in the {side} run: {names} (their cases are {fate})")
    return notes


def _terminal_leakage(leakage: Leakage) -> list[str]:
    hits = leakage.hits
    files = len({hit.file for hit in hits})
    line = f"Harness leakage: {_plural(len(hits), 'hit')} in {_plural(files, 'file')}"
    if leakage.held_out_hits:
        line += f", {leakage.held_out_hits} from held-out cases"
    if leakage.truncated:
        line += f" (only the first {len(hits)} are listed)"
    lines = [line]
    for hit in hits[:MAX_TERMINAL_HITS]:
        where = "?" if hit.line is None else str(hit.line)
        lines.append(
            f"  {_terminal_safe(hit.file)}:{where} {hit.role} of {_terminal_safe(hit.case_id)}"
        )
    return lines


# -- Markdown ---------------------------------------------------------------------------------


def markdown_verdict(report: DiffReport) -> str:
    """The heading's verdict; it reflects the quality gate only (not generalization or cost)."""
    if report.gate_passed:
        return "No check lost passes"
    blocking = report.blocking_changes
    if blocking > 0:
        return f"{blocking} check(s) lost passes or coverage"
    base_incomplete = report.baseline_incomplete
    if base_incomplete and report.current_incomplete:
        return "the baseline and current runs are incomplete"
    if base_incomplete:
        return "the baseline run is incomplete"
    return "the current run is incomplete"


def markdown_summary(report: DiffReport) -> str:
    """summary.md: verdict heading, run table, change table and the optional sections."""
    blocks: list[str] = [f"### EvalArc: {markdown_verdict(report)}", _run_table(report)]
    notes = _notes(report)
    if notes:
        blocks.append("\n".join(notes))
    blocks.append(_count_line(report.counts))
    if report.changes:
        blocks.append(_change_table(report.changes))
    if report.generalization is not None:
        blocks.append(_generalization_section(report.generalization))
    if report.leakage is not None:
        blocks.append(_leakage_section(report.leakage))
    cost_section = _cost_section(report)
    if cost_section is not None:
        blocks.append(cost_section)
    blocks.append(f"<sub>{escape_md_prose(report.interpretation)}</sub>")
    return markdown_lines("\n\n".join(blocks) + "\n")


def _run_table(report: DiffReport) -> str:
    base = report.baseline
    cur = report.current
    rows = [
        "| | Baseline | Current |",
        "| ---: | ---: | ---: |",
        f"| Headline metric | {_decimal(_headline_value(base))} | "
        f"{_decimal(_headline_value(cur))} |",
        f"| Checks passed | {_decimal(base.check_pass_rate.value)} | "
        f"{_decimal(cur.check_pass_rate.value)} |",
    ]
    base_interval = base.check_pass_rate.interval_95
    cur_interval = cur.check_pass_rate.interval_95
    if base_interval is not None and cur_interval is not None:
        rows.append(
            f"| 95% interval | {base_interval[0]:.3f}–{base_interval[1]:.3f} | "
            f"{cur_interval[0]:.3f}–{cur_interval[1]:.3f} |"
        )
    rows.append(f"| Cases | {base.cases} | {cur.cases} |")
    return "\n".join(rows)


def _notes(report: DiffReport) -> list[str]:
    notes: list[str] = []
    if report.current_incomplete:
        notes.append(
            f"The current run did not finish (status {md_code(_status(report.current))}); "
            "the gate fails."
        )
    if report.baseline_incomplete:
        added = report.counts.added
        notes.append(
            f"The baseline run did not finish (status {md_code(_status(report.baseline))}); "
            f"the gate fails. {_plural(added, 'check')} appear only in the current run and "
            "would otherwise look added. Rerun the baseline to completion and compare again."
        )
    for note in matrix_notes(report):
        notes.append(escape_md_prose(note))
    headline = report.baseline.headline
    if headline is not None and headline.name:
        notes.append(f"Headline metric: {md_code(headline.name)} from the source tool.")
    disagreeing = report.changes_with_same_output_different_verdict
    if disagreeing > 0:
        notes.append(
            f"{_plural(disagreeing, 'changed check')} include an output that was graded both "
            "pass and fail: the grader is nondeterministic or was changed."
        )
    noisy = report.blocking_changes_within_sampling_noise
    if noisy > 0:
        notes.append(
            f"{noisy} of {report.blocking_changes} blocking change(s) are within sampling "
            "noise: record more attempts to tell them apart. They still fail the gate."
        )
    # Separate notes with hard line breaks so each stays its own line in rendered Markdown.
    return [note + "  " if index < len(notes) - 1 else note for index, note in enumerate(notes)]


def _count_line(counts: ChangeCounts) -> str:
    items = []
    for kind in (*KIND_ORDER, "unchanged"):
        count = counts.of(kind)
        if count > 0 or kind in ("regressed", "unchanged"):
            items.append(f"**{count}** {_kind_label(kind)}")
    return " · ".join(items)


def _change_table(changes: Sequence[ChangeRow]) -> str:
    rows = ["| Change | Case | Check | Baseline | Current |", "| --- | --- | --- | ---: | ---: |"]
    for change in changes[:MAX_MARKDOWN_CHANGES]:
        label = _kind_label(change.kind)
        if change.within_sampling_noise:
            label += " (within noise)"
        if change.same_output_different_verdict:
            label += " (same output, new verdict)"
        rows.append(
            f"| {label} | {md_code(change.case_id)} | {md_code(change.check)} | "
            f"{_fraction(change.baseline)} | {_fraction(change.current)} |"
        )
    table = "\n".join(rows)
    hidden = len(changes) - MAX_MARKDOWN_CHANGES
    if hidden > 0:
        table += f"\n\n{hidden} more changes are in `diff.json`."
    return table


def _yes_no(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "no")


def _generalization_section(generalization: Generalization) -> str:
    rows = [
        "| Partition | Cases | Baseline | Current | Change | Within noise | Blocking |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for key, label in _PARTITION_LABELS.items():
        part = generalization.partition(key)
        rows.append(
            f"| {label} | {part.cases} | {_percent(part.baseline.pass_rate)} | "
            f"{_percent(part.current.pass_rate)} | {_points(part.delta)} | "
            f"{_yes_no(part.within_sampling_noise)} | {part.blocking_changes} |"
        )
    return "\n\n".join(
        [
            f"#### Held-out split: {md_code(generalization.state)}",
            escape_md_prose(generalization.explanation),
            "\n".join(rows),
            f"<sub>{escape_md_prose(generalization.scope)}</sub>",
        ]
    )


def _leakage_section(leakage: Leakage) -> str:
    hits = leakage.hits
    heading = f"#### Harness leakage: {_plural(len(hits), 'hit')}"
    if leakage.held_out_hits:
        heading += f", {leakage.held_out_hits} from held-out cases"
    scanned = len(leakage.files_scanned)
    intro = (
        f"Scanned {_plural(scanned, 'file')} for {leakage.materials_considered} case "
        f"text(s) of at least {leakage.min_chars} characters after folding case, "
        "whitespace, invisible format characters and compatibility forms (NFKC)."
    )
    blocks = [heading, intro]
    if hits:
        blocks.append(leak_hit_table(hits[:MAX_MARKDOWN_HITS]))
        more = len(hits) - MAX_MARKDOWN_HITS
        if more > 0 or leakage.truncated:
            blocks.append(
                f"{max(more, 0)} more listed hit(s) are in `diff.json`"
                + (" (the scan stopped listing at 200)." if leakage.truncated else ".")
            )
    blocks.append(f"<sub>{escape_md_prose(leakage.scope)}</sub>")
    return "\n\n".join(blocks)


def _has_spend(usage: Usage) -> bool:
    for metric, entry in usage.metrics.items():
        if metric != "cost_usd" and metric not in _TOKEN_METRICS:
            continue
        if entry.baseline.total or entry.current.total:
            return True
    return False


def _usage_value(metric: str, value: float | None) -> str:
    if value is None:
        return "—"
    if metric == "cost_usd":
        return f"${_decimal(value, 6)}"
    if metric == "duration_seconds":
        return f"{value:.3f} s"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def _cost_section(report: DiffReport) -> str | None:
    usage = report.usage
    cost = report.cost_gate
    if cost is None and not _has_spend(usage):
        return None
    blocks = ["#### Cost and usage"]
    if cost is not None:
        verdict = "pass" if cost.passed else "fail"
        blocks.append(
            f"Cost gate on {md_code(cost.metric)}: current/baseline = {cost.ratio:.3f} "
            f"(limit {cost.max_ratio:g}) — **{verdict}**{escape_md_prose(_cost_gap(cost))}"
        )
    blocks.append(f"Mean per attempt over {usage.matched_cases} matched case(s).")
    rows = [
        "| Metric | Baseline | Current | Ratio | Reported attempts |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for metric, entry in usage.metrics.items():
        base = entry.baseline
        cur = entry.current
        ratio = "—" if entry.ratio is None else f"{entry.ratio:.3f}"
        rows.append(
            f"| {metric} | {_usage_value(metric, base.mean)} | "
            f"{_usage_value(metric, cur.mean)} | {ratio} | "
            f"{base.reported}/{base.attempts} → {cur.reported}/{cur.attempts} |"
        )
    blocks.append("\n".join(rows))
    share = usage.cache_read_share
    if share is not None and share.baseline is not None and share.current is not None:
        blocks.append(
            f"Prompt cache reads: {_percent(share.baseline)} → {_percent(share.current)} "
            "of input tokens."
        )
    blocks.append(f"<sub>{escape_md_prose(usage.scope)}</sub>")
    return "\n\n".join(blocks)
