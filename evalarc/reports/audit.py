"""``evalarc audit`` as a library call: run a pack's controls and write the audit folder.

The positive control (the pack's reference in one language) and every declared negative control
(the reference with one fault toggled) are evaluated under one runtime and one set of seeds, side
by side on a small thread pool (each evaluation is mostly waiting on Docker round trips); then
:func:`evalarc.review.audit.compute_audit` turns the evaluations into ``audit.json``. The folder::

    audit.json                 evalarc.audit.v2 (every evaluation embedded)
    evaluations/<control>.json each control's evalarc.evaluation.v2 report on its own
    recordings/<sha>.jsonl     every case transcript, named by its SHA-256 (shared when equal)
    recordings/index.json      run key -> recording (evalarc.recording-index.v1)
    events.jsonl               evalarc.event.v1 progress events, each with its ``control``
    params.json                evalarc.report-params.v1, kind "audit": every option
    index.html                 the offline audit page

``--backend replay`` runs nothing: each control's cases are answered from recordings (by
default the bundled ``recordings/``), so a published audit can be recomputed without Docker.
The folder is staged and published only when complete; Ctrl-C leaves no folder and no container.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalarc import __version__
from evalarc.bundle import (
    EvidenceFolder,
    load_report_json,
    params_document,
    staged_folder,
    write_json,
    write_text,
)
from evalarc.cancel import remove_temporary_folder, signals_held, temporary_folder
from evalarc.canonical import JSONValue, compact_json
from evalarc.clock import now_utc
from evalarc.errors import EvalArcError, ExitCode, OutputError, UsageError, VerificationError
from evalarc.packs import (
    EventSink,
    Grader,
    Pack,
    PackCase,
    grader_sha256,
    load_pack,
    materialize_workspace,
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
)
from evalarc.reports.kind import ReportKind, write_page
from evalarc.reports.replayed import (
    INFORMATIONAL,
    SCOPE,
    RecordedOptions,
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
    make_parents,
    make_work_folder,
    recording_index,
    remove_empty,
    stamp_event,
)
from evalarc.resources import bundled_dir
from evalarc.review.audit import (
    AUDIT_SCHEMA,
    REFERENCE_CONTROL,
    AuditContext,
    FaultRun,
    compute_audit,
)
from evalarc.runtime.owner import claim_work_folder, sweep_work_folders
from evalarc.runtime.protocol import Backend, Limits
from evalarc.runtime.recording import RecordingIndex, save_index
from evalarc.runtime.replay import (
    Divergence,
    MissingRecordings,
    RecordingStore,
    ReplayBackend,
    RuntimeRequest,
    make_replay_backend,
    open_store,
    recordings_label,
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

DEFAULT_OUTPUT = Path("runs") / "audit"
REPORT_FILE = "audit.json"
EVALUATIONS_DIR = "evaluations"
LOCAL_REFUSAL = (
    "local mode executes host code: the controls run as you, with your files and network; "
    "pass --trust-local to allow it (or use --backend docker or replay)"
)


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """Every option of ``evalarc audit`` (recorded in params.json)."""

    task: str = DEFAULT_TASK
    language: str = "python"
    backend: str = "docker"
    trust_local: bool = False
    image: str | None = None
    """Docker image tag; None means :data:`DEFAULT_IMAGE` for docker and any recorded image for
    replay."""
    seeds: tuple[int, ...] | None = None
    """None means the pack's default seeds."""
    timeout: float = 10.0
    case_timeout: float = 60.0
    startup_timeout: float = 30.0
    without_cases: tuple[str, ...] = ()
    """Case ids removed from the suite (the declared controls run on the reduced suite)."""
    recordings: Path | None = None
    """Replay store; None means the bundled ``recordings/``."""
    jobs: int | None = None
    """Cases run at once, over every control; None means :func:`default_jobs` (replay runs
    one at a time)."""
    executor: str = "threads"
    """``threads`` (this machine) or ``ray`` (one Ray task per case on a cluster)."""
    ray_address: str | None = None
    """The Ray cluster to join (None: ``RAY_ADDRESS`` or a new local one); never recorded."""
    ray_verify_sample: int | None = None
    """Cases re-run on a second Ray node to check the first (None: the default)."""
    retry_infrastructure: int = 0
    """Re-run a case whose infrastructure failed at most this many more times."""


