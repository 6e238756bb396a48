"""``evalarc evaluate``, ``evalarc init`` and ``evalarc tasks`` as library functions.

:func:`run_evaluate` snapshots a candidate folder, builds the backend that will run it (Docker by
default; the local backend only when the caller trusts the code), runs
:func:`evalarc.packs.evaluate` and writes one new report folder::

    evaluation.json          the evalarc.evaluation.v2 report
    events.jsonl             progress events (evalarc.event.v1), one per line
    recordings/<sha>.jsonl   the complete transcript of every case that ran, named by its SHA-256
    recordings/index.json    run key -> recording (evalarc.recording-index.v1)
    candidate/               a byte copy of the snapshot the run used (same candidate_sha256)
    params.json              evalarc.report-params.v1, kind "evaluation": every option
    index.html               the offline report page

The folder is staged beside its destination and renamed into place only when complete; an
interrupted run (Ctrl-C included) leaves no output, no temporary folder and no container.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc.bundle import (
    EvidenceFolder,
    is_active,
    params_document,
    shown_name,
    staged_folder,
    write_json,
    write_text,
)
from evalarc.cancel import remove_temporary_folder, signals_held, temporary_folder
from evalarc.canonical import JSONValue, compact_json
from evalarc.clock import now_utc
from evalarc.errors import (
    EvalArcError,
    ExitCode,
    InputError,
    UsageError,
    VerificationError,
)
from evalarc.packs import (
    EVALUATION_SCHEMA,
    PACK_FILE,
    EventSink,
    Pack,
    grader_sha256,
    load_pack,
    materialize_workspace,
    packs_root,
    plan_cases,
    validate_seeds,
)
from evalarc.pages.view import PageView
from evalarc.reports.backends import (
    BACKENDS,
    DEFAULT_IMAGE,
    DEFAULT_TASK,
    LANGUAGES,
    BackendChoice,
    case_limits,
    check_executor,
    check_image,
    check_ray_sample,
    close_backend,
    executor_notes,
    executor_params,
    jobs_for,
    make_backend,
    recorded_ray,
    recorded_retries,
    replay_notes,
)
from evalarc.reports.kind import ReportKind, write_page
from evalarc.reports.replayed import (
    INFORMATIONAL,
    SCOPE,
    adopt_attempts,
    case_labels,
    events_check,
    recorded_options,
    recorded_pack,
    recorded_text,
    recordings_store,
    replay_request,
    replayed_report,
)
from evalarc.reports.run_folder import (
    EVENTS_FILE,
    INDEX_FILE,
    RECORDINGS_DIR,
    RecordingWriter,
    case_progress_line,
    check_output,
    make_parents,
    make_work_folder,
    recording_index,
    remove_empty,
    stamp_event,
)
from evalarc.runtime.owner import claim_work_folder, sweep_work_folders
from evalarc.runtime.protocol import Backend, Limits
from evalarc.runtime.recording import (
    save_index,
)
from evalarc.runtime.replay import make_replay_backend
from evalarc.runtime.snapshot import Snapshot, snapshot_candidate
from evalarc.schedule import (
    Executor,
    Progress,
    Subject,
    SubjectRun,
    ThreadExecutor,
    case_started,
    check_jobs,
    check_retries,
    run_subjects,
)

DEFAULT_OUTPUT = Path("runs") / "evaluate"
REPORT_FILE = "evaluation.json"
CANDIDATE_DIR = "candidate"
LOCAL_REFUSAL = (
    "local mode executes host code: the candidate runs as you, with your files and network; "
    "pass --trust-local only for code you trust (or use --backend docker)"
)
NODE_HINT = (
    "Requires Node.js 22+ (or any Node that runs main.js); with Docker pass --image with a Node "
    "image, e.g. --image node:22-slim or --image evalarc-node:local"
)


# -- options ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvaluateOptions:
    """Every option of ``evalarc evaluate`` (recorded in params.json)."""

    task: str = DEFAULT_TASK
    backend: str = "docker"
    trust_local: bool = False
    image: str | None = DEFAULT_IMAGE
    """The Docker image tag (None: the default). With ``replay``, the image the recordings must
    have been made with (None: whichever image they were made with)."""
    seeds: tuple[int, ...] | None = None
    """None means the pack's default seeds."""
    timeout: float = 10.0
    """Seconds per exchange (request written, response line read) and for the exit after EOF."""
    case_timeout: float = 60.0
    """Seconds per case, shared by its sessions, restarts and start-ups."""
    startup_timeout: float = 30.0
    """Seconds a Docker session may take to report readiness."""
    recordings: Path | None = None
    """The recordings a ``replay`` answers from (None: the bundled ``recordings/``)."""
    jobs: int | None = None
    """Cases run at once (None: :func:`evalarc.schedule.default_jobs`; replay: one)."""
    executor: str = "threads"
    """``threads`` (this machine) or ``ray`` (one Ray task per case on a cluster)."""
    ray_address: str | None = None
    """The Ray cluster to join (None: ``RAY_ADDRESS`` or a new local one); never recorded."""
    ray_verify_sample: int | None = None
    """Cases re-run on a second Ray node to check the first (None: the default)."""
    retry_infrastructure: int = 0
    """Re-run a case whose infrastructure failed at most this many more times."""


