"""Case evidence from a promptfoo JSON output: per result row (one repeat of one test on one
provider), the rendered prompt, the vars, the output, every assertion's pass, score and reason,
and any provider error. Case ids come from the promptfoo reader's own labelling
(:func:`evalarc.formats.promptfoo.row_key` and :func:`~evalarc.formats.promptfoo.matrix_ids`),
so they match the diff's rows."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence
from evalarc.formats.model import MatrixKey, Run
from evalarc.formats.promptfoo import each_row, matrix_ids, provider_name, row_key
from evalarc.formats.promptfoo_rows import component_names


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _row_sections(row: dict[str, Any], repeat: int) -> list[Section]:
    provider = provider_name(row.get("provider"))
    prompt = _as_dict(row.get("prompt"))
    response = _as_dict(row.get("response"))
    grading = _as_dict(row.get("gradingResult"))
    passed = row.get("success")
    tone = "ok" if passed is True else "bad" if passed is False else "warn"
    # The head carries the row's own verdict: the diff's (test) check.
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
    listed = components if isinstance(components, list) else []
    # Titled with the diff's own check names (content-derived, ordinals among identical ones).
    for name, component in zip(component_names(listed), listed, strict=True):
        if not isinstance(component, dict):
            continue
        assertion = _as_dict(component.get("assertion"))
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


def read_promptfoo_evidence(
    path: Path, only: Collection[str] | None = None, run: Run | None = None
) -> CaseEvidence:
    """Evidence for every case label of the file (``only``: these labels alone), repeats in file
    order. The file is streamed row by row with the promptfoo reader's own walker (its caps
    apply); only each row's bounded sections are kept. A file the reader refuses shows no
    evidence.

    ``run``, the diff's model of this same file, names every label before the file is read
    (its matrix holds the file's keys in first-seen order), so with ``only`` the sections of the
    other rows are never built: a page listing 10,000 of 92,000 cases keeps those alone. The
    distinct keys the rows give, in order, are checked against the model's (labels are a function
    of that list); if they differ, the file is read again without it."""
    expected: dict[MatrixKey, str] | None = None
    wanted: set[MatrixKey] | None = None
    if only is not None and run is not None and run.matrix:
        expected = matrix_ids(run.matrix.values())
        wanted = {key for key, label in expected.items() if label in only}
    rows: list[tuple[MatrixKey, list[Section]]] = []
    repeats: dict[MatrixKey, int] = {}  # one key is one case id (matrix_ids never pools two)

    def take(position: int, row: dict[str, Any]) -> None:
        key = row_key(row, position)
        repeats[key] = repeats.get(key, 0) + 1
        if wanted is None or key in wanted:
            rows.append((key, _row_sections(row, repeats[key])))

    try:
        each_row(path, take)
    except EvalArcError:
        return {}
    if expected is None:
        ids = matrix_ids(repeats)  # the distinct keys in first-seen order, as the rows give them
    elif list(repeats) == list(expected):  # the same keys in the same order: the same labels
        ids = expected
    else:
        return read_promptfoo_evidence(path, only)
    found: CaseEvidence = {}
    for key, sections in rows:
        if only is not None and ids[key] not in only:
            continue
        side = found.setdefault(ids[key], SideEvidence())
        for section in sections:
            side.add(section)
    return found