@dataclass(frozen=True, slots=True)
class ResolvedAudit:
    """Options checked against the pack."""

    pack: Pack
    """The pack as audited (its case generator reduced by ``without_cases``)."""
    seeds: list[int]
    limits: Limits
    image: str | None
    without_cases: tuple[str, ...]
    jobs: int


def resolve_audit(options: AuditOptions) -> ResolvedAudit:
    """Validate every option before anything runs (UsageError names the option)."""
    pack = load_pack(options.task)
    if options.language not in LANGUAGES:
        raise UsageError(f"unknown language {options.language!r} (choose python or javascript)")
    pack.language(options.language)
    if options.backend not in BACKENDS:
        raise UsageError(f"unknown backend {options.backend!r} (choose docker, local or replay)")
    if options.backend == "local" and not options.trust_local:
        raise UsageError(LOCAL_REFUSAL)
    image = options.image
    if options.backend == "docker" and image is None:
        image = DEFAULT_IMAGE
    if options.backend == "local":
        image = None
    check_image(image)
    seeds = validate_seeds(
        list(options.seeds) if options.seeds is not None else list(pack.default_seeds)
    )
    limits = case_limits(pack, options.timeout, options.case_timeout, options.startup_timeout)
    without = tuple(sorted(set(options.without_cases)))
    audited = reduced_pack(pack, without, seeds) if without else pack
    check_executor(options.executor, options.backend, options.jobs, options.ray_address)
    check_ray_sample(options.executor, options.ray_verify_sample)
    check_retries(options.retry_infrastructure)
    jobs = options.jobs if options.jobs is not None else default_jobs()
    check_jobs(jobs)
    jobs = jobs_for(jobs, options.backend)
    return ResolvedAudit(audited, seeds, limits, image, without, jobs)


# -- the reduced suite -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ReducedGrader:
    """A pack's grader whose case generator leaves out some case ids."""

    grader: Grader
    without: frozenset[str]

    def generate_cases(self, seed: int) -> Sequence[PackCase]:
        return [
            case for case in self.grader.generate_cases(seed) if case.case_id not in self.without
        ]

    def cases_sha256(self, cases: Sequence[Any]) -> str:
        return self.grader.cases_sha256(cases)

    def run_case(self, case: Any, case_run: Any) -> Any:
        return self.grader.run_case(case, case_run)

    def unassessed_case(self, case: Any, message: str) -> Any:
        return self.grader.unassessed_case(case, message)

    def summarize(
        self, cases: Sequence[Mapping[str, Any]], dimensions: Sequence[tuple[str, float]]
    ) -> dict[str, Any]:
        return self.grader.summarize(cases, dimensions)


def reduced_pack(pack: Pack, without: Sequence[str], seeds: Sequence[int]) -> Pack:
    """``pack`` with the case ids ``without`` removed from every seed's suite.

    Refuses ids no seed generates, and a removal that leaves no case or leaves a declared
    dimension without any case (its score would silently read as 0).
    """
    generated = [case for seed in seeds for case in pack.grader.generate_cases(seed)]
    known = sorted({case.case_id for case in generated})
    unknown = sorted(set(without) - set(known))
    if unknown:
        raise UsageError(
            f"--without-case {', '.join(unknown)}: no such case in {pack.id} "
            f"(cases: {', '.join(known)})"
        )
    kept = [case for case in generated if case.case_id not in without]
    if not kept:
        raise UsageError("--without-case removes every case; nothing would be audited")
    dimensions_left = {case.manifest().get("dimension") for case in kept}
    if all("dimension" in case.manifest() for case in generated):
        emptied = [d.id for d in pack.dimensions if d.id not in dimensions_left]
        if emptied:
            raise UsageError(
                f"--without-case leaves dimension {', '.join(emptied)} without any case"
            )
    grader: Any = _ReducedGrader(pack.grader, frozenset(without))
    return replace(pack, grader=grader)


# -- controls --------------------------------------------------------------------------------


@dataclass(slots=True)
class Control:
    """One program the audit evaluates: the reference or one faulty variant."""

    name: str
    fault: str | None
    target_dimension: str | None
    snapshot: Snapshot
    backend: Backend | None = None
    run: SubjectRun | None = None


def control_names(pack: Pack) -> list[str]:
    return [REFERENCE_CONTROL, *(fault.name for fault in pack.faults)]


