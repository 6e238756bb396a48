"""The diff report page: a typed page model built from diff.json, then rendered.

The model holds every decision (verdict wording, tones, fractions); the template only lays it
out, so the model can be tested without HTML.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalarc.review.diff import BLOCKING_KINDS, overall_passed
from evalarc.site.render import render_page

MAX_ROWS = 2000
"""Rows rendered as HTML (readable without JavaScript); the rest stay in diff.json, and on a
page with the site script they ride in a JSON data island that ``assets/evalarc.js`` pages
through on demand, so a 20,000-case diff stays usable."""
EVIDENCE_CHARS = 400

IslandCell = str | tuple[str, str]
"""A table cell bound for a JSON data island: plain text, or ``(text, style)`` where style is
``code`` or a badge class (``badge ok``/``badge bad``)."""
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
class Card:
    value: str
    label: str
    alert: bool = False


@dataclass(frozen=True)
class ChangeRow:
    label: str
    tone: str
    case_id: str
    check: str
    baseline: str
    current: str
    evidence: str


@dataclass(frozen=True)
class InputSide:
    role: str
    name: str
    sha256: str
    identity: str


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
    more_rows: dict[str, Any]
    """The changes beyond the HTML rows as a :func:`table_island`, in the table's order."""
    inputs: list[InputSide]
    interpretation: str


def _fraction(tally: dict[str, Any] | None) -> str:
    if tally is None:
        return "absent"
    text = f"{tally['passed']}/{tally['assessed']}"
    unassessed = tally["attempts"] - tally["assessed"]
    return text + (f" ({unassessed} unassessed)" if unassessed else "")


def _evidence(row: dict[str, Any]) -> str:
    texts: list[str] = []
    for key in ("current_detail", "baseline_detail"):
        for attempt in row.get(key) or []:
            evidence = attempt.get("evidence")
            if isinstance(evidence, str) and evidence and evidence not in texts:
                texts.append(evidence)
        if texts:
            break
    joined = "; ".join(texts)
    return joined[:EVIDENCE_CHARS] if joined else "—"


def _headline(run: dict[str, Any]) -> tuple[str, str]:
    headline = run.get("headline")
    if not headline or headline.get("value") is None:
        return "—", "headline (none recorded)"
    return f"{headline['value']:.4g}", str(headline["name"])


def build_diff_page(report: dict[str, Any], *, html_rows: int = MAX_ROWS) -> DiffPage:
    """The page model; ``html_rows`` changes are rendered as HTML, the rest go to the island."""
    passed = overall_passed(report)
    blocking = int(report["blocking_changes"])
    reasons: list[str] = []
    if blocking:
        reasons.append(f"{blocking} check(s) lost passes or coverage")
    if report.get("current_incomplete"):
        reasons.append("current run incomplete")
    if report.get("baseline_incomplete"):
        reasons.append("baseline run incomplete")
    if report.get("generalization_required") and not report.get("generalization_passed"):
        reasons.append("generalization was required and not shown")
    cost_gate = report.get("cost_gate")
    if cost_gate is not None and not cost_gate.get("passed"):
        reasons.append("the cost gate failed")
    reason_text = "; ".join(reasons)
    reason_text = reason_text[:1].upper() + reason_text[1:]
    noisy = int(report.get("blocking_changes_within_sampling_noise") or 0)
    if passed:
        next_step = ""
    elif reasons == ["baseline run incomplete"]:
        next_step = "Rerun the baseline to completion and compare again."
    else:
        next_step = "Read the blocking rows below and their evidence"
        if noisy:
            verb = "is" if noisy == 1 else "are"
            next_step += f"; {noisy} {verb} within sampling noise, so record more attempts"
        next_step += "."
    base_value, base_label = _headline(report["baseline"])
    cur_value, cur_label = _headline(report["current"])
    cards = [
        Card(base_value, f"baseline {base_label}"),
        Card(cur_value, f"current {cur_label}"),
        Card(str(blocking), "checks lost passes or coverage", alert=not report["gate_passed"]),
        Card(str(report["counts"].get("improved", 0)), "checks improved"),
    ]
    rows = []
    for change in report["changes"]:
        kind = change["kind"]
        tone = "bad" if kind in BLOCKING_KINDS else "ok"
        label = ("✗ " if tone == "bad" else "✓ ") + kind.replace("_", " ")
        if change.get("within_sampling_noise") is True:
            label += " · within noise"
        if change.get("same_output_different_verdict"):
            label += " · same output, new verdict"
        rows.append(
            ChangeRow(
                label=label,
                tone=tone,
                case_id=change["case_id"],
                check=change["check"],
                baseline=_fraction(change.get("baseline")),
                current=_fraction(change.get("current")),
                evidence=_evidence(change),
            )
        )
    more_rows = table_island(
        [
            [
                (row.label, f"badge {row.tone}"),
                (row.case_id, "code"),
                row.check,
                row.baseline,
                row.current,
                row.evidence,
            ]
            for row in rows[html_rows:]
        ]
    )
    inputs = [
        InputSide(
            role=role,
            name=report[role]["source"]["name"],
            sha256=report[role]["source"]["sha256"],
            identity=json.dumps(report[role]["identity"], sort_keys=True, ensure_ascii=False),
        )
        for role in ("baseline", "current")
    ]
    return DiffPage(
        passed=passed,
        verdict_title="Gate passed: no check lost passes" if passed else "Gate failed",
        reasons=reason_text,
        next_step=next_step,
        format=report["format"],
        baseline_name=inputs[0].name,
        current_name=inputs[1].name,
        cards=cards,
        rows=rows[:html_rows],
        hidden_rows=max(0, len(report["changes"]) - html_rows),
        more_rows=more_rows,
        inputs=inputs,
        interpretation=str(report.get("interpretation", "")),
    )


def render_diff_page(report: dict[str, Any]) -> str:
    return render_page("diff.html.j2", title="Results diff", page=build_diff_page(report))
