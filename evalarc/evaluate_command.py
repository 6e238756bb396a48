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

import math
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc.bundle import params_document, staged_folder, write_bytes, write_json, write_text
from evalarc.canonical import JSONValue, compact_json, sha256_bytes
from evalarc.clock import now_utc
from evalarc.errors import EvalArcError, ExitCode, InputError, OutputError, UsageError
from evalarc.packs import (
    PACK_FILE,
    CaseRecording,
    Pack,
    load_pack,
    materialize_workspace,
    packs_root,
    plan_cases,
    validate_seeds,
)
from evalarc.runtime.owner import claim_work_folder, sweep_work_folders
from evalarc.runtime.protocol import Backend, Limits
from evalarc.runtime.recording import (
    RECORDING_SUFFIX,
    RecordingIndex,
    RunKey,
    runtime_fingerprint,
    save_index,
)
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
    default_jobs,
    run_subjects,
)

DEFAULT_TASK = "durable-kv"
DEFAULT_IMAGE = "python:3.12-slim"
DEFAULT_OUTPUT = Path("runs") / "evaluate"
BACKENDS = ("docker", "local", "replay")
EXECUTORS = ("threads", "ray")
LANGUAGES = ("python", "javascript")
MAX_SECONDS = 86_400.0
"""Longest accepted time limit (one day); longer values are almost certainly typos."""
EVENT_SCHEMA = "evalarc.event.v1"
REPORT_FILE = "evaluation.json"
EVENTS_FILE = "events.jsonl"
PAGE_FILE = "index.html"
RECORDINGS_DIR = "recordings"
INDEX_FILE = "index.json"
CANDIDATE_DIR = "candidate"
LOCAL_REFUSAL = (
    "local mode executes host code: the candidate runs as you, with your files and network; "
    "pass --trust-local only for code you trust (or use --backend docker)"
)
NODE_HINT = (
    "Requires Node.js 22+ (or any Node that runs main.js); with Docker pass --image with a Node "
    "image, e.g. --image node:22-slim or --image evalarc-node:local"
)

EventSink = Callable[[dict[str, Any]], None]


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
    retry_infrastructure: int = 0
    """Re-run a case whose infrastructure failed at most this many more times."""


def check_seconds(name: str, value: object) -> float:
    """A time limit must be a finite, positive number of at most :data:`MAX_SECONDS`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number of seconds, not {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond any float (a params.json written by hand)
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{name} must be a finite number of seconds above 0, not {value!r}")
    if seconds > MAX_SECONDS:
        raise UsageError(f"{name} must be at most {MAX_SECONDS:g} seconds, not {value!r}")
    return seconds


def resolve_options(options: EvaluateOptions) -> tuple[Pack, list[int], Limits]:
    """Validate ``options`` against the pack; return the pack, the seeds and the limits."""
    pack = load_pack(options.task)
    if options.backend not in BACKENDS:
        raise UsageError(f"unknown backend {options.backend!r} (choose docker, local or replay)")
    if options.backend == "local" and not options.trust_local:
        raise UsageError(LOCAL_REFUSAL)
    if (
        options.backend != "local"
        and options.image is not None
        and (not options.image.strip() or any(ch.isspace() for ch in options.image))
    ):
        raise UsageError(f"--image {options.image!r} is not an image name")
    check_executor(options.executor, options.backend)
    if options.jobs is not None:
        check_jobs(options.jobs)
    check_retries(options.retry_infrastructure)
    seeds = validate_seeds(
        list(options.seeds) if options.seeds is not None else list(pack.default_seeds)
    )
    limits = Limits(
        response_timeout=check_seconds("--timeout", options.timeout),
        case_timeout=check_seconds("--case-timeout", options.case_timeout),
        startup_timeout=check_seconds("--startup-timeout", options.startup_timeout),
        session_output_limit_bytes=pack.limits.session_output_limit_bytes,
        request_limit_bytes=pack.limits.request_limit_bytes,
        stderr_tail_bytes=pack.limits.stderr_tail_bytes,
    )
    return pack, seeds, limits


def check_executor(executor: str, backend: str) -> None:
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor {executor!r} (choose threads or ray)")
    if executor == "ray" and backend != "docker":
        raise UsageError(
            "--executor ray runs cases in Docker on the cluster's nodes: use it "
            "with --backend docker"
        )


def jobs_for(options_jobs: int | None, backend: str) -> int:
    """Cases run at once on this machine: replay is pure computation (threads would only
    contend for the interpreter), everything else waits on processes."""
    if backend == "replay":
        return 1
    return options_jobs if options_jobs is not None else default_jobs()


class RecordingWriter:
    """Saves each accepted recording into a report folder's ``recordings/`` as it arrives
    (named by its SHA-256; equal transcripts share one file)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(exist_ok=True)

    def __call__(self, recording: CaseRecording) -> str:
        data = recording.transcript.jsonl().encode("ascii")
        name = sha256_bytes(data)
        if name != recording.sha256:
            raise OutputError(
                f"recording of {recording.seed}/{recording.case_id} hashed differently when written"
            )
        target = self.folder / f"{name}{RECORDING_SUFFIX}"
        if not target.exists():
            # The staged folder is published by one rename, so no per-file fsync is needed.
            write_bytes(target, data)
        return name