def resolve_options(options: EvaluateOptions) -> tuple[Pack, list[int], Limits]:
    """Validate ``options`` against the pack; return the pack, the seeds and the limits."""
    pack = load_pack(options.task)
    if options.backend not in BACKENDS:
        raise UsageError(f"unknown backend {options.backend!r} (choose docker, local or replay)")
    if options.backend == "local" and not options.trust_local:
        raise UsageError(LOCAL_REFUSAL)
    if options.backend != "local":
        check_image(options.image)
    check_executor(options.executor, options.backend, options.jobs, options.ray_address)
    check_ray_sample(options.executor, options.ray_verify_sample)
    if options.jobs is not None:
        check_jobs(options.jobs)
    check_retries(options.retry_infrastructure)
    seeds = validate_seeds(
        list(options.seeds) if options.seeds is not None else list(pack.default_seeds)
    )
    limits = case_limits(pack, options.timeout, options.case_timeout, options.startup_timeout)
    return pack, seeds, limits


# -- the outcome -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """What one ``evaluate`` produced: the report object and the published folder."""

    report: dict[str, Any]
    output: Path
    notes: tuple[str, ...] = ()
    """Replay only: each divergent recording (it made its case unassessed), and recordings made
    under another grader that were replayed through today's."""

    @property
    def exit_code(self) -> ExitCode:
        """0 fully resolved, 1 assessed but not resolved, 2 invalid (environment failure)."""
        if not self.report["valid"]:
            return ExitCode.INVALID
        return ExitCode.ACCEPTED if self.report["resolved"] else ExitCode.REJECTED

    def summary_line(self) -> str:
        return summary_line(self.report)


def summary_line(report: Mapping[str, Any]) -> str:
    """``Score: 0.9250 | Status: failed | Resolved: false``."""
    score = report["score"]
    shown = "unavailable" if score is None else f"{score:.4f}"
    resolved = "true" if report["resolved"] else "false"
    return f"Score: {shown} | Status: {report['status']} | Resolved: {resolved}"


def progress_line(event: Mapping[str, Any]) -> str | None:
    """The human progress line for an event (one per finished case), or None."""
    if event.get("event") == "evaluation_started":
        return (
            f"Evaluating candidate {str(event['candidate_sha256'])[:12]} on "
            f"{event['task']}: {event['total_cases']} cases"
        )
    if event.get("event") not in ("case_completed", "case_retried"):
        return None
    return case_progress_line(event)


