"""``evalarc eval-health`` as a library call: load, compute, write the report folder; and the
recomputation of a saved health folder for ``verify``. Both sides call
:func:`evalarc.review.health.compute_health`, so a report and its verification cannot drift.

Folder layout: ``inputs/01<suffix>``, ``inputs/02<suffix>``, ... (byte copies, 1-based, in the
order given), ``cases.json`` (with ``--cases``), ``params.json``, ``health.json``,
``cases.jsonl`` (recorded outputs and verdicts per attempt), ``summary.md``, ``index.html``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc.bundle import (
    PARAMS_FILE,
    Derived,
    EvidenceFolder,
    TextStream,
    copy_suffix,
    copy_verified,
    params_document,
    recorded_object,
    staged_folder,
    text_bytes,
    write_bytes,
    write_json,
    write_text,
)
from evalarc.canonical import compact_json
from evalarc.clock import timestamp
from evalarc.errors import OutputError, VerificationError
from evalarc.formats import Run, load_results
from evalarc.formats.manifest import CaseManifest, load_manifest
from evalarc.formats.model import Source
from evalarc.pages.view import PageView, render_view
from evalarc.reports.health_text import markdown_summary
from evalarc.reports.kind import PAGE_FILE, ReportKind
from evalarc.reports.recorded_inputs import recorded_run
from evalarc.review.health import MAX_INPUTS, HealthOptions, compute_health
from evalarc.review.health_model import HEALTH_SCHEMA, HealthReport

REPORT_FILE = "health.json"
CASES_FILE = "cases.json"
CASE_LINES_FILE = "cases.jsonl"
KIND_NAME = "eval-health"


@dataclass(frozen=True)
class HealthRequest:
    """Everything a user asked ``evalarc eval-health`` for."""

    inputs: Sequence[Path]
    options: HealthOptions
    format: str = "auto"
    cases: Path | None = None


def input_copy_name(position: int, original: Path) -> str:
    """``inputs/NN<suffix>`` for the 1-based ``position`` (suffix: see
    :func:`evalarc.bundle.copy_suffix`)."""
    return f"inputs/{position:02d}{copy_suffix(original)}"


def run_health(request: HealthRequest, output: Path | None = None) -> HealthReport:
    """Load every run (and the manifest), compute the report, and with ``output`` publish the
    report folder. Options are checked before any file is read."""
    request.options.validate(len(request.inputs))
    runs = [
        load_results(path, request.format, request.options.threshold) for path in request.inputs
    ]
    manifest = load_manifest(request.cases) if request.cases is not None else None
    report = compute_health(runs, request.options, manifest=manifest, created_at=timestamp())
    if output is not None:
        write_health_folder(output, request, report, runs, manifest)
    return report


def health_params(request: HealthRequest, report: HealthReport) -> dict[str, Any]:
    return params_document(
        KIND_NAME,
        {
            "format": report.format,
            **request.options.to_params(),
            "inputs": [
                {"file": input_copy_name(position, path)}
                for position, path in enumerate(request.inputs, 1)
            ],
            "cases": CASES_FILE if request.cases is not None else None,
        },
    )


def case_lines(run: Run) -> Iterator[dict[str, Any]]:
    """The cases.jsonl records of one run: one per case and attempt with its outputs, or for
    JUnit (which records no outputs) one per case with every check's verdicts."""
    name = run.source.name
    for case_id in sorted(run.cases):
        if run.format == "junit":
            checks = run.cases[case_id]
            yield {
                "file": name,
                "case_id": case_id,
                "checks": {
                    check: [attempt.passed for attempt in checks[check]] for check in sorted(checks)
                },
            }
            continue
        for attempt, meta in enumerate(run.samples.get(case_id, ())):
            yield {
                "file": name,
                "case_id": case_id,
                "attempt": attempt,
                "verdicts": dict(meta.verdicts),
                "output": meta.output_text,
                "stop_reason": meta.stop_reason,
                "truncated": meta.truncated,
                "usage": dict(meta.usage),
            }


def _write_case_lines(path: Path, runs: Sequence[Run]) -> None:
    try:
        with path.open("w", encoding="utf-8") as handle:
            for run in runs:
                for record in case_lines(run):
                    handle.write(compact_json(record) + "\n")
    except OSError as error:
        raise OutputError(f"cannot write {path.name}: {error.strerror or error}") from None