def prepare_controls(pack: Pack, language: str, work: Path) -> list[Control]:
    """Write and snapshot the reference and each faulty variant (program files only)."""
    controls: list[Control] = []
    for fault in [None, *pack.faults]:
        name = fault.name if fault is not None else REFERENCE_CONTROL
        workspace = work / "workspaces" / name
        workspace.parent.mkdir(parents=True, exist_ok=True)
        (work / "snapshots").mkdir(exist_ok=True)
        materialize_workspace(
            pack.id,
            language,
            reference=True,
            fault=fault.name if fault else None,
            dest=workspace,
            contract=False,
        )
        snapshot = snapshot_candidate(
            workspace, work / "snapshots" / name, list(pack.default_command)
        )
        controls.append(
            Control(
                name,
                fault.name if fault else None,
                fault.target_dimension if fault else None,
                snapshot,
            )
        )
    return controls


def replay_backends(
    controls: Sequence[Control],
    store: RecordingStore,
    pack: Pack,
    request: RuntimeRequest,
    labels: Sequence[str],
) -> None:
    """Give every control a replay backend, or raise one MissingRecordings naming every
    missing (control, case) at once."""
    missing: list[str] = []
    reasons: list[str] = []
    grader = grader_sha256(pack)
    for control in controls:
        try:
            control.backend = make_replay_backend(
                store,
                candidate_sha256=control.snapshot.sha256,
                pack=f"{pack.id}@{pack.version}",
                grader_sha256=grader,
                request=request,
                labels=labels,
            )
        except MissingRecordings as error:
            missing.extend(f"{control.name} {label}" for label in error.labels)
            if error.reason:
                reasons.append(f"{control.name}: {error.reason}")
    if missing:
        raise MissingRecordings(missing, store.where, "; ".join(reasons[:3]))


def _live_backend(
    options: AuditOptions, resolved: ResolvedAudit, control: Control, work: Path, owner: str
) -> Backend:
    """The same Docker or local backend ``evaluate`` builds (Docker: with its record of
    container creations that Ctrl-C interrupted)."""
    choice = BackendChoice(backend=options.backend, image=resolved.image)
    return make_backend(
        choice, control.snapshot, resolved.limits, work / "cases" / control.name, owner
    )


# -- running ---------------------------------------------------------------------------------


def _executor(
    options: AuditOptions,
    resolved: ResolvedAudit,
    controls: Sequence[Control],
    subjects: Sequence[Subject],
    progress: Progress,
) -> Executor:
    """Every case of every control on one pool: threads here, or Ray tasks on a cluster."""
    pack = resolved.pack
    started = case_started(pack, subjects, len(plan_cases(pack, resolved.seeds)), progress)
    if options.executor == "ray":
        from evalarc.ray_executor import RayExecutor, RaySubject

        return RayExecutor(
            pack,
            [RaySubject(control.snapshot) for control in controls],
            resolved.limits,
            image=resolved.image or DEFAULT_IMAGE,
            address=options.ray_address,
            seeds=resolved.seeds,
            verify_sample=options.ray_verify_sample,
            on_start=started,
        )
    return ThreadExecutor(
        pack, subjects, resolved.limits, resolved.jobs, on_start=started, stop_backend=close_backend
    )


# -- the outcome -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuditResult:
    audit: dict[str, Any]
    output: Path
    divergences: list[Divergence]
    """Recordings that no longer match today's grader (replay only); each made a run invalid."""
    foreign_graders: list[str]
    """Grader fingerprints, other than today's, whose recordings were replayed."""
    notes: tuple[str, ...] = ()
    """Remote executors only: each transcript this host rejected and each case attempt whose
    worker was lost (an environment failure of that attempt; under ``retry_infrastructure`` the
    case may have run again, as ``events.jsonl`` shows)."""

    @property
    def exit_code(self) -> ExitCode:
        """0 passed, 1 a valid audit that failed, 2 invalid."""
        if not self.audit["valid"]:
            return ExitCode.INVALID
        return ExitCode.ACCEPTED if self.audit["passed"] else ExitCode.REJECTED

    def warnings(self) -> list[str]:
        """What ``evalarc audit`` prints on stderr beside the result: each divergent recording,
        each foreign grader whose recordings were replayed, each rejected transcript."""
        return [
            *(divergence.describe() for divergence in self.divergences),
            *(
                f"replayed recordings made under grader {grader[:12]} through today's grader"
                for grader in self.foreign_graders
            ),
            *self.notes,
        ]