def check_output(output: Path, candidate: Path) -> None:
    """The output folder must be new and must not lie inside the candidate folder."""
    if output.exists() or output.is_symlink():
        raise OutputError(f"output folder {output} already exists; choose a new one")
    target = output.resolve()
    source = candidate.resolve()
    if target == source or target.is_relative_to(source):
        raise OutputError(
            f"output folder {output} is inside the candidate folder {candidate}; "
            "choose a folder outside it"
        )


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
    if event.get("event") != "case_completed":
        return None
    width = len(str(event["total_cases"]))
    return (
        f"[{event['case_number']:>{width}}/{event['total_cases']}] seed {event['seed']} "
        f"{event['case_id']}: {event['status']} ({event['duration_seconds']:.2f} s)"
    )


def event_line(event: Mapping[str, Any]) -> str:
    """One ``evalarc.event.v1`` JSON line (schema and time first, then the event's fields)."""
    return compact_json(stamp_event(event))


def stamp_event(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"schema_version": EVENT_SCHEMA, "created_at": now_utc().isoformat(), **event}


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
    created_parents = _make_parents(output.parent)
    sweep_work_folders(temp_root)
    backend: Backend | None = None
    try:
        work = Path(tempfile.mkdtemp(prefix="evalarc-evaluate-", dir=temp_root))
    except OSError as error:
        _remove_empty(created_parents)
        raise OutputError(f"cannot create a temporary folder: {error.strerror or error}") from None
    published = False
    progress = Progress(on_event, stamp_event)
    owner = claim_work_folder(work)
    try:
        snapshot = snapshot_candidate(candidate, work / "snapshot", list(pack.default_command))
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
                on_start=case_started(pack, [subject], len(plan_cases(pack, seeds)), progress),
            )
        else:
            backend = _make_backend(options, snapshot, limits, work / "cases", owner)
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
            _write_report_folder(staging, pack, run, options, seeds, progress.in_plan_order([None]))
        published = True
        notes = replay_notes(backend) if backend is not None else executor_notes(executor)
        return EvaluationResult(run.report, output, notes)
    finally:
        with _uninterruptible():
            if backend is not None:
                close_backend(backend)
            shutil.rmtree(work, ignore_errors=True)
            if not published:
                _remove_empty(created_parents)


def executor_notes(executor: Executor) -> tuple[str, ...]:
    """What a remote executor must tell its user beyond the report (rejected transcripts)."""
    notes = getattr(executor, "notes", None)
    return tuple(notes()) if callable(notes) else ()


def _make_backend(
    options: EvaluateOptions,
    snapshot: Snapshot,
    limits: Limits,
    work_root: Path,
    owner: str | None = None,
) -> Backend:
    if options.backend == "local":
        from evalarc.runtime.local import LocalBackend

        return LocalBackend(snapshot.path, snapshot.command, limits, work_root)
    if options.backend == "replay":
        return _replay_backend(options, snapshot, limits)
    from evalarc.runtime.docker_backend import DockerBackend, DockerCaseRun

    class TrackedDockerBackend(DockerBackend):
        """Remembers containers whose creation was interrupted (Ctrl-C while the engine was
        still creating them): the engine may finish creating one after we stopped waiting."""

        unfinished: list[str]

        def create_container(self, case: DockerCaseRun) -> Any:
            name = f"evalarc-{case.case_id}-{case.containers_made}"
            try:
                return super().create_container(case)
            except KeyboardInterrupt:
                self.unfinished.append(name)
                raise

    backend = TrackedDockerBackend(
        snapshot.path,
        snapshot.command,
        limits,
        work_root,
        image=options.image or DEFAULT_IMAGE,
        owner=owner,
    )
    backend.unfinished = []
    return backend


def _replay_backend(options: EvaluateOptions, snapshot: Snapshot, limits: Limits) -> Backend:
    """Answer every case from recordings of this exact candidate (MissingRecordings, exit 2,
    lists the cases that have none)."""
    from evalarc.packs import grader_sha256
    from evalarc.resources import bundled_dir
    from evalarc.runtime.replay import RuntimeRequest, make_replay_backend, open_store

    pack, seeds, _ = resolve_options(options)
    store = open_store(options.recordings or bundled_dir(RECORDINGS_DIR))
    labels = [
        f"{case.seed}/{case.case_id}" for seed in seeds for case in pack.grader.generate_cases(seed)
    ]
    return make_replay_backend(
        store,
        candidate_sha256=snapshot.sha256,
        pack=f"{pack.id}@{pack.version}",
        grader_sha256=grader_sha256(pack),
        request=RuntimeRequest(command=snapshot.command, limits=limits, image=options.image),
        labels=labels,
    )


