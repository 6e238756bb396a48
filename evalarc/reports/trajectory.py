"""``evalarc trajectory`` as a library call: read the checkpoints file, compute, write the report
folder; and the recomputation of a saved trajectory folder for ``verify``. Both sides call
:func:`evalarc.review.trajectory.trajectory_from_document`, so they cannot drift apart.

Folder layout: ``checkpoints.json`` (a byte copy of the input), ``params.json`` (kind
``trajectory`` and the budget), ``trajectory.json`` (the report) and ``index.html`` (the page
with the left-step curve).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalarc.bundle import (
    MAX_REPORT_JSON_BYTES,
    PARAMS_FILE,
    EvidenceFolder,
    copy_verified,
    params_document,
    staged_folder,
    write_json,
)
from evalarc.canonical import JSONValue, sha256_bytes
from evalarc.errors import EvalArcError, VerificationError
from evalarc.formats.input_file import parse_json_input, read_input_file
from evalarc.formats.model import Source
from evalarc.pages.view import PageView
from evalarc.reports.kind import ReportKind, write_page
from evalarc.review.trajectory import (
    TRAJECTORY_SCHEMA,
    TrajectoryOptions,
    trajectory_from_document,
)
from evalarc.review.trajectory_model import TrajectoryReport

KIND_NAME = "trajectory"
REPORT_FILE = "trajectory.json"
CHECKPOINTS_FILE = "checkpoints.json"
PAGE_FILE = "index.html"
MAX_CHECKPOINTS_BYTES = MAX_REPORT_JSON_BYTES
"""64 MiB: a complete durable-kv evaluation is about 26 KB, so thousands of checkpoints fit."""


def read_checkpoints(path: Path) -> tuple[JSONValue, Source]:
    """Read and parse a checkpoints file; errors name the file and the reason."""
    data = read_input_file(path, what="checkpoints file", limit=MAX_CHECKPOINTS_BYTES)
    return parse_json_input(data, path.name), Source(path.name, sha256_bytes(data))


def run_trajectory(
    checkpoints: Path, budget_seconds: float, output: Path | None = None
) -> TrajectoryReport:
    """Validate the budget, read and check every checkpoint, compute the report and, with
    ``output``, publish the report folder (nothing is written when anything is refused)."""
    options = TrajectoryOptions(budget_seconds)
    document, source = read_checkpoints(checkpoints)
    report = trajectory_from_document(document, options.budget_seconds, source)
    if output is not None:
        write_trajectory_folder(output, checkpoints, source, report)
    return report


def _params(report: TrajectoryReport) -> dict[str, JSONValue]:
    options = TrajectoryOptions(report.budget_seconds)
    return params_document(
        KIND_NAME, {**options.to_params(), "inputs": [{"file": CHECKPOINTS_FILE}]}
    )


def write_trajectory_folder(
    output: Path, checkpoints: Path, source: Source, report: TrajectoryReport
) -> None:
    """Publish the trajectory report folder atomically (see :mod:`evalarc.bundle`)."""
    params = _params(report)
    recorded = report.to_json()
    with staged_folder(output) as folder:
        copy_verified(checkpoints, folder / CHECKPOINTS_FILE, source.sha256)
        write_json(folder / PARAMS_FILE, params)
        write_json(folder / REPORT_FILE, recorded)
        write_page(folder, KIND, params, recorded)


def recompute_trajectory_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> dict[str, Any]:
    """Recompute a saved trajectory from its checkpoints copy and recorded budget."""
    if recorded.get("schema_version") != TRAJECTORY_SCHEMA:
        raise VerificationError(f"{REPORT_FILE} does not hold a trajectory report")
    inputs = params.get("inputs")
    if inputs != [{"file": CHECKPOINTS_FILE}]:
        raise VerificationError(f"{PARAMS_FILE} must list {CHECKPOINTS_FILE} as the one input")
    options = TrajectoryOptions.from_params(params, PARAMS_FILE)
    data = folder.read_bytes(CHECKPOINTS_FILE, limit=MAX_CHECKPOINTS_BYTES)
    recorded_source = recorded.get("source")
    if not isinstance(recorded_source, dict) or not isinstance(recorded_source.get("name"), str):
        raise VerificationError(f"{REPORT_FILE} does not name its checkpoints source")
    if folder.files[CHECKPOINTS_FILE].sha256 != recorded_source.get("sha256"):
        raise VerificationError(f"{CHECKPOINTS_FILE} differs from the input the report recorded")
    source = Source(recorded_source["name"], folder.files[CHECKPOINTS_FILE].sha256)
    try:
        document = parse_json_input(data, CHECKPOINTS_FILE)
        report = trajectory_from_document(document, options.budget_seconds, source)
    except EvalArcError as error:
        raise VerificationError(
            f"{CHECKPOINTS_FILE} no longer passes validation: {error.message}"
        ) from None
    return report.to_json()


def trajectory_summary(recorded: dict[str, Any]) -> dict[str, Any]:
    """What ``verify`` says about a trajectory: it is valid, so it passed; and its area."""
    report = TrajectoryReport.from_json(recorded, REPORT_FILE)
    return {
        "passed": True,
        "normalized_score_area": report.normalized_score_area,
        "checkpoint_count": report.checkpoint_count,
    }


def page_view(folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]) -> PageView:
    from evalarc.pages.trajectory import build_trajectory_page

    page = build_trajectory_page(TrajectoryReport.from_json(recorded, REPORT_FILE))
    return PageView("trajectory.html.j2", "Score trajectory", page.verdict, page)


KIND = ReportKind(
    name=KIND_NAME,
    label="Score trajectory",
    schema=TRAJECTORY_SCHEMA,
    report_file=REPORT_FILE,
    page=page_view,
    recompute=recompute_trajectory_folder,
    summarize=trajectory_summary,
)
