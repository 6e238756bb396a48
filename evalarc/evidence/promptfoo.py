"""Case evidence from a promptfoo JSON output: per result row (one repeat of one test on one
provider), the rendered prompt, the vars, the output, every assertion's pass, score and reason,
and any provider error. Case ids come from the promptfoo reader's own labelling
(:func:`evalarc.formats.promptfoo.case_labels`), so they match the diff's rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalarc.evidence.model import CaseEvidence, Section, SideEvidence
from evalarc.formats.promptfoo import case_labels, provider_name


def _rows(path: Path) -> list[dict[str, Any]]:
    try:
        document = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        return []
    results = document.get("results") if isinstance(document, dict) else None
    rows = results.get("results") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        return []
    return [row for row in rows if isinstance(row, dict)]


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _row_sections(row: dict[str, Any], repeat: int) -> list[Section]:
    provider = provider_name(row.get("provider"))
    prompt = _as_dict(row.get("prompt"))
    response = _as_dict(row.get("response"))
    grading = _as_dict(row.get("gradingResult"))
    passed = row.get("success")
    tone = "ok" if passed is True else "bad" if passed is False else "warn"
    head = Section(f"Repeat {repeat} · {provider}", tone=tone)
    head.add("prompt", prompt.get("raw"), pre=True)
    head.add("prompt template", prompt.get("label"), pre=True)
    test_case = _as_dict(row.get("testCase"))
    head.add("vars", test_case.get("vars") if "vars" in test_case else row.get("vars"))
    head.add("output", response.get("output"), pre=True)
    head.add("error", row.get("error"), pre=True)
    head.add("provider error", response.get("error"), pre=True)
    head.add("grading reason", grading.get("reason"), pre=True)
    head.add("score", row.get("score"))
    sections = [head]
    components = grading.get("componentResults")
    for number, component in enumerate(components if isinstance(components, list) else [], 1):
        if not isinstance(component, dict):
            continue
        assertion = _as_dict(component.get("assertion"))
        name = str(assertion.get("metric") or assertion.get("type") or f"assertion {number}")
        ok = component.get("pass")
        section = Section(
            f"Repeat {repeat} · assertion {name}",
            tone="ok" if ok is True else "bad" if ok is False else "warn",
        )
        section.add("pass", ok)
        section.add("score", component.get("score"))
        section.add("reason", component.get("reason"), pre=True)
        section.add("expected value", assertion.get("value"), pre=True)
        sections.append(section)
    return sections


def read_promptfoo_evidence(path: Path) -> CaseEvidence:
    """Evidence for every case label of the file, repeats in file order."""
    rows = _rows(path)
    found: CaseEvidence = {}
    repeats: dict[str, int] = {}
    for label, row in zip(case_labels(rows), rows, strict=True):
        side = found.setdefault(label, SideEvidence())
        repeats[label] = repeats.get(label, 0) + 1
        for section in _row_sections(row, repeats[label]):
            side.add(section)
    return found