def replay_notes(backend: Backend) -> tuple[str, ...]:
    """What a replay must tell its user beyond the report (nothing for live backends)."""
    from evalarc.runtime.replay import ReplayBackend

    if not isinstance(backend, ReplayBackend):
        return ()
    notes = [divergence.describe() for divergence in backend.divergences]
    notes.extend(
        f"replayed recordings made under grader {grader[:12]} through today's grader "
        f"{backend.grader_sha256[:12]}"
        for grader in sorted(backend.foreign_graders)
    )
    return tuple(notes)


UNFINISHED_CREATE_WAIT = 5.0
"""Seconds to wait for the engine to finish a container creation we interrupted."""


def close_backend(backend: Backend) -> None:
    """Remove every container a Docker backend made (a safety net behind each case's own
    cleanup, e.g. after Ctrl-C in the middle of a Docker call) and close its engine connection."""
    if backend.name != "docker":
        return  # nothing to remove, and no reason to import the Docker SDK
    from docker.errors import NotFound

    from evalarc.runtime.docker_backend import BACKEND_LABEL, DockerBackend

    if not isinstance(backend, DockerBackend):
        return
    client = backend.client
    for name in getattr(backend, "unfinished", []):
        deadline = time.monotonic() + UNFINISHED_CREATE_WAIT
        while time.monotonic() < deadline:
            try:
                client.containers.get(name).remove(force=True)
                break
            except NotFound:
                time.sleep(0.1)
            except Exception:  # the engine is failing; the label sweep below tries once more
                break
    with suppress(Exception):
        for container in client.containers.list(
            all=True, sparse=True, filters={"label": f"{BACKEND_LABEL}={backend.backend_id}"}
        ):
            with suppress(Exception):
                container.remove(force=True)
    with suppress(Exception):
        client.close()


@contextmanager
def _uninterruptible() -> Iterator[None]:
    """Hold off Ctrl-C while cleaning up, so a second interrupt cannot strand a container."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and missing parents (e.g. the default ``runs/``); return those made,
    deepest first, so a failed run can remove them again."""
    missing: list[Path] = []
    current = folder
    while not current.exists() and not current.is_symlink() and current != current.parent:
        missing.append(current)
        current = current.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create {folder}: {error.strerror or error}") from None
    return missing


def _remove_empty(folders: Sequence[Path]) -> None:
    for folder in folders:
        with suppress(OSError):
            folder.rmdir()


def _copy_candidate(snapshot: Snapshot, dest: Path, pack: Pack, label: Path) -> None:
    """Copy the snapshot into the report and prove the copy has the same fingerprint."""
    copy = snapshot_candidate(snapshot.path, dest, list(pack.default_command))
    if copy.sha256 != snapshot.sha256:
        raise InputError(f"candidate {label}: the snapshot changed while it was being copied")


def _write_report_folder(
    staging: Path,
    pack: Pack,
    run: SubjectRun,
    options: EvaluateOptions,
    seeds: list[int],
    events: list[dict[str, Any]],
) -> None:
    from evalarc.bundle import EvidenceFolder
    from evalarc.site.evaluation_page import recording_reader, render_evaluation_page

    report = run.report
    recordings = staging / RECORDINGS_DIR
    recordings.mkdir(exist_ok=True)
    save_index(recording_index(pack, run), recordings / INDEX_FILE)
    write_json(staging / REPORT_FILE, report)
    write_text(staging / EVENTS_FILE, "".join(compact_json(event) + "\n" for event in events))
    write_json(staging / "params.json", params_document("evaluation", _params(options, seeds)))
    # The page reads the recordings just written, so its traces match a site's page exactly.
    page = render_evaluation_page(report, recording_reader(EvidenceFolder(staging)))
    write_text(staging / PAGE_FILE, page)


def recording_index(
    pack: Pack, run: SubjectRun, index: RecordingIndex | None = None
) -> RecordingIndex:
    """The run keys of one evaluation's recordings, added to ``index`` (or a new one)."""
    index = index if index is not None else RecordingIndex()
    report = run.report
    runtime: dict[str, Any] = report["runtime"]
    runtime_sha256 = runtime_fingerprint(runtime)
    for seed, case_id, name in run.recordings:
        key = RunKey(
            candidate_sha256=report["candidate_sha256"],
            pack=f"{pack.id}@{pack.version}",
            grader_sha256=report["grader_sha256"],
            seed=seed,
            case_id=case_id,
            runtime_sha256=runtime_sha256,
        )
        index.add(key, name, runtime)
    return index


def _params(options: EvaluateOptions, seeds: list[int]) -> dict[str, JSONValue]:
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
    params.update(executor_params(options.executor, options.retry_infrastructure))
    return params


def executor_params(executor: str, retry_infrastructure: int) -> dict[str, JSONValue]:
    """Where cases ran and how infrastructure failures were retried, recorded only when not
    the defaults (results never depend on either; the cluster's address is never recorded)."""
    params: dict[str, JSONValue] = {}
    if executor != "threads":
        params["executor"] = executor
    if retry_infrastructure:
        params["retry_infrastructure"] = retry_infrastructure
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
