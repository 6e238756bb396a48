"""The evaluation report page: a typed page model built from evaluation.json, then rendered.

The model makes every decision (banner wording, tones, number formats, which cases are shown);
the template only lays it out. Everything candidate-controlled (mismatch messages, stderr tails)
reaches the page as plain text and is escaped by the shared autoescaping environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalarc.bundle import EvidenceFolder
from evalarc.canonical import sha256_bytes
from evalarc.errors import EvalArcError
from evalarc.packs import PackTraceView, pack_trace_view
from evalarc.pages.blocks import Card, Fact, score_text
from evalarc.pages.record_fields import RecordField, record_fields
from evalarc.pages.render import render_page
from evalarc.pages.trace import (
    Events,
    TraceView,
    build_trace,
    parse_events,
)

MAX_CASE_ROWS = 2000
"""Case rows rendered; the rest stay in evaluation.json."""
MAX_TRACED_CASES = 200
"""Cases that get a trace replay view; the others keep their record and transcript link."""
RECORDINGS_DIR = "recordings"

RecordingReader = Callable[[str], Events | None]
"""Recording SHA-256 -> the recording's events (None when it cannot be read)."""


def recording_reader(folder: EvidenceFolder) -> RecordingReader:
    """Read recordings from ``folder``'s ``recordings/`` (only files whose bytes hash to their
    name; anything else reads as absent)."""

    def read(sha256: str) -> Events | None:
        if len(sha256) != 64 or any(char not in "0123456789abcdef" for char in sha256):
            return None
        try:
            data = folder.read_bytes(f"{RECORDINGS_DIR}/{sha256}.jsonl")
        except EvalArcError:
            return None
        return parse_events(data) if sha256_bytes(data) == sha256 else None

    return read


REPORT_SECTIONS: dict[str, str] = {
    "task": "overview",
    "candidate_sha256": "reproduction",
    "grader_sha256": "reproduction",
    "cases_sha256": "reproduction",
    "runtime": "reproduction",
    "seeds": "reproduction",
    "valid": "verdict",
    "status": "verdict",
    "score": "cards",
    "resolved": "verdict",
    "dimensions": "dimensions",
    "cases": "cases",
    "evaluation_seconds": "cards",
    "created_at": "reproduction",
    "evalarc_version": "reproduction",
}
"""Top-level keys of evaluation.json that a dedicated section shows -> its id; every other key is in
the page's "Also recorded" block (:mod:`evalarc.pages.record_fields`)."""
REPORT_FILE = "evaluation.json"


@dataclass(frozen=True)
class DimensionRow:
    name: str
    score: str
    passed: str
    """``passed/assessed`` plus the unassessed count when some runs were unassessed."""
    weight: str
    tone: str


@dataclass(frozen=True)
class CaseRow:
    anchor: str
    case_id: str
    seed: int
    dimension: str
    status: str
    tone: str
    failed_checks: str
    checks_completed: int
    seconds: str
    first_problem: str
    """The case's error: the first mismatch (expected and got) or the fault; empty if passed."""
    recording: str | None
    """Relative link to the case's transcript, when one was recorded."""
    record_json: str
    trace: TraceView | None = None
    """The step-by-step replay of the case (support episode, transcript or report review)."""
    open: bool = False
    """Shown expanded: a failing case with a trace."""


@dataclass(frozen=True)
class EvaluationPage:
    tone: str
    banner: str
    detail: str
    next_step: str
    line: str
    cards: list[Card]
    dimensions: list[DimensionRow]
    cases: list[CaseRow]
    hidden_cases: int
    reproduction: list[Fact]
    runtime_json: str
    record: list[RecordField] = field(default_factory=list)
    """Top-level report fields without a dedicated section."""


def _banner(report: Mapping[str, Any]) -> tuple[str, str, str, str]:
    cases = report["cases"]
    if not report["valid"]:
        unassessed = sum(1 for case in cases if case["status"] == "environment_error")
        return (
            "bad",
            "Unassessed: the environment failed",
            f"{unassessed} of {len(cases)} case(s) could not be run; the score is withheld.",
            "Fix the environment (Docker engine, image, command) and run again.",
        )
    failed = sum(1 for case in cases if case["status"] != "passed")
    if report["resolved"]:
        return (
            "ok",
            "Resolved: every case passed",
            f"{len(cases)} of {len(cases)} cases passed.",
            "",
        )
    return (
        "bad",
        f"Not resolved: {failed} of {len(cases)} case(s) failed",
        "A partial score is not acceptance: resolution needs every case to pass.",
        "Read the failing cases below: each shows its first mismatch or fault.",
    )