def audit_context(
    pack: Pack, language: str, seeds: Sequence[int], without_cases: Sequence[str], created_at: str
) -> AuditContext:
    return AuditContext(
        task=pack.task_json(),
        language=language,
        seeds=list(seeds),
        without_cases=list(without_cases),
        created_at=created_at,
        evalarc_version=__version__,
    )


def build_audit(
    pack: Pack,
    reference: Mapping[str, Any],
    fault_reports: Mapping[str, Mapping[str, Any]],
    context: AuditContext,
) -> dict[str, Any]:
    """The audit object from the controls' evaluations, faults in declared order (the writer
    and ``verify`` both call this)."""
    faults = [
        FaultRun(fault.name, fault.target_dimension, fault_reports[fault.name])
        for fault in pack.faults
    ]
    return compute_audit(reference, faults, context)


def run_audit(
    output: Path,
    options: AuditOptions,
    *,
    on_event: EventSink | None = None,
    temp_root: Path | None = None,
) -> AuditResult:
    """Run every control of the pack and publish the audit folder ``output``.

    Raises UsageError/InputError/OutputError/EnvironmentFailure (exit 2) before anything is
    written when the options, the output location, the backend or the recordings (replay) are
    unusable. Failures inside runs are data in the audit.
    """
    resolved = resolve_audit(options)
    pack = resolved.pack
    if output.exists() or output.is_symlink():
        raise OutputError(f"output folder {output} already exists; choose a new one")
    sweep_work_folders(temp_root)
    progress = Progress(on_event, stamp_event)
    controls: list[Control] = []
    created_parents: list[Path] = []
    made: list[Path] = []
    published = False
    try:
        # Held: a cancel cannot land between making a folder and owning its removal.
        with signals_held():
            created_parents = make_parents(output.parent)
            made.append(make_work_folder("evalarc-audit-", temp_root))
        work = made[0]
        owner = claim_work_folder(work)
        controls = prepare_controls(pack, options.language, work)
        if options.backend == "replay":
            store = open_store(options.recordings or bundled_dir(RECORDINGS_DIR))
            request = RuntimeRequest(
                command=list(pack.default_command), limits=resolved.limits, image=resolved.image
            )
            replay_backends(
                controls,
                store,
                pack,
                _request_for(request, controls),
                case_labels(pack, resolved.seeds),
            )
        elif options.executor != "ray":
            for control in controls:
                control.backend = _live_backend(options, resolved, control, work, owner)
        subjects = [
            Subject(control.name, control.snapshot.sha256, control.backend) for control in controls
        ]
        executor = _executor(options, resolved, controls, subjects, progress)
        created_at = now_utc().isoformat()
        with staged_folder(output) as staging:
            runs = run_subjects(
                pack,
                subjects,
                resolved.seeds,
                executor,
                progress,
                on_recording=RecordingWriter(staging / RECORDINGS_DIR),
                created_at=created_at,
                retry_infrastructure=options.retry_infrastructure,
            )
            for control, run in zip(controls, runs, strict=True):
                control.run = run
            audit = _write_audit_folder(
                staging,
                pack,
                controls,
                audit_params(options, resolved, executor),
                resolved,
                created_at,
                progress.in_plan_order([control.name for control in controls]),
            )
        published = True
        notes = executor_notes(executor)
        divergences: list[Divergence] = []
        foreign: set[str] = set()
        for control in controls:
            if isinstance(control.backend, ReplayBackend):
                divergences.extend(control.backend.divergences)
                foreign.update(control.backend.foreign_graders)
        return AuditResult(audit, output, divergences, sorted(foreign), notes)
    finally:
        with signals_held():  # a second Ctrl-C cannot strand a container
            for control in controls:
                if control.backend is not None and not isinstance(control.backend, ReplayBackend):
                    close_backend(control.backend)
            for folder in made:
                remove_temporary_folder(folder)
            if not published:
                remove_empty(created_parents)


def _request_for(request: RuntimeRequest, controls: Sequence[Control]) -> RuntimeRequest:
    """Every control of one language shares one command template (from its manifest or the
    pack's default), so the reference's decides the replay request."""
    return replace(request, command=list(controls[0].snapshot.command))