# -- evaluate --------------------------------------------------------------------------------


def run_evaluate(
    candidate: Path,
    output: Path,
    options: EvaluateOptions,
    *,
    on_event: EventSink | None = None,
    temp_root: Path | None = None,
) -> EvaluationResult:
    """Evaluate the candidate folder and publish the report folder ``output``.

    Raises UsageError/InputError/OutputError/EnvironmentFailure (exit 2) before anything is
    written when the options, the candidate, the output location or the backend (engine, image)
    are unusable. Candidate failures and environment failures during cases are data in the
    report. ``on_event`` receives each stamped progress event as it happens. The snapshot and
    the per-case state folders live in a new temporary folder under ``temp_root`` (default: the
    system's), removed before returning.
    """
    pack, seeds, limits = resolve_options(options)
    check_output(output, candidate)
    if not candidate.is_dir():
        raise InputError(f"candidate {candidate}: not a directory")
    sweep_work_folders(temp_root)
    backend: Backend | None = None
    created_parents: list[Path] = []
    made: list[Path] = []
    published = False
    progress = Progress(on_event, stamp_event)
    try:
        # Held: a cancel cannot land between making a folder and owning its removal.
        with signals_held():
            created_parents = make_parents(output.parent)
            made.append(make_work_folder("evalarc-evaluate-", temp_root))
        work = made[0]
        owner = claim_work_folder(work)
        snapshot = snapshot_candidate(candidate, work / "snapshot", list(pack.default_command))
        refuse_active_files(snapshot.path, candidate)
        subject = Subject(None, snapshot.sha256)
        executor: Executor
        if options.executor == "ray":
            from evalarc.ray_executor import RayExecutor, RaySubject

            executor = RayExecutor(
                pack,
                [RaySubject(snapshot)],
                limits,
                image=options.image or DEFAULT_IMAGE,
                address=options.ray_address,
                seeds=seeds,
                verify_sample=options.ray_verify_sample,
                on_start=case_started(pack, [subject], len(plan_cases(pack, seeds)), progress),
            )
        else:
            choice = BackendChoice(
                backend=options.backend,
                image=options.image,
                recordings=options.recordings,
                pack=pack,
                seeds=tuple(seeds),
            )
            backend = make_backend(choice, snapshot, limits, work / "cases", owner)
            subject.backend = backend
            executor = ThreadExecutor(
                pack,
                [subject],
                limits,
                jobs_for(options.jobs, options.backend),
                on_start=case_started(pack, [subject], len(plan_cases(pack, seeds)), progress),
                stop_backend=close_backend,
            )
        with staged_folder(output) as staging:
            _copy_candidate(snapshot, staging / CANDIDATE_DIR, pack, candidate)
            (run,) = run_subjects(
                pack,
                [subject],
                seeds,
                executor,
                progress,
                on_recording=RecordingWriter(staging / RECORDINGS_DIR),
                created_at=now_utc().isoformat(),
                retry_infrastructure=options.retry_infrastructure,
            )
            params = _params(options, seeds, executor)
            _write_report_folder(staging, pack, run, params, progress.in_plan_order([None]))
        published = True
        notes = replay_notes(backend) if backend is not None else executor_notes(executor)
        return EvaluationResult(run.report, output, notes)
    finally:
        with signals_held():  # a second Ctrl-C cannot strand a container
            if backend is not None:
                close_backend(backend)
            for folder in made:
                remove_temporary_folder(folder)
            if not published:
                remove_empty(created_parents)


def _copy_candidate(snapshot: Snapshot, dest: Path, pack: Pack, label: Path) -> None:
    """Copy the snapshot into the report and prove the copy has the same fingerprint."""
    copy = snapshot_candidate(snapshot.path, dest, list(pack.default_command))
    if copy.sha256 != snapshot.sha256:
        raise InputError(f"candidate {label}: the snapshot changed while it was being copied")


