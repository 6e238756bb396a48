"""The audit report page: a typed page model built from audit.json, then rendered.

The model decides every word and tone (the verdict, which faults are narrow, how margins read);
``audit.html.j2`` only lays it out. Names and messages come from the pack and the runs and are
escaped by the shared autoescaping environment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalarc.pages.blocks import Card, Fact, score_text
from evalarc.pages.record_fields import RecordField, record_fields
from evalarc.pages.remove_case import RemoveCaseView, build_remove_case_view
from evalarc.pages.render import render_page
from evalarc.review.audit import audit_status, reference_status

EVALUATIONS_DIR = "evaluations"


REPORT_SECTIONS: dict[str, str] = {
    "task": "overview",
    "language": "overview",
    "seeds": "overview",
    "without_cases": "verdict",
    "valid": "verdict",
    "reference_passed": "verdict",
    "passed": "verdict",
    "reference": "controls",
    "mutants": "controls",
    "mutation_score": "cards",
    "killed": "cards",
    "total": "cards",
    "detection": "narrow",
    "interpretation": "measures",
    "created_at": "reproduction",
    "evalarc_version": "reproduction",
}
"""Top-level keys of audit.json that a dedicated section shows -> its id; every other key is in
the page's "Also recorded" block (:mod:`evalarc.pages.record_fields`)."""
REPORT_FILE = "audit.json"


@dataclass(frozen=True)
class ControlRow:
    name: str
    kind: str
    """``positive control`` or the fault's target dimension."""
    score: str
    outcome: str
    """``resolved``/``not resolved`` for the reference, ``detected``/``survived``/
    ``unassessed`` for a fault."""
    tone: str
    margin: str
    detectors: str
    """The distinct cases failing the target dimension, comma separated (or a dash)."""
    narrow: bool
    """Caught by exactly one case."""
    evaluation: str
    """Relative link to the control's evaluation report."""


@dataclass(frozen=True)
class AuditPage:
    tone: str
    banner: str
    detail: str
    line: str
    cards: list[Card]
    controls: list[ControlRow]
    narrow_faults: list[str]
    sole_detectors: list[str]
    reduced_suite: str
    interpretation: str
    reproduction: list[Fact]
    remove_case: RemoveCaseView
    """Which faults lose coverage without each case (recomputed by ``compute_audit``)."""
    record: list[RecordField] = field(default_factory=list)
    """Top-level report fields without a dedicated section."""


def _banner(audit: Mapping[str, Any]) -> tuple[str, str, str]:
    status = audit_status(audit)
    killed, total = audit["killed"], audit["total"]
    if status == "INVALID":
        return (
            "bad",
            "Invalid audit: a run failed for environmental reasons",
            "An unassessed run never counts as a detection, so no mutation score is given.",
        )
    if status == "PASS":
        weakest = audit["detection"]["weakest_margin"]
        return (
            "ok",
            f"Passed: the reference resolves and all {total} declared faults are detected",
            f"The narrowest detection rests on {weakest} case(s).",
        )
    problems: list[str] = []
    if not audit["reference_passed"]:
        problems.append("the reference does not resolve")
    if killed < total:
        problems.append(f"{total - killed} of {total} declared faults survive")
    return ("bad", "Failed: " + " and ".join(problems), "Surviving faults count as margin 0.")


def _fault_row(row: Mapping[str, Any]) -> ControlRow:
    margin = row["detection_margin"]
    if not row["valid"]:
        outcome, tone = "unassessed", "bad"
    elif row["killed"]:
        outcome, tone = "detected", "ok"
    else:
        outcome, tone = "survived", "bad"
    cases: Sequence[str] = row["failing_cases"]
    return ControlRow(
        name=str(row["name"]),
        kind=str(row["target_dimension"]),
        score=score_text(row["score"]),
        outcome=outcome,
        tone=tone,
        margin="—" if margin is None else str(margin),
        detectors=", ".join(cases) or "—",
        narrow=bool(row["killed"]) and margin == 1,
        evaluation=f"{EVALUATIONS_DIR}/{row['name']}.json",
    )


def build_audit_page(audit: Mapping[str, Any]) -> AuditPage:
    """The page model of an ``evalarc.audit.v2`` report."""
    tone, banner, detail = _banner(audit)
    reference = audit["reference"]
    detection = audit["detection"]
    total = audit["total"]
    weakest = detection["weakest_margin"]
    single = list(detection["single_case_detections"])
    reference_row = ControlRow(
        name="reference",
        kind="positive control",
        score=score_text(reference["score"]),
        outcome={"PASS": "resolved", "FAIL": "not resolved"}.get(
            reference_status(audit), "unassessed"
        ),
        tone="ok" if audit["reference_passed"] else "bad",
        margin="—",
        detectors="—",
        narrow=False,
        evaluation=f"{EVALUATIONS_DIR}/reference.json",
    )
    cards = [
        Card(
            score_text(audit["mutation_score"]),
            "mutation score",
            alert=audit["mutation_score"] != 1,
        ),
        Card(
            f"{audit['killed']}/{total}", "declared faults detected", alert=audit["killed"] != total
        ),
        Card(
            "unavailable" if weakest is None else str(weakest),
            "weakest margin (cases)",
            alert=weakest is None or weakest <= 1,
        ),
        Card(f"{len(single)}/{total}", "faults caught by a single case", alert=bool(single)),
    ]
    task = audit["task"]
    without = list(audit["without_cases"])
    runtime = reference["runtime"]
    return AuditPage(
        record=record_fields(audit, REPORT_SECTIONS, REPORT_FILE),
        tone=tone,
        banner=banner,
        detail=detail,
        line=(
            f"{task['id']} · v{task['version']} · {audit['language']} reference · seeds "
            + " ".join(str(seed) for seed in audit["seeds"])
        ),
        cards=cards,
        controls=[reference_row, *(_fault_row(row) for row in audit["mutants"])],
        narrow_faults=single,
        sole_detectors=list(detection["sole_detector_cases"]),
        reduced_suite=(
            "Reduced suite: the controls ran without " + ", ".join(without) + "." if without else ""
        ),
        interpretation=str(audit["interpretation"]),
        reproduction=[
            Fact("grader_sha256", str(reference["grader_sha256"])),
            Fact("cases_sha256", str(reference["cases_sha256"])),
            Fact("backend", str(runtime.get("backend"))),
            Fact("image", str(runtime.get("image"))),
            Fact("image_id", str(runtime.get("image_id"))),
            Fact("command", json.dumps(runtime.get("command"))),
            Fact("created_at", str(audit["created_at"])),
            Fact("evalarc_version", str(audit["evalarc_version"])),
        ],
        remove_case=build_remove_case_view(audit),
    )


def render_audit_page(audit: Mapping[str, Any]) -> str:
    page = build_audit_page(audit)
    return render_page("audit.html.j2", title=f"Audit · {audit['task']['id']}", page=page)