def _write_audit_folder(
    staging: Path,
    pack: Pack,
    controls: Sequence[Control],
    recorded: dict[str, JSONValue],
    resolved: ResolvedAudit,
    created_at: str,
    events: list[dict[str, Any]],
) -> dict[str, Any]:
    recordings = staging / RECORDINGS_DIR
    recordings.mkdir(exist_ok=True)
    (staging / EVALUATIONS_DIR).mkdir()
    index = RecordingIndex()
    reports: dict[str, dict[str, Any]] = {}
    for control in controls:
        assert control.run is not None
        report = control.run.report
        reports[control.name] = report
        recording_index(pack, control.run, index)
        write_json(staging / EVALUATIONS_DIR / f"{control.name}.json", report)
    save_index(index, recordings / INDEX_FILE)
    language = recorded["language"]
    assert isinstance(language, str)
    context = audit_context(pack, language, resolved.seeds, resolved.without_cases, created_at)
    audit = build_audit(
        pack,
        reports[REFERENCE_CONTROL],
        {name: report for name, report in reports.items() if name != REFERENCE_CONTROL},
        context,
    )
    write_json(staging / REPORT_FILE, audit)
    write_text(staging / EVENTS_FILE, "".join(compact_json(event) + "\n" for event in events))
    params = params_document("audit", recorded)
    write_json(staging / "params.json", params)
    write_page(staging, KIND, params, audit)
    return audit


def audit_params(
    options: AuditOptions, resolved: ResolvedAudit, executor: Executor
) -> dict[str, JSONValue]:
    """The audit's options, and how its cases ran (:func:`executor_params`)."""
    return {
        "task": options.task,
        "language": options.language,
        "backend": options.backend,
        "trust_local": options.trust_local,
        "image": resolved.image,
        "seeds": list(resolved.seeds),
        "timeout": options.timeout,
        "case_timeout": options.case_timeout,
        "startup_timeout": options.startup_timeout,
        "without_cases": list(resolved.without_cases),
        **executor_params(executor, options.retry_infrastructure),
        "replay_recordings": None
        if options.backend != "replay"
        else recordings_label(options.recordings),
        "report": REPORT_FILE,
        "recordings": f"{RECORDINGS_DIR}/{INDEX_FILE}",
    }


def progress_line(event: Mapping[str, Any]) -> str | None:
    """The human progress line of an event: one when each control's evaluation starts, one per
    case as it finishes (cases of every control run side by side) and one when each control's
    evaluation ends."""
    name = event.get("event")
    if name == "evaluation_started":
        return f"{event['control']}: {event['total_cases']} cases"
    if name in ("case_completed", "case_retried"):
        return f"{event['control']} {case_progress_line(event)}"
    if name != "evaluation_completed":
        return None
    score = event.get("score")
    shown = "unavailable" if score is None else f"{score:.4f}"
    return f"{event['control']}: score {shown} | status {event['status']}"


def recompute_audit_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> dict[str, Any]:
    """Replay every control of an audit folder and recompute the audit."""
    if recorded.get("schema_version") != AUDIT_SCHEMA:
        raise VerificationError(f"{REPORT_FILE} does not hold an audit report")
    pack = recorded_pack(params)
    options = recorded_options(params, pack)
    language = recorded_text(params, "language")
    without = params.get("without_cases")
    if not isinstance(without, list) or not all(isinstance(case, str) for case in without):
        raise VerificationError("params.json has no without_cases list")
    try:
        pack.language(language)
        audited = reduced_pack(pack, without, options.seeds) if without else pack
    except EvalArcError as error:
        raise VerificationError(f"params.json: {error.message}") from None
    saved = _saved_evaluations(folder, recorded, audited)
    with temporary_folder("evalarc-verify-") as work:
        controls = prepare_controls(audited, language, work)
        for control in controls:
            recorded_sha = saved[control.name].get("candidate_sha256")
            if control.snapshot.sha256 != recorded_sha:
                raise VerificationError(
                    f"the pack's {control.name} control ({language}) is not the candidate "
                    f"this audit ran"
                )
        store = recordings_store(folder, options)
        replay_backends(
            controls,
            store,
            audited,
            replay_request(options, controls[0].snapshot.command),
            case_labels(audited, options.seeds),
        )
        reports = {
            control.name: _replay_control(control, audited, options, saved, store)
            for control in controls
        }
        for name, report in reports.items():
            adopt_attempts(report, saved[name], recorded_retries(params), audited, options, store)
    context = audit_context(
        audited, language, options.seeds, without, str(recorded.get("created_at", ""))
    )
    return build_audit(
        audited,
        reports[REFERENCE_CONTROL],
        {name: report for name, report in reports.items() if name != REFERENCE_CONTROL},
        context,
    )


