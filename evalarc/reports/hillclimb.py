"""``evalarc hillclimb-review`` as a library call: load, compute, write the report folder; and the
recomputation of a saved folder for ``verify``. Both call
:func:`evalarc.review.hillclimb.compute_hillclimb`, so a report and its verification cannot drift.

Folder layout: ``inputs/NN-<original name>`` (0-based, baseline first), ``split.json``,
``harness/NNNN``, ``params.json`` (kind ``hillclimb-review``), ``hillclimb.json``,
``tuning-failures.json``, ``summary.md`` and ``index.html``. ``hillclimb-run`` writes the same
report files into its own folder with :func:`write_review_files`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc.bundle import (
    PARAMS_FILE,
    Derived,
    EvidenceFolder,
    copy_suffix,
    copy_verified,
    params_document,
    staged_folder,
    text_bytes,
    write_bytes,
    write_json,
    write_text,
)
from evalarc.canonical import pretty_json
from evalarc.clock import timestamp
from evalarc.errors import UsageError, VerificationError
from evalarc.formats import load_results
from evalarc.formats.harness import HarnessFile, collect_harness
from evalarc.formats.split import load_split
from evalarc.pages.view import PageView
from evalarc.reports.hillclimb_text import markdown_summary
from evalarc.reports.kind import ReportKind, write_page
from evalarc.reports.recorded_inputs import recorded_harness, recorded_run, recorded_split
from evalarc.review.hillclimb import (
    MAX_STEPS,
    HillclimbOptions,
    compute_hillclimb,
    tuning_failures_document,
)
from evalarc.review.hillclimb_model import HILLCLIMB_SCHEMA, HillclimbReport

REPORT_FILE = "hillclimb.json"
TUNING_FAILURES_FILE = "tuning-failures.json"
SPLIT_FILE = "split.json"
KIND_NAME = "hillclimb-review"


@dataclass(frozen=True)
class HillclimbRequest:
    """Everything a user asked ``evalarc hillclimb-review`` for; ``results[0]`` is the baseline."""

    results: Sequence[Path]
    held_out: Path
    options: HillclimbOptions
    format: str = "auto"
    threshold: float = 1.0
    harness: Sequence[Path] | None = None


def input_copy_name(index: int, original: Path) -> str:
    """``inputs/NN-<original name>``, 0-based in the order given (the baseline is 00), with a
    passive suffix (:func:`evalarc.bundle.copy_suffix`)."""
    return f"inputs/{index:02d}-{original.stem}{copy_suffix(original)}"


def _check_request(request: HillclimbRequest) -> None:
    request.options.validate()
    if isinstance(request.threshold, bool) or not math.isfinite(request.threshold):
        raise UsageError("--threshold must be a finite number")
    steps = len(request.results) - 1
    low = request.options.min_steps
    if not low <= steps <= MAX_STEPS:
        raise UsageError(
            f"give a baseline and {low} to {MAX_STEPS} step result files; got {steps} step(s)"
        )
    seen: dict[str, Path] = {}
    for path in request.results:
        key = os.path.realpath(path)
        if key in seen:
            raise UsageError(
                f"{path} and {seen[key]} are the same file; each result must appear once"
            )
        seen[key] = path


def run_hillclimb_review(request: HillclimbRequest, output: Path | None = None) -> HillclimbReport:
    """Load every result, replay the climb and (with ``output``) publish a report folder."""
    _check_request(request)
    runs = [load_results(path, request.format, request.threshold) for path in request.results]
    split = load_split(request.held_out)
    harness = collect_harness(list(request.harness)) if request.harness is not None else None
    labels = [path.name for path in request.results]
    report = compute_hillclimb(
        runs, labels, split, request.options, harness=harness, created_at=timestamp()
    )
    if output is not None:
        params = hillclimb_params(
            request.options,
            report.format,
            request.threshold,
            labels,
            [input_copy_name(index, path) for index, path in enumerate(request.results)],
            harness_entries(harness),
        )
        with staged_folder(output) as folder:
            for entry, path, run in zip(params["inputs"], request.results, runs, strict=True):
                copy_verified(path, folder / entry["file"], run.source.sha256)
            copy_verified(request.held_out, folder / SPLIT_FILE, split.source.sha256)
            write_review_files(folder, report, params, harness)
    return report


def harness_entries(harness: Sequence[HarnessFile] | None) -> list[dict[str, str]] | None:
    """params.json's harness list: ``harness/NNNN`` copies in scan order, with scan labels."""
    if harness is None:
        return None
    return [
        {"file": f"harness/{index:04d}", "label": item.label, "sha256": item.sha256}
        for index, item in enumerate(harness)
    ]


