"""The eval-health report page: a typed page model built from the health report
(:class:`evalarc.review.health_model.HealthReport`, and the last result file for the recorded
outputs), then rendered by ``health.html.j2``.

The model holds every decision (wording, tones, limits); the template only lays it out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalarc.formats.model import Run
from evalarc.pages.blocks import Card, TriageRow
from evalarc.pages.record_fields import RecordField, record_fields
from evalarc.pages.render import render_page
from evalarc.review.health import TRIAGE_NEXT_STEPS
from evalarc.review.health_model import WARNING, Finding, HealthReport
from evalarc.review.pairing import tally

MAX_CASES = 2000
"""Cases of the last file listed with their outputs; the rest stay in cases.jsonl."""
MAX_ITEMS = 200
"""Item rows shown per finding; the rest stay in health.json."""
OUTPUT_CHARS = 2000


REPORT_SECTIONS: dict[str, str] = {
    "findings": "findings",
    "healthy": "verdict",
    "warnings": "findings",
    "runs": "runs",
    "triage": "triage",
    "noise": "runs",
    "scope": "scope",
}
"""Top-level keys of health.json that a dedicated section shows -> its id; every other key is in
the page's "Also recorded" block (:mod:`evalarc.pages.record_fields`)."""
REPORT_FILE = "health.json"


@dataclass(frozen=True)
class RunRow:
    name: str
    sha256_prefix: str
    cases: int
    checks: int
    pass_rate: str
    interval: str
    max_attempts: int
    unassessed: int
    status: str


@dataclass(frozen=True)
class AttemptOutput:
    label: str
    verdicts: str
    stop_reason: str
    output: str
    cut: bool


@dataclass(frozen=True)
class CaseRow:
    anchor: str
    case_id: str
    passes: str
    category: str
    tone: str
    attempts: list[AttemptOutput]


@dataclass(frozen=True)
class ItemRow:
    file: str
    case_id: str
    check: str
    counts: str
    detail: str


@dataclass(frozen=True)
class FindingBlock:
    id: str
    severity: str
    tone: str
    message: str
    items: list[ItemRow]
    hidden_items: int


@dataclass(frozen=True)
class HealthPage:
    healthy: bool
    verdict_title: str
    verdict_detail: str
    cards: list[Card]
    runs: list[RunRow]
    triage: list[TriageRow]
    last_file: str
    cases: list[CaseRow]
    hidden_cases: int
    findings: list[FindingBlock]
    scope: str
    record: list[RecordField] = field(default_factory=list)
    """Top-level report fields without a dedicated section."""


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _verdict(passed: bool | None) -> str:
    return "unassessed" if passed is None else ("pass" if passed else "fail")


def _case_rows(last_run: Run, categories: dict[str, str]) -> list[CaseRow]:
    rows = []
    for index, case_id in enumerate(sorted(last_run.cases)[:MAX_CASES]):
        passed = assessed = 0
        for attempts in last_run.cases[case_id].values():
            counts = tally(attempts)
            passed += counts.passed
            assessed += counts.assessed
        outputs = []
        for number, meta in enumerate(last_run.samples.get(case_id, ()), 1):
            text = meta.output_text or ""
            outputs.append(
                AttemptOutput(
                    label=f"attempt {number}" + (" · truncated" if meta.truncated else ""),
                    verdicts=", ".join(
                        f"{check}: {_verdict(value)}"
                        for check, value in sorted(meta.verdicts.items())
                    ),
                    stop_reason=meta.stop_reason or "—",
                    output=text[:OUTPUT_CHARS] if meta.output_text is not None else "",
                    cut=len(text) > OUTPUT_CHARS,
                )
            )
        category = categories.get(case_id)
        rows.append(
            CaseRow(
                anchor=f"case-{index + 1}",
                case_id=case_id,
                passes=f"{passed}/{assessed}",
                category=category.replace("_", " ") if category else "passing",
                tone="bad" if category else "ok",
                attempts=outputs,
            )
        )
    return rows


def _finding_block(finding: Finding) -> FindingBlock:
    rows = [
        ItemRow(
            file="—" if item.file is None else item.file,
            case_id=item.case_id,
            check=item.check,
            counts=f"{item.passed}/{item.assessed} of {item.attempts}",
            detail="" if item.detail is None else item.detail,
        )
        for item in finding.items[:MAX_ITEMS]
    ]
    return FindingBlock(
        id=finding.id,
        severity=finding.severity,
        tone="bad" if finding.severity == WARNING else "ok",
        message=finding.message,
        items=rows,
        hidden_items=max(0, finding.total - len(rows)),
    )


def build_health_page(report: HealthReport, last_run: Run | None) -> HealthPage:
    """The page model; ``last_run`` (the last result file) supplies the recorded outputs."""
    warnings = report.warnings
    healthy = report.healthy
    warning_ids = [f.id for f in report.findings if f.severity == WARNING]
    rates = [run.pass_rate for run in report.runs if run.pass_rate is not None]
    cards = [
        Card(str(warnings), "warnings", alert=not healthy),
        Card(_percent(max(rates) if rates else None), "best pass rate"),
        Card(_percent(report.noise.resolvable_change), "resolvable change (last file)"),
        Card(str(len(report.runs)), "result files"),
    ]
    runs = [
        RunRow(
            name=run.source.name,
            sha256_prefix=run.source.sha256[:16],
            cases=run.cases,
            checks=run.checks,
            pass_rate=_percent(run.pass_rate),
            interval="—"
            if run.interval_95 is None
            else f"{_percent(run.interval_95[0])}–{_percent(run.interval_95[1])}",
            max_attempts=run.max_attempts,
            unassessed=run.attempts - run.assessed,
            status="incomplete" if run.incomplete else "complete",
        )
        for run in report.runs
    ]
    triage = [
        TriageRow(
            case_id=entry.case_id,
            category=entry.category.replace("_", " "),
            checks=", ".join(entry.checks),
            next_step=TRIAGE_NEXT_STEPS[entry.category],
        )
        for entry in report.triage
    ]
    categories = {entry.case_id: entry.category for entry in report.triage}
    cases = _case_rows(last_run, categories) if last_run is not None else []
    hidden = max(0, len(last_run.cases) - MAX_CASES) if last_run is not None else 0
    return HealthPage(
        record=record_fields(report.to_json(), REPORT_SECTIONS, REPORT_FILE),
        healthy=healthy,
        verdict_title="Ready to tune against: no warnings"
        if healthy
        else f"Fix {warnings} warning(s) before tuning",
        verdict_detail=", ".join(id_.replace("_", " ") for id_ in warning_ids),
        cards=cards,
        runs=runs,
        triage=triage,
        last_file=report.runs[-1].source.name,
        cases=cases,
        hidden_cases=hidden,
        findings=[_finding_block(finding) for finding in report.findings],
        scope=report.scope,
    )


def render_health_page(report: HealthReport, last_run: Run | None) -> str:
    return render_page(
        "health.html.j2", title="Eval health", page=build_health_page(report, last_run)
    )