def _write_report_folder(
    staging: Path,
    pack: Pack,
    run: SubjectRun,
    recorded: dict[str, JSONValue],
    events: list[dict[str, Any]],
) -> None:
    report = run.report
    recordings = staging / RECORDINGS_DIR
    recordings.mkdir(exist_ok=True)
    save_index(recording_index(pack, run), recordings / INDEX_FILE)
    write_json(staging / REPORT_FILE, report)
    write_text(staging / EVENTS_FILE, "".join(compact_json(event) + "\n" for event in events))
    params = params_document("evaluation", recorded)
    write_json(staging / "params.json", params)
    # The page reads the recordings just written, so its traces match a site's page exactly.
    write_page(staging, KIND, params, report)


def _params(options: EvaluateOptions, seeds: list[int], executor: Executor) -> dict[str, JSONValue]:
    """The evaluation's options, and how its cases ran (:func:`executor_params`)."""
    params: dict[str, JSONValue] = {
        "task": options.task,
        "candidate": CANDIDATE_DIR,
        "backend": options.backend,
        "trust_local": options.trust_local,
        "image": (options.image or DEFAULT_IMAGE)
        if options.backend == "docker"
        else (options.image if options.backend == "replay" else None),
        "seeds": list(seeds),
        "timeout": options.timeout,
        "case_timeout": options.case_timeout,
        "startup_timeout": options.startup_timeout,
        "report": REPORT_FILE,
        "recordings": f"{RECORDINGS_DIR}/{INDEX_FILE}",
    }
    if options.backend == "replay":
        from evalarc.runtime.replay import recordings_label

        params["replay_recordings"] = recordings_label(options.recordings)
    params.update(executor_params(executor, options.retry_infrastructure))
    return params


# -- init and tasks --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InitResult:
    dest: Path
    files: list[str]
    hint: str | None
    """A line to show after "Created DEST" (the Node/--image hint for JavaScript)."""


def run_init(
    dest: Path, task: str = DEFAULT_TASK, language: str = "python", reference: bool = False
) -> InitResult:
    """Write a new candidate workspace: the starter (or the reference) plus the contract."""
    if language not in LANGUAGES:
        raise UsageError(f"unknown language {language!r} (choose python or javascript)")
    pack = load_pack(task)
    pack.language(language)
    files = materialize_workspace(task, language, reference=reference, fault=None, dest=dest)
    return InitResult(dest, files, NODE_HINT if language == "javascript" else None)


def task_summaries() -> tuple[list[dict[str, Any]], list[str]]:
    """One JSON object per loadable bundled pack (sorted by id), and one message per pack
    folder that cannot be loaded (so one broken pack does not hide the others)."""
    summaries: list[dict[str, Any]] = []
    problems: list[str] = []
    root = packs_root()
    folders = sorted(root.iterdir()) if root.is_dir() else []
    for folder in folders:
        if not (folder / PACK_FILE).is_file():
            continue
        try:
            pack = load_pack(folder.name)
        except EvalArcError as error:
            problems.append(error.message)
            continue
        summaries.append(
            {
                "id": pack.id,
                "version": pack.version,
                "domain": pack.domain,
                "description": pack.description,
                "dimensions": {dimension.id: dimension.weight for dimension in pack.dimensions},
                "default_seeds": list(pack.default_seeds),
                "declared_faults": len(pack.faults),
                "languages": sorted(pack.languages),
            }
        )
    return summaries, problems


