"""Per-case evidence read from a report folder's preserved input files, for case views.

Separate from the readers in :mod:`evalarc.formats` (which build the diff's model and keep only
short evidence): this reads the same bytes again when a page is built, keeps bounded texts per
case (see :mod:`evalarc.evidence.model`), and is deterministic, so ``verify`` re-renders the
same case views byte for byte.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from evalarc.evidence.model import CaseEvidence
from evalarc.formats.budget import reading_budget
from evalarc.formats.model import Run


def read_case_evidence(
    path: Path,
    fmt: str,
    only: Collection[str] | None = None,
    run: Run | None = None,
    threshold: float = 1.0,
) -> CaseEvidence:
    """Evidence per case id from the result file ``path`` of format ``fmt`` (``only``: of these
    case ids alone; ``run``: the file already read into the model, when the caller has it;
    ``threshold``: the diff's numeric pass threshold, which gives each Inspect epoch its
    verdict); an empty mapping for formats whose evidence is shown another way (evaluations:
    their trace replay)."""
    with reading_budget(str(path), path.stat().st_size):
        if fmt == "inspect":
            from evalarc.evidence.inspect import read_inspect_evidence

            return read_inspect_evidence(path, only, threshold)
        if fmt == "promptfoo":
            from evalarc.evidence.promptfoo import read_promptfoo_evidence

            return read_promptfoo_evidence(path, only, run)
        if fmt == "junit":
            from evalarc.evidence.junit import read_junit_evidence

            return read_junit_evidence(path, only, run)
        if fmt == "swebench":
            from evalarc.evidence.swebench import read_swebench_evidence

            return read_swebench_evidence(path, only)
        if fmt == "lmeval":
            from evalarc.evidence.lmeval import read_lmeval_evidence

            return read_lmeval_evidence(path, only)
        if fmt == "openai_evals":
            from evalarc.evidence.openai_evals import read_openai_evals_evidence

            return read_openai_evals_evidence(path, only)
    return {}
