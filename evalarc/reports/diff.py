"""``evalarc diff`` as a library call: load, compute, write the report folder; and the
recomputation of a saved diff folder for ``verify``. Both sides call
:func:`evalarc.review.diff.compute_diff`, so a report and its verification cannot drift apart.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalarc.appending import SummaryFile
from evalarc.bundle import (
    PARAMS_FILE,
    Derived,
    EvidenceFolder,
    ReportHead,
    copy_suffix,
    copy_verified,
    load_results_once,
    params_document,
    private_reads,
    recorded_object,
    staged_folder,
    text_bytes,
    write_bytes,
    write_json,
    write_streamed,
    write_text,
)
from evalarc.cancel import publishing, signals_held
from evalarc.clock import timestamp
from evalarc.errors import InputError, OutputError, VerificationError
from evalarc.formats import Run
from evalarc.formats.evaluation import resolve_evaluation_path
from evalarc.formats.harness import HarnessFile, collect_harness
from evalarc.formats.split import CaseSplit, load_split
from evalarc.pages.view import PageView
from evalarc.reports.diff_text import markdown_summary
from evalarc.reports.kind import ReportKind, write_page
from evalarc.reports.recorded_inputs import recorded_harness, recorded_run, recorded_split
from evalarc.review.diff import DiffOptions, diff_report, prepare_runs
from evalarc.review.diff_model import DIFF_SCHEMA, DiffReport

REPORT_FILE = "diff.json"
SPLIT_FILE = "split.json"


@dataclass(frozen=True)
class DiffRequest:
    """Everything a user asked ``evalarc diff`` for."""

    baseline: Path
    current: Path
    options: DiffOptions
    format: str = "auto"
    held_out: Path | None = None
    harness: Sequence[Path] | None = None


def _copy_name(role: str, original: Path) -> str:
    return role + copy_suffix(original)


def run_diff(
    request: DiffRequest,
    output: Path | None = None,
    junit: Path | None = None,
    markdown: Path | None = None,
) -> DiffReport:
    """Load both runs, compute the diff, and (with ``output``) publish a report folder; (with
    ``junit``) write every compared check as a JUnit testcase (see
    :mod:`evalarc.reports.diff_junit`); (with ``markdown``) append the summary to that file.

    Every requested output is written or none is: the JUnit file is staged beside its target and
    the Markdown file opened for appending before the report folder is published, so a path
    that cannot be written fails the command with nothing published."""
    request.options.validate()
    with private_reads():
        return _run_diff(request, output, junit, markdown)


def _run_diff(
    request: DiffRequest, output: Path | None, junit: Path | None, markdown: Path | None
) -> DiffReport:
    # An EvalArc evaluation may be named by its report folder; copy and record the JSON itself.
    request = replace(
        request,
        baseline=resolve_evaluation_path(request.baseline),
        current=resolve_evaluation_path(request.current),
    )
    # Each input is opened once and parsed from a private copy of the bytes it hashed, which
    # is also what the report folder copies (a file swapped meanwhile cannot be parsed).
    threshold = request.options.threshold
    baseline, baseline_copy = load_results_once(request.baseline, request.format, threshold)
    current, current_copy = load_results_once(request.current, request.format, threshold)
    split = load_split(request.held_out) if request.held_out is not None else None
    harness = collect_harness(list(request.harness)) if request.harness is not None else None
    baseline, current = prepare_runs(baseline, current)
    report = diff_report(
        baseline, current, request.options, split=split, harness=harness, created_at=timestamp()
    )
    staged_files: list[Path] = []
    try:
        staged = None
        if junit is not None:
            staged = _stage_junit(junit, report, baseline, current, staged_files)
        with _open_for_append(markdown) as summary:
            if output is not None:
                copies = replace(request, baseline=baseline_copy, current=current_copy)
                write_diff_folder(output, copies, report, baseline, current, split, harness)
            if staged is not None and junit is not None:
                # Declared output: once renamed into place a late cancel keeps it (exit code
                # stands), and a cancel before the rename publishes nothing.
                with publishing(junit):
                    try:
                        os.replace(staged, junit)
                    except OSError as error:
                        raise OutputError(
                            f"cannot write JUnit XML to {junit}: {error.strerror or error}"
                        ) from None
            if summary is not None:
                summary.append(markdown_summary(report))
    finally:
        for leftover in staged_files:
            leftover.unlink(missing_ok=True)
    return report


def _stage_junit(
    path: Path, report: DiffReport, baseline: Run, current: Run, staged: list[Path]
) -> Path:
    """Write the JUnit XML into a temporary sibling of ``path`` (published by a rename); the
    sibling is put in ``staged`` the moment it exists, for the caller to remove whatever
    happens next."""
    from evalarc.reports.diff_junit import write_junit_document

    if path.is_dir():
        raise OutputError(f"cannot write JUnit XML to {path}: it is a folder")
    parent = path.parent if str(path.parent) else Path(".")
    # No cancel may land between making the file and owning its removal.
    with signals_held():
        try:
            handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=parent)
        except OSError as error:
            raise OutputError(
                f"cannot write JUnit XML to {path}: {error.strerror or error}"
            ) from None
        temporary = Path(name)
        staged.append(temporary)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            write_junit_document(report, baseline, current, stream.write)
        os.chmod(temporary, 0o644)
    except OSError as error:
        raise OutputError(f"cannot write JUnit XML to {path}: {error.strerror or error}") from None
    return temporary


@contextlib.contextmanager
def _open_for_append(path: Path | None) -> Iterator[SummaryFile | None]:
    """The Markdown summary file opened for appending (None without one); opened before anything
    is published so an unwritable path fails first."""
    if path is None:
        yield None
        return
    with SummaryFile(path) as summary:
        yield summary


def _params(
    request: DiffRequest,
    report: DiffReport,
    split: CaseSplit | None,
    harness: Sequence[HarnessFile] | None,
) -> dict[str, Any]:
    return params_document(
        "diff",
        {
            "format": report.format,
            **request.options.to_params(),
            "inputs": [
                {"file": _copy_name("baseline", request.baseline)},
                {"file": _copy_name("current", request.current)},
            ],
            "split": SPLIT_FILE if split is not None else None,
            "harness": None
            if harness is None
            else [
                {"file": f"harness/{index:04d}", "label": item.label, "sha256": item.sha256}
                for index, item in enumerate(harness)
            ],
        },
    )


def write_diff_folder(
    output: Path,
    request: DiffRequest,
    report: DiffReport,
    baseline: Run,
    current: Run,
    split: CaseSplit | None,
    harness: Sequence[HarnessFile] | None,
) -> None:
    """Publish the diff report folder atomically (see :mod:`evalarc.bundle`)."""
    params = _params(request, report, split, harness)
    with staged_folder(output) as folder:
        copy_verified(
            request.baseline, folder / params["inputs"][0]["file"], baseline.source.sha256
        )
        copy_verified(request.current, folder / params["inputs"][1]["file"], current.source.sha256)
        if split is not None and request.held_out is not None:
            copy_verified(request.held_out, folder / SPLIT_FILE, split.source.sha256)
        for entry, item in zip(params["harness"] or [], harness or [], strict=True):
            write_bytes(folder / entry["file"], item.data)
        write_json(folder / PARAMS_FILE, params)
        write_streamed(folder / REPORT_FILE, report.write_json)
        write_text(folder / "summary.md", markdown_summary(report))
        # The page of the JSON just written, as verify and a site build it (reading that JSON
        # back gives this same report: tests/test_diff_model.py).
        write_page(folder, KIND, params, _head_of(report))


def _head_of(report: DiffReport) -> ReportHead:
    head = ReportHead()
    head.model = report
    return head


def recompute_diff_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> DiffReport:
    """Recompute a saved diff from the folder's input copies and recorded options.

    ``recorded`` is diff.json without its rows and groups (:data:`KIND`'s ``bulk``): only the
    sources, the split's name and ``created_at`` are taken from it, and the byte comparison of
    the whole file with the recomputed report (the caller's) is what refuses a tampered report.
    The recomputed report becomes the ``recorded`` head's model, for the summary, the derived
    files and the page once the file is found equal to it."""
    if recorded.get("schema_version") != DIFF_SCHEMA:
        raise VerificationError(f"{REPORT_FILE} does not hold a diff report")
    inputs = params.get("inputs")
    if not isinstance(inputs, list) or len(inputs) != 2:
        raise VerificationError(f"{PARAMS_FILE} must list exactly two inputs for a diff")
    options = DiffOptions.from_params(params, PARAMS_FILE)
    fmt = str(params.get("format"))
    runs: list[Run] = []
    for entry, role in zip(inputs, ("baseline", "current"), strict=True):
        runs.append(recorded_run(folder, entry, recorded.get(role), fmt, options.threshold))
    split = None
    if params.get("split") is not None:
        source = recorded_object(recorded, "generalization", "split", "source")
        split = recorded_split(folder, params["split"], source)
    harness = recorded_harness(folder, params.get("harness"))
    report = diff_report(
        runs[0],
        runs[1],
        options,
        split=split,
        harness=harness,
        created_at=str(recorded.get("created_at", "")),
    )
    if isinstance(recorded, ReportHead):
        recorded.model = report
    return report


def read_report(recorded: dict[str, Any]) -> DiffReport:
    """A verified folder's diff.json as the typed report (the boundary between the generic
    folder check, which hands every kind its JSON, and the diff's own renderers): the report
    the file was found equal to, or a whole diff.json object read."""
    model = getattr(recorded, "model", None)
    if isinstance(model, DiffReport):
        return model
    try:
        return DiffReport.from_json(recorded, REPORT_FILE)
    except InputError as error:
        raise VerificationError(error.message) from None


def diff_summary(recorded: dict[str, Any]) -> dict[str, Any]:
    """What ``verify`` says about a diff: the gate, the overall pass and the blocking count."""
    report = read_report(recorded)
    return {
        "gate_passed": report.gate_passed,
        "passed": report.passed,
        "blocking_changes": report.blocking_changes,
    }


def derived_diff_files(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> Derived:
    """The files ``write_diff_folder`` derives from the report, for ``verify`` to compare."""

    return {
        "summary.md": text_bytes(markdown_summary(read_report(recorded))),
    }


def page_view(folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]) -> PageView:
    from evalarc.pages.diff import build_diff_page, diff_case_views

    report = read_report(recorded)
    case_views, inline = diff_case_views(folder, params, report)
    page = build_diff_page(report, case_views=case_views, inline_cases=inline)
    files = case_views.files if case_views is not None else {}
    return PageView("diff.html.j2", "Results diff", page.verdict_title, page, files)


KIND = ReportKind(
    name="diff",
    label="Results diff",
    schema=DIFF_SCHEMA,
    report_file=REPORT_FILE,
    page=page_view,
    recompute=recompute_diff_folder,
    summarize=diff_summary,
    derive=derived_diff_files,
    bulk=frozenset({"changes", "groups"}),
)