def task_lines(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """Text mode of ``evalarc tasks``: ``id · domain · vVERSION · description`` per pack, then
    indented details (weights, default seeds, declared faults)."""
    lines: list[str] = []
    for task in summaries:
        lines.append(
            f"{task['id']} · {task['domain']} · v{task['version']} · {task['description']}"
        )
        weights = ", ".join(f"{name} {weight:g}" for name, weight in task["dimensions"].items())
        lines.append(f"  dimensions: {weights}")
        seeds = " ".join(str(seed) for seed in task["default_seeds"])
        lines.append(
            f"  default seeds: {seeds} · declared faults: {task['declared_faults']} · "
            f"languages: {', '.join(task['languages'])}"
        )
    return lines


def recompute_evaluation_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> dict[str, Any]:
    """Replay an evaluation folder's recordings for its ``candidate/`` copy."""
    if recorded.get("schema_version") != EVALUATION_SCHEMA:
        raise VerificationError(f"{REPORT_FILE} does not hold an evaluation report")
    pack = recorded_pack(params)
    options = recorded_options(params, pack)
    candidate = recorded_text(params, "candidate")
    with temporary_folder("evalarc-verify-") as work:
        source = folder.path_of(candidate)
        if not source.is_dir():
            raise VerificationError(f"{candidate}/ is missing from {folder.root.name}")
        for path in sorted(source.rglob("*")):
            if path.is_file() and not path.is_symlink():
                folder.read_bytes(path.relative_to(folder.root).as_posix())
        snapshot = snapshot_candidate(source, work / "snapshot", list(pack.default_command))
        if snapshot.sha256 != recorded.get("candidate_sha256"):
            raise VerificationError(f"{candidate}/ differs from the candidate the report recorded")
        store = recordings_store(folder, options)
        labels = case_labels(pack, options.seeds)
        backend = make_replay_backend(
            store,
            candidate_sha256=snapshot.sha256,
            pack=f"{pack.id}@{pack.version}",
            grader_sha256=grader_sha256(pack),
            request=replay_request(options, snapshot.command),
            labels=labels,
        )
        report = replayed_report(pack, snapshot, backend, options, recorded, store)
        adopt_attempts(report, recorded, recorded_retries(params), pack, options, store)
        return report


def evaluation_summary(report: dict[str, Any]) -> dict[str, Any]:
    """What ``verify`` says about a consistent evaluation."""
    return {
        "records_valid": report.get("valid") is True,
        "fully_resolved": report.get("resolved") is True,
        "passed": report.get("resolved") is True,
        "score": report.get("score"),
        "scope": SCOPE,
    }


def derived_evaluation_files(
    folder: EvidenceFolder, params: dict[str, Any], report: dict[str, Any]
) -> dict[str, Any]:
    """What ``evaluate`` derives from an evaluation: its events and its page."""

    return {
        EVENTS_FILE: events_check([(None, report)], recorded_retries(params), recorded_ray(params)),
    }


def page_view(folder: EvidenceFolder, params: dict[str, Any], report: dict[str, Any]) -> PageView:
    from evalarc.pages.evaluation import build_evaluation_page, recording_reader

    page = build_evaluation_page(report, recording_reader(folder))
    return PageView("evaluation.html.j2", f"Evaluation · {report['task']['id']}", page.banner, page)


KIND = ReportKind(
    name="evaluation",
    label="Evaluation",
    schema=EVALUATION_SCHEMA,
    report_file=REPORT_FILE,
    page=page_view,
    recompute=recompute_evaluation_folder,
    summarize=evaluation_summary,
    derive=derived_evaluation_files,
    informational=INFORMATIONAL,
)


def refuse_active_files(copy: Path, candidate: Path) -> None:
    """A report folder keeps the candidate's bytes, and verify and sites refuse a file a browser
    would run script in (:func:`evalarc.bundle.is_active`): refuse such a candidate before any
    case runs rather than publish a folder that cannot be verified."""
    for root, folders, files in os.walk(copy):
        folders.sort()
        for name in sorted(files):
            relative = Path(root, name).relative_to(copy).as_posix()
            if is_active(relative):
                raise InputError(
                    f"candidate {candidate}: {shown_name(relative)} is a document a browser "
                    "would run script in; a report folder cannot keep or publish it "
                    "(remove or rename it)"
                )
