"""Case evidence from an OpenAI Evals record log: per sample, its events in the order evals
recorded them (``sampling``: the prompt and the sampled text; ``match``: correct, expected,
picked; errors), so a page shows what the model said and how the grader read it."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence
from evalarc.formats.jsonlines import json_lines
from evalarc.formats.openai_evals import WHAT


def read_openai_evals_evidence(path: Path, only: Collection[str] | None = None) -> CaseEvidence:
    found: CaseEvidence = {}
    try:
        for _, line in json_lines(path, what=WHAT):
            sample = line.get("sample_id")
            kind = line.get("type")
            data = line.get("data")
            if not isinstance(sample, str) or not isinstance(kind, str):
                continue
            if (only is not None and sample not in only) or not isinstance(data, dict):
                continue
            tone = ""
            if kind == "match":
                tone = "ok" if data.get("correct") is True else "bad"
            elif kind == "error":
                tone = "warn"
            section = Section(f"Event {line.get('event_id')} · {kind}", tone=tone)
            for key, value in data.items():
                section.add(str(key), value, pre=key in ("prompt", "sampled"))
            found.setdefault(sample, SideEvidence()).add(section)
    except EvalArcError:
        return {}
    return found