def write_health_folder(
    output: Path,
    request: HealthRequest,
    report: HealthReport,
    runs: Sequence[Run],
    manifest: CaseManifest | None,
) -> None:
    """Publish the health report folder atomically (see :mod:`evalarc.bundle`)."""
    params = health_params(request, report)
    recorded = report.to_json()
    with staged_folder(output) as folder:
        for entry, path, run in zip(params["inputs"], request.inputs, runs, strict=True):
            copy_verified(path, folder / entry["file"], run.source.sha256)
        if manifest is not None and request.cases is not None:
            copy_verified(request.cases, folder / CASES_FILE, manifest.source.sha256)
        write_json(folder / PARAMS_FILE, params)
        write_json(folder / REPORT_FILE, recorded)
        _write_case_lines(folder / CASE_LINES_FILE, runs)
        write_text(folder / "summary.md", markdown_summary(report))
        # The page as verify and a site build it (_page), from the last run already read
        # instead of a third read of its file.
        write_bytes(folder / PAGE_FILE, text_bytes(render_view(_page(report, runs[-1]), home=None)))


# -- verify -----------------------------------------------------------------------------------


def recompute_health_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> dict[str, Any]:
    """Recompute a saved health report from the folder's input copies and recorded options."""
    if recorded.get("schema_version") != HEALTH_SCHEMA:
        raise VerificationError(f"{REPORT_FILE} does not hold an eval-health report")
    inputs = params.get("inputs")
    recorded_runs = recorded.get("runs")
    if not isinstance(inputs, list) or not 1 <= len(inputs) <= MAX_INPUTS:
        raise VerificationError(f"{PARAMS_FILE} must list 1 to {MAX_INPUTS} inputs")
    if not isinstance(recorded_runs, list) or len(recorded_runs) != len(inputs):
        raise VerificationError(f"{PARAMS_FILE} and {REPORT_FILE} list different inputs")
    options = HealthOptions.from_params(params, PARAMS_FILE)
    fmt = str(params.get("format"))
    runs = [
        recorded_run(folder, entry, saved, fmt, options.threshold)
        for entry, saved in zip(inputs, recorded_runs, strict=True)
    ]
    manifest = None
    if params.get("cases") is not None:
        manifest = load_manifest(folder.hash_file(str(params["cases"])))
        recorded_source = recorded_object(recorded, "provenance", "manifest")
        if isinstance(recorded_source.get("name"), str):
            manifest = manifest.with_source(Source(recorded_source["name"], manifest.source.sha256))
    return compute_health(
        runs, options, manifest=manifest, created_at=str(recorded.get("created_at", ""))
    ).to_json()


def health_summary(recorded: dict[str, Any]) -> dict[str, Any]:
    """What ``verify`` says about a health report: healthy (= passed) and the warning count."""
    report = HealthReport.from_json(recorded, REPORT_FILE)
    return {"passed": report.healthy, "healthy": report.healthy, "warnings": report.warnings}


def derived_health_files(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> Derived:
    """The files ``write_health_folder`` derives (case lines, summary, page), for ``verify``."""

    report = HealthReport.from_json(recorded, REPORT_FILE)
    options = HealthOptions.from_params(params, PARAMS_FILE)
    fmt = str(params.get("format"))

    def write_lines(write: Callable[[str], object]) -> None:
        # Each input is read when its lines are compared, one at a time, and let go after.
        for entry, saved in zip(params["inputs"], recorded["runs"], strict=True):
            run = recorded_run(folder, entry, saved, fmt, options.threshold)
            for record in case_lines(run):
                write(compact_json(record) + "\n")
            del run

    return {
        CASE_LINES_FILE: TextStream(write_lines),
        "summary.md": text_bytes(markdown_summary(report)),
    }


def page_view(folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]) -> PageView:
    report = HealthReport.from_json(recorded, REPORT_FILE)
    # The page shows the last file's recorded outputs, read from the folder's own copy, which
    # must be the bytes the report's last run was computed from.
    run = recorded_run(
        folder,
        params["inputs"][-1],
        recorded["runs"][-1],
        str(params["format"]),
        HealthOptions.from_params(params, PARAMS_FILE).threshold,
    )
    return _page(report, run)


def _page(report: HealthReport, last_run: Run) -> PageView:
    """The page of a health report and its last run: a folder's, verify's and a site's alike."""
    from evalarc.pages.health import build_health_page

    page = build_health_page(report, last_run)
    return PageView("health.html.j2", "Eval health", page.verdict_title, page)


KIND = ReportKind(
    name=KIND_NAME,
    label="Eval health",
    schema=HEALTH_SCHEMA,
    report_file=REPORT_FILE,
    page=page_view,
    recompute=recompute_health_folder,
    summarize=health_summary,
    derive=derived_health_files,
)