def hillclimb_params(
    options: HillclimbOptions,
    fmt: str,
    threshold: float,
    labels: Sequence[str],
    inputs: Sequence[str],
    harness: list[dict[str, str]] | None,
) -> dict[str, Any]:
    """params.json of a hillclimb-review folder: every option, the input copies, split, harness."""
    recorded = options.to_params()
    min_steps = recorded.pop("min_steps")  # written after the labels
    return params_document(
        KIND_NAME,
        {
            "format": fmt,
            "threshold": threshold,
            **recorded,
            "labels": list(labels),
            "min_steps": min_steps,
            "inputs": [{"file": name} for name in inputs],
            "split": SPLIT_FILE,
            "harness": harness,
        },
    )


def write_review_files(
    folder: Path,
    report: HillclimbReport,
    params: dict[str, Any],
    harness: Sequence[HarnessFile] | None,
) -> None:
    """Write harness copies, params.json, hillclimb.json, tuning-failures.json, summary.md and
    index.html into ``folder`` (input and split copies are the caller's)."""
    recorded = report.to_json()
    for entry, item in zip(params["harness"] or [], harness or [], strict=True):
        write_bytes(folder / entry["file"], item.data)
    write_json(folder / PARAMS_FILE, params)
    write_json(folder / REPORT_FILE, recorded)
    write_json(folder / TUNING_FAILURES_FILE, tuning_failures_document(report))
    write_text(folder / "summary.md", markdown_summary(report))
    write_page(folder, KIND, params, recorded)


# -- verify ---------------------------------------------------------------------------------------


def _number(params: dict[str, Any], key: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VerificationError(f"{PARAMS_FILE} has no numeric {key}")
    return value


def _text(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise VerificationError(f"{PARAMS_FILE} has no text {key}")
    return value


def recompute_hillclimb_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> dict[str, Any]:
    """Recompute a saved hillclimb review from the folder's copies and recorded options."""
    if recorded.get("schema_version") != HILLCLIMB_SCHEMA:
        raise VerificationError(f"{REPORT_FILE} does not hold a {KIND_NAME} report")
    options = HillclimbOptions.from_params(params, PARAMS_FILE)
    inputs = params.get("inputs")
    labels = params.get("labels")
    recorded_runs = recorded.get("runs")
    if not isinstance(inputs, list) or not isinstance(recorded_runs, list):
        raise VerificationError(f"{PARAMS_FILE} has no input list")
    if len(inputs) != len(recorded_runs):
        raise VerificationError(f"{PARAMS_FILE} and {REPORT_FILE} list different inputs")
    if (
        not isinstance(labels, list)
        or len(labels) != len(inputs)
        or not all(isinstance(label, str) for label in labels)
    ):
        raise VerificationError(f"{PARAMS_FILE} must give one text label per input")
    fmt = _text(params, "format")
    threshold = _number(params, "threshold")
    runs = [
        recorded_run(folder, entry, saved, fmt, threshold)
        for entry, saved in zip(inputs, recorded_runs, strict=True)
    ]
    harness = recorded_harness(folder, params.get("harness"))
    split = recorded_split(
        folder, params.get("split"), (recorded.get("split") or {}).get("source") or {}
    )
    return compute_hillclimb(
        runs,
        labels,
        split,
        options,
        harness=harness,
        created_at=str(recorded.get("created_at", "")),
    ).to_json()


def hillclimb_summary(recorded: dict[str, Any]) -> dict[str, Any]:
    """What ``verify`` says about a hillclimb review: the recommendation and every decision."""
    report = HillclimbReport.from_json(recorded, REPORT_FILE)
    return {
        "passed": report.merge_recommended,
        "recommendation": report.recommendation,
        "decisions": [step.decision for step in report.steps],
    }


def derived_hillclimb_files(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> Derived:
    """The files ``write_review_files`` derives from the report, for ``verify`` to compare."""

    report = HillclimbReport.from_json(recorded, REPORT_FILE)
    return {
        TUNING_FAILURES_FILE: text_bytes(pretty_json(tuning_failures_document(report))),
        "summary.md": text_bytes(markdown_summary(report)),
    }


def page_view(folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]) -> PageView:
    from evalarc.pages.hillclimb import build_hillclimb_page

    page = build_hillclimb_page(HillclimbReport.from_json(recorded, REPORT_FILE))
    return PageView("hillclimb.html.j2", "Hillclimb review", page.verdict_title, page)


KIND = ReportKind(
    name=KIND_NAME,
    label="Hillclimb review",
    schema=HILLCLIMB_SCHEMA,
    report_file=REPORT_FILE,
    page=page_view,
    recompute=recompute_hillclimb_folder,
    summarize=hillclimb_summary,
    derive=derived_hillclimb_files,
    records=("loop.json", "config.toml", "final.diff", "original/", "steps/"),
)