def _dimension_rows(report: Mapping[str, Any]) -> list[DimensionRow]:
    rows: list[DimensionRow] = []
    for name, group in report["dimensions"].items():
        passed = f"{group['passed']}/{group['assessed']}"
        unassessed = group["total"] - group["assessed"]
        if unassessed:
            passed += f" ({unassessed} unassessed)"
        score = group["score"]
        tone = "ok" if score == 1 else "bad"
        rows.append(
            DimensionRow(
                name, score_text(score), passed, f"{100 * float(group['weight']):g}%", tone
            )
        )
    return rows


def _case_rows(
    cases: list[Mapping[str, Any]],
    recordings: RecordingReader | None,
    view: PackTraceView,
) -> list[CaseRow]:
    rows: list[CaseRow] = []
    for number, case in enumerate(cases[:MAX_CASE_ROWS], start=1):
        checks: Mapping[str, Any] = case["checks"]
        failed = ", ".join(name for name, value in checks.items() if value is False)
        unassessed = ", ".join(name for name, value in checks.items() if value is None)
        recording = case.get("recording_sha256")
        trace: TraceView | None = None
        if number <= MAX_TRACED_CASES:
            events = (
                recordings(recording)
                if recordings is not None and isinstance(recording, str)
                else None
            )
            trace = build_trace(view, case, events, f"case-{number}")
        rows.append(
            CaseRow(
                anchor=f"case-{number}",
                case_id=str(case["case_id"]),
                seed=int(case["seed"]),
                dimension=str(case.get("dimension", "")),
                status=str(case["status"]).replace("_", " "),
                tone="ok" if case["status"] == "passed" else "bad",
                failed_checks=failed or (f"unassessed: {unassessed}" if unassessed else "—"),
                checks_completed=int(case.get("checks_completed", 0)),
                seconds=f"{float(case['duration_seconds']):.3f}",
                first_problem=str(case["error"] or ""),
                recording=f"{RECORDINGS_DIR}/{recording}.jsonl"
                if isinstance(recording, str)
                else None,
                record_json=json.dumps(case, indent=2, ensure_ascii=False),
                trace=trace,
                open=trace is not None and case["status"] != "passed",
            )
        )
    return rows


def build_evaluation_page(
    report: Mapping[str, Any], recordings: RecordingReader | None = None
) -> EvaluationPage:
    """The page model of an ``evalarc.evaluation.v2`` report.

    ``recordings`` reads a case's recording by SHA-256 (from the report folder); without it,
    cases whose trace lives only in their recording get no replay view."""
    cases: list[Mapping[str, Any]] = list(report["cases"])
    tone, banner, detail, next_step = _banner(report)
    task = report["task"]
    runtime = report["runtime"]
    passed = sum(1 for case in cases if case["status"] == "passed")
    backend = str(runtime["backend"])
    if runtime.get("image"):
        backend += f" · {runtime['image']}"
    cards = [
        Card(score_text(report["score"]), "weighted score", alert=not report["resolved"]),
        Card(f"{passed}/{len(cases)}", "cases passed", alert=passed != len(cases)),
        Card(backend, "execution backend"),
        Card(f"{float(report['evaluation_seconds']):.1f} s", "host seconds"),
    ]
    reproduction = [
        Fact("candidate_sha256", str(report["candidate_sha256"])),
        Fact("grader_sha256", str(report["grader_sha256"])),
        Fact("cases_sha256", str(report["cases_sha256"])),
        Fact("seeds", " ".join(str(seed) for seed in report["seeds"])),
        Fact("created_at", str(report["created_at"])),
        Fact("evalarc_version", str(report["evalarc_version"])),
    ]
    return EvaluationPage(
        record=record_fields(report, REPORT_SECTIONS, REPORT_FILE),
        tone=tone,
        banner=banner,
        detail=detail,
        next_step=next_step,
        line=f"{task['id']} · {task['domain']} · v{task['version']} · {report['status']}",
        cards=cards,
        dimensions=_dimension_rows(report),
        cases=_case_rows(cases, recordings, pack_trace_view(str(task["id"]))),
        hidden_cases=max(0, len(cases) - MAX_CASE_ROWS),
        reproduction=reproduction,
        runtime_json=json.dumps(runtime, indent=2, ensure_ascii=False),
    )


def render_evaluation_page(
    report: Mapping[str, Any], recordings: RecordingReader | None = None
) -> str:
    page = build_evaluation_page(report, recordings)
    return render_page(
        "evaluation.html.j2", title=f"Evaluation · {report['task']['id']}", page=page
    )
