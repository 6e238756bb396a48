"""Case evidence from lm-evaluation-harness samples: per document and filter, the target, the
request arguments (the prompt and, for multiple choice, each continuation), the raw and filtered
responses and each metric's value. Case ids are the reader's own
(:func:`evalarc.formats.lmeval.case_id`), so they match the diff's rows."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence
from evalarc.formats.jsonlines import json_lines
from evalarc.formats.lmeval import WHAT, case_id, is_samples_line


def read_lmeval_evidence(path: Path, only: Collection[str] | None = None) -> CaseEvidence:
    found: CaseEvidence = {}
    try:
        for _, line in json_lines(path, what=WHAT):
            if not is_samples_line(line):
                return {}
            case = case_id(line["doc_id"], str(line["doc_hash"]))
            if only is not None and case not in only:
                continue
            metrics = line.get("metrics")
            names = [str(m) for m in metrics] if isinstance(metrics, list) else []
            values = {name: line.get(name) for name in names}
            verdicts = [v for v in values.values() if isinstance(v, (int, float))]
            tone = "ok" if verdicts and all(v >= 1 for v in verdicts) else "bad"
            section = Section(f"Filter {line.get('filter')}", tone=tone)
            for metric, value in values.items():
                section.add(metric, value)
            section.add("target", line.get("target"))
            section.add("filtered_resps", line.get("filtered_resps"), pre=True)
            section.add("arguments", line.get("arguments"), pre=True)
            section.add("resps", line.get("resps"), pre=True)
            section.add("doc", line.get("doc"), pre=True)
            section.add("doc_hash", line.get("doc_hash"))
            found.setdefault(case, SideEvidence()).add(section)
    except EvalArcError:
        return {}
    return found