def _replay_control(
    control: Control,
    pack: Pack,
    options: RecordedOptions,
    saved: Mapping[str, Mapping[str, Any]],
    store: RecordingStore,
) -> dict[str, Any]:
    backend = control.backend
    assert isinstance(backend, ReplayBackend)
    return replayed_report(pack, control.snapshot, backend, options, saved[control.name], store)


def _saved_evaluations(
    folder: EvidenceFolder, recorded: Mapping[str, Any], pack: Pack
) -> dict[str, Mapping[str, Any]]:
    """Each control's evaluation as embedded in audit.json, checked against its copy in
    ``evaluations/``."""
    reference = recorded.get("reference")
    mutants = recorded.get("mutants")
    if not isinstance(reference, dict) or not isinstance(mutants, list):
        raise VerificationError(f"{REPORT_FILE} lacks its reference or mutants")
    saved: dict[str, Mapping[str, Any]] = {REFERENCE_CONTROL: reference}
    for row in mutants:
        if (
            isinstance(row, dict)
            and isinstance(row.get("name"), str)
            and isinstance(row.get("evaluation"), dict)
        ):
            saved[row["name"]] = row["evaluation"]
    expected = [REFERENCE_CONTROL, *(fault.name for fault in pack.faults)]
    if sorted(saved) != sorted(expected) or len(mutants) != len(pack.faults):
        raise VerificationError(
            f"{REPORT_FILE} does not list the pack's declared controls ({', '.join(expected)})"
        )
    for name in expected:
        copy = load_report_json(folder, f"{EVALUATIONS_DIR}/{name}.json")
        if _canonical(copy) != _canonical(saved[name]):
            raise VerificationError(
                f"{EVALUATIONS_DIR}/{name}.json differs from the evaluation in {REPORT_FILE}"
            )
    return saved


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def audit_summary(audit: dict[str, Any]) -> dict[str, Any]:
    """What ``verify`` says about a consistent audit: resolved refers to the reference, passed
    to the whole audit (reference resolved and every declared fault detected)."""
    detection = audit.get("detection") if isinstance(audit.get("detection"), dict) else {}
    assert isinstance(detection, dict)
    return {
        "records_valid": audit.get("valid") is True,
        "fully_resolved": audit.get("reference_passed") is True,
        "passed": audit.get("passed") is True,
        "mutation_score": audit.get("mutation_score"),
        "weakest_margin": detection.get("weakest_margin"),
        "scope": SCOPE,
    }


def derived_audit_files(
    folder: EvidenceFolder, params: dict[str, Any], audit: dict[str, Any]
) -> dict[str, Any]:
    """What ``audit`` derives from an audit: each control's evaluation copy, the events (runs
    interleave when controls ran in parallel) and the page."""
    from evalarc.bundle import text_bytes
    from evalarc.canonical import pretty_json

    runs: list[tuple[str | None, Mapping[str, Any]]] = [(REFERENCE_CONTROL, audit["reference"])]
    runs += [(row["name"], row["evaluation"]) for row in audit["mutants"]]
    derived: dict[str, Any] = {
        f"{EVALUATIONS_DIR}/{name}.json": text_bytes(pretty_json(report)) for name, report in runs
    }
    derived[EVENTS_FILE] = events_check(runs, recorded_retries(params), recorded_ray(params))
    return derived


def page_view(folder: EvidenceFolder, params: dict[str, Any], report: dict[str, Any]) -> PageView:
    from evalarc.pages.audit import build_audit_page

    page = build_audit_page(report)
    return PageView("audit.html.j2", f"Audit · {report['task']['id']}", page.banner, page)


KIND = ReportKind(
    name="audit",
    label="Grader audit",
    schema=AUDIT_SCHEMA,
    report_file=REPORT_FILE,
    page=page_view,
    recompute=recompute_audit_folder,
    summarize=audit_summary,
    derive=derived_audit_files,
    volatile=((), ("reference",), ("mutants", "*", "evaluation")),
    informational=INFORMATIONAL,
)
