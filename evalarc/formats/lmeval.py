"""Read lm-evaluation-harness ``--log_samples`` output (``samples_<task>_<timestamp>.jsonl``).

lm-eval writes one line per document and filter: ``doc_id``, ``doc``, ``target``,
``arguments``, ``resps``, ``filtered_resps``, ``filter``, ``metrics`` (the names of the metrics
scored) and each metric's value, plus ``doc_hash`` / ``prompt_hash`` / ``target_hash``. A case is
the ``doc_id`` with the first characters of its ``doc_hash`` (``doc 3 [098d2b31]``): one
samples file is one task, and the lines do not name it, so a document whose content differs
under the same id is another case (removed and added, which blocks) rather than a false match;
a check is a metric under a filter, named as lm-eval names it in its
results (``acc``, ``exact_match,strict-match``; the ``none`` filter is left out).

Per-document values of 0/1 (``acc``, ``exact_match``) or true/false are verdicts (pass at the
threshold, default 1.0). Any other value (a corpus-level metric's tuple, a log-likelihood) is not
a per-document verdict: that check is unassessed, with the value stated. When the file keeps
the name lm-eval gives it (``samples_<task>_<timestamp>.jsonl``) and its
``results_<timestamp>.json`` lies beside it, the metric means are reconciled with that file.
Nothing read depends on the file name, so a report folder's copy reads the same.

An aggregate ``results_*.json`` alone holds no documents; it is refused with a pointer to the
samples file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalarc.canonical import strict_loads
from evalarc.errors import InputError
from evalarc.formats.figures import agrees
from evalarc.formats.jsonlines import json_lines
from evalarc.formats.model import (
    Attempt,
    Headline,
    Material,
    Run,
    SampleMeta,
    Source,
    cut_evidence,
)
from evalarc.formats.origins import origin_of

WHAT = "lm-eval samples file"
OUTPUT_TEXT_CHARS = 20_000
MAX_RESULTS_BYTES = 32 * 1024 * 1024
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)$")
_MARKERS = ("doc_id", "doc_hash", "filter", "metrics")
RESULTS_MARKERS = frozenset({"versions", "n-shot", "configs", "higher_is_better", "n-samples"})
"""Top-level keys of lm-eval's ``results_<timestamp>.json`` beside ``results``."""


def is_samples_line(first: dict[str, Any]) -> bool:
    """The marker of a samples file: its lines carry doc_id, doc_hash, filter and metrics."""
    return all(key in first for key in _MARKERS)


def results_file_refusal(path: Path | str) -> str:
    return (
        f"{path} is an lm-evaluation-harness results file (aggregate metrics only, no "
        "documents); diff the samples_<task>_<timestamp>.jsonl that lm_eval --log_samples "
        "writes beside it"
    )


MAX_RESULTS_WALK_BYTES = 2 * 1024 * 1024
"""A file starting with ``results`` is walked a second time for lm-eval's markers only up to
this size (lm-eval's ``results_*.json`` is kilobytes; a promptfoo output can be gigabytes)."""


def refuse_lmeval_results(path: Path) -> None:
    """lm-eval's aggregate ``results_<timestamp>.json`` (``results`` first, then ``versions``,
    ``n-shot``, ``configs``...) holds no documents: refused with a pointer to the samples file.
    Called only when ``results`` is a file's first key (promptfoo writes ``evalId`` first); a
    file whose walk fails is left to the promptfoo reader, which names the problem."""
    from evalarc.formats.inspect import top_level_member_types

    if path.stat().st_size > MAX_RESULTS_WALK_BYTES:
        return  # lm-eval's results files are small; a large file is not walked twice
    try:
        keys = {key for key, _ in top_level_member_types(path)}
    except InputError:
        return
    if len(RESULTS_MARKERS & keys) >= 2:
        raise InputError(results_file_refusal(path))


def read_lmeval(path: Path, source: Source, threshold: float) -> Run:
    name = str(path)
    matched = _NAME.match(path.name.removesuffix(".jsonl"))
    cases: dict[str, dict[str, list[Attempt]]] = {}
    samples: dict[str, list[SampleMeta]] = {}
    material: dict[str, list[Material]] = {}
    hashes: dict[int, str] = {}
    sums: dict[str, list[float]] = {}
    seen: set[tuple[int, str]] = set()
    for number, line in _lines(path):
        if not is_samples_line(line):
            if number == 1 and "results" in line and RESULTS_MARKERS & line.keys():
                raise InputError(results_file_refusal(name))
            raise InputError(
                f"{name}: line {number} is not an lm-eval sample (it lacks "
                f"{', '.join(k for k in _MARKERS if k not in line)})"
            )
        doc_id, filter_name, metrics = line["doc_id"], line["filter"], line["metrics"]
        if isinstance(doc_id, bool) or not isinstance(doc_id, int):
            raise InputError(f"{name}: line {number}: doc_id {doc_id!r} is not an integer")
        if not isinstance(filter_name, str) or not isinstance(metrics, list) or not metrics:
            raise InputError(f"{name}: line {number}: filter or metrics of an unknown shape")
        if (doc_id, filter_name) in seen:
            raise InputError(
                f"{name}: doc_id {doc_id} under filter {filter_name!r} appears twice "
                f"(line {number}); EvalArc does not pool them"
            )
        seen.add((doc_id, filter_name))
        doc_hash = line["doc_hash"]
        if not isinstance(doc_hash, str) or not doc_hash:
            raise InputError(f"{name}: line {number}: doc_hash {doc_hash!r} is not a hash")
        if hashes.setdefault(doc_id, doc_hash) != doc_hash:
            raise InputError(f"{name}: doc_id {doc_id} has two doc_hash values (line {number})")
        case = case_id(doc_id, doc_hash)
        checks = cases.setdefault(case, {})
        verdicts: dict[str, bool | None] = {}
        responses = _text(line.get("filtered_resps"))
        for metric in metrics:
            if not isinstance(metric, str) or metric not in line:
                raise InputError(f"{name}: line {number}: metric {metric!r} has no value")
            check = metric if filter_name == "none" else f"{metric},{filter_name}"
            value = line[metric]
            passed, score = _verdict(value, threshold)
            if score is not None:
                sums.setdefault(check, []).append(score)
            evidence = (
                f"target {_text(line.get('target'))!r}, filtered_resps {responses}"
                if passed is not None
                else f"unassessed: {metric} = {_text(value)} is not a per-document verdict"
            )
            checks[check] = [Attempt(passed=passed, value=value, evidence=cut_evidence(evidence))]
            verdicts[check] = passed
        metas = samples.setdefault(case, [])
        if metas:
            metas[0].verdicts.update(verdicts)
        else:
            metas.append(SampleMeta(output_text=responses[:OUTPUT_TEXT_CHARS], verdicts=verdicts))
            material[case] = [
                Material("input", _text(line.get("arguments"))),
                Material("expected", _text(line.get("target"))),
            ]
    if not cases:
        raise InputError(f"{name} holds no lm-eval samples")
    means = {check: sum(values) / len(values) for check, values in sums.items()}
    if matched is not None:
        _reconcile(path, matched["task"], matched["stamp"], means)
    first = next(iter(means), None)
    headline = Headline(f"lm-eval {first}", means[first]) if first is not None else None
    return Run(
        format="lmeval",
        source=source,
        threshold=threshold,
        cases=cases,
        identity={"documents": len(hashes)},
        headline=headline,
        material=material,
        samples=samples,
    )


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The file's lines; a file whose first line is not JSON is checked for lm-eval's results
    shape first, so ``--format lmeval`` on a results file gets the same pointer as detection."""
    lines = json_lines(path, what=WHAT)
    try:
        first = next(lines, None)
    except InputError:
        refuse_lmeval_results(path)
        raise
    if first is not None:
        yield first
        yield from lines


def case_id(doc_id: int, doc_hash: str) -> str:
    """``doc 3 [098d2b31]``: the doc_id and the first characters of lm-eval's doc_hash, so a
    document whose content changed under the same doc_id (another task's file, another dataset
    revision) is another case: it shows as removed and added, never as the same case."""
    return f"doc {doc_id} [{doc_hash[:8]}]"


def _verdict(value: object, threshold: float) -> tuple[bool | None, float | None]:
    """(passed, score): a bool or a number in [0, 1] is a verdict; anything else is none."""
    if isinstance(value, bool):
        return value, float(value)
    if isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1:
        return value >= threshold, float(value)
    return None, None


def _reconcile(path: Path, task: str, stamp: str, means: dict[str, float]) -> None:
    """Compare the samples' metric means with ``results_<stamp>.json`` beside the file, when
    lm-eval wrote one there: a disagreement means the lines were not read as lm-eval read them."""
    results_path = origin_of(path).with_name(f"results_{stamp}.json")
    try:
        if results_path.is_symlink() or not results_path.is_file():
            return
        if results_path.stat().st_size > MAX_RESULTS_BYTES:
            return
        document = strict_loads(results_path.read_bytes())
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        raise InputError(f"{results_path} beside {path} cannot be read as JSON") from None
    results = document.get("results") if isinstance(document, dict) else None
    reported = results.get(task) if isinstance(results, dict) else None
    if not isinstance(reported, dict):
        return
    for check, mean in means.items():
        key = check if "," in check else f"{check},none"
        value = reported.get(key)
        if value is None:
            continue
        if not agrees(value, mean):
            raise InputError(
                f"{path}: the mean of {check} over its documents is {mean!r}, but "
                f"{results_path.name} reports {key} = {value!r}"
            )


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
