"""``verify`` for executed runs: evaluation and audit folders recomputed by replay.

An evaluation or audit folder carries the transcript of every case it ran. Verifying it runs no
candidate: the candidate (the folder's ``candidate/`` copy for an evaluation, the pack's own
controls for an audit) is fingerprinted again, its cases are answered from the folder's
recordings by the ``replay`` backend, today's grader grades them with the recorded options, and
the recomputed report must equal the saved one. So an edited score, an edited or missing
recording, a changed option or a grader that no longer behaves the same is caught (exit 2).

Only timings cannot be recomputed: each case's ``duration_seconds`` and the run's
``evaluation_seconds`` are taken from the saved report, and a case duration shorter than its own
recording is refused.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evalarc.audit_command import (
    Control,
    audit_context,
    build_audit,
    case_labels,
    prepare_controls,
    reduced_pack,
    replay_backends,
)
from evalarc.bundle import EvidenceFolder, ReportKind, load_report_json
from evalarc.errors import EvalArcError, VerificationError
from evalarc.evaluate_command import check_seconds
from evalarc.packs import (
    EVALUATION_SCHEMA,
    Pack,
    evaluate,
    grader_sha256,
    load_pack,
    validate_seeds,
)
from evalarc.review.audit import AUDIT_SCHEMA, REFERENCE_CONTROL
from evalarc.runtime.protocol import Limits
from evalarc.runtime.replay import (
    Divergence,
    RecordingStore,
    ReplayBackend,
    RuntimeRequest,
    make_replay_backend,
    read_store,
)
from evalarc.runtime.snapshot import snapshot_candidate

EVALUATION_FILE = "evaluation.json"
AUDIT_FILE = "audit.json"
EVALUATIONS_DIR = "evaluations"
SCOPE = (
    "Replayed the folder's recordings through today's grader with the recorded options and "
    "compared the recomputed report with the saved one; no candidate was run, case timings were "
    "taken from the saved report, and the recordings' origin is not authenticated."
)
"""What verifying an executed run proves (``verify`` shows it when a kind supplies one)."""
DURATION_TOLERANCE = 0.002
"""Seconds a case's recorded duration may fall short of its transcript's last event (both are
rounded)."""


@dataclass(frozen=True, slots=True)
class EvidenceSource:
    """The files of a recordings folder inside a folder being verified (safe reads, recorded)."""

    folder: EvidenceFolder
    prefix: str

    def _relative(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def describe(self, name: str) -> str:
        return self._relative(name)

    def read(self, name: str, limit: int) -> bytes | None:
        relative = self._relative(name)
        if not self.folder.exists(relative):
            return None
        return self.folder.read_bytes(relative, limit)


# -- recorded options ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedOptions:
    """The options of params.json that decide what a replay must reproduce."""

    task: str
    backend: str
    image: str | None
    seeds: list[int]
    limits: Limits
    recordings: str
    """The folder of the recordings index, relative to the report folder."""


def _text(params: Mapping[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise VerificationError(f"params.json has no {key}")
    return value


def recorded_options(params: Mapping[str, Any], pack: Pack) -> RecordedOptions:
    backend = _text(params, "backend")
    if backend not in ("docker", "local", "replay"):
        raise VerificationError(f"params.json names an unknown backend {backend!r}")
    image = params.get("image")
    if image is not None and not isinstance(image, str):
        raise VerificationError("params.json has a malformed image")
    seeds_value = params.get("seeds")
    if not isinstance(seeds_value, list):
        raise VerificationError("params.json has no seeds list")
    try:
        seeds = validate_seeds(seeds_value)
        limits = Limits(
            response_timeout=check_seconds("timeout", params.get("timeout")),
            case_timeout=check_seconds("case_timeout", params.get("case_timeout")),
            startup_timeout=check_seconds("startup_timeout", params.get("startup_timeout")),
            session_output_limit_bytes=pack.limits.session_output_limit_bytes,
            request_limit_bytes=pack.limits.request_limit_bytes,
            stderr_tail_bytes=pack.limits.stderr_tail_bytes,
        )
    except EvalArcError as error:
        raise VerificationError(f"params.json: {error.message}") from None
    index = _text(params, "recordings")
    if not index.endswith("/index.json"):
        raise VerificationError("params.json: recordings must name a recordings index")
    return RecordedOptions(
        _text(params, "task"), backend, image, seeds, limits, index.rpartition("/")[0]
    )


def _request(options: RecordedOptions, command: Sequence[str]) -> RuntimeRequest:
    backend = options.backend if options.backend in ("docker", "local") else None
    image = options.image if options.backend != "local" else None
    return RuntimeRequest(
        command=list(command), limits=options.limits, image=image, backend=backend
    )


def _store(folder: EvidenceFolder, options: RecordedOptions) -> RecordingStore:
    return read_store(EvidenceSource(folder, options.recordings), options.recordings)


# -- timings and divergences -----------------------------------------------------------------


def adopt_timings(
    recomputed: dict[str, Any], recorded: Mapping[str, Any], store: RecordingStore, live: bool
) -> None:
    """Take the timings (not recomputable) from the saved report into the recomputed one.

    A case duration is taken only when it is a finite number and, for a live run (``live``),
    no shorter than the case's own transcript (a replayed run takes less time than the
    recording it replays); otherwise the recomputed value stays and the comparison fails.
    """
    recomputed["created_at"] = recorded.get("created_at")
    seconds = recorded.get("evaluation_seconds")
    if _finite(seconds):
        recomputed["evaluation_seconds"] = seconds
    saved_cases = recorded.get("cases")
    if not isinstance(saved_cases, list) or len(saved_cases) != len(recomputed["cases"]):
        return
    for mine, saved in zip(recomputed["cases"], saved_cases, strict=True):
        if not isinstance(saved, dict) or (saved.get("seed"), saved.get("case_id")) != (
            mine["seed"],
            mine["case_id"],
        ):
            continue
        duration = saved.get("duration_seconds")
        if not isinstance(duration, int | float) or not _finite(duration):
            continue
        recording = mine.get("recording_sha256")
        if live and isinstance(recording, str):
            events = store.events(recording)
            if events and float(duration) + DURATION_TOLERANCE < float(events[-1]["t"]):
                raise VerificationError(
                    f"case {mine['seed']}/{mine['case_id']} claims {duration} s but its "
                    f"recording lasts {events[-1]['t']} s"
                )
        mine["duration_seconds"] = duration


def _finite(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an integer beyond any float, written into a tampered report
        return False


def _refuse_divergences(divergences: Sequence[Divergence]) -> None:
    if divergences:
        more = f" (and {len(divergences) - 1} more)" if len(divergences) > 1 else ""
        raise VerificationError(divergences[0].describe() + more)


def _fixed_clock(created_at: object) -> datetime:
    if isinstance(created_at, str):
        try:
            return datetime.fromisoformat(created_at)
        except ValueError:
            pass
    return datetime.fromtimestamp(0).astimezone()


# -- evaluation folders ----------------------------------------------------------------------


def recompute_evaluation_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> dict[str, Any]:
    """Replay an evaluation folder's recordings for its ``candidate/`` copy."""
    if recorded.get("schema_version") != EVALUATION_SCHEMA:
        raise VerificationError(f"{EVALUATION_FILE} does not hold an evaluation report")
    pack = _pack(params)
    options = recorded_options(params, pack)
    candidate = _text(params, "candidate")
    work = Path(tempfile.mkdtemp(prefix="evalarc-verify-"))
    try:
        source = folder.path_of(candidate)
        if not source.is_dir():
            raise VerificationError(f"{candidate}/ is missing from {folder.root.name}")
        for path in sorted(source.rglob("*")):
            if path.is_file() and not path.is_symlink():
                folder.read_bytes(path.relative_to(folder.root).as_posix())
        snapshot = snapshot_candidate(source, work / "snapshot", list(pack.default_command))
        if snapshot.sha256 != recorded.get("candidate_sha256"):
            raise VerificationError(f"{candidate}/ differs from the candidate the report recorded")
        store = _store(folder, options)
        labels = case_labels(pack, options.seeds)
        backend = make_replay_backend(
            store,
            candidate_sha256=snapshot.sha256,
            pack=f"{pack.id}@{pack.version}",
            grader_sha256=grader_sha256(pack),
            request=_request(options, snapshot.command),
            labels=labels,
        )
        created = recorded.get("created_at")
        run = evaluate(
            pack,
            snapshot,
            backend,
            options.seeds,
            options.limits,
            now=lambda: _fixed_clock(created),
        )
        _refuse_divergences(backend.divergences)
        report = run.report
        adopt_timings(report, recorded, store, options.backend != "replay")
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)


def evaluation_summary(report: dict[str, Any]) -> dict[str, Any]:
    """What ``verify`` says about a consistent evaluation."""
    return {
        "records_valid": report.get("valid") is True,
        "fully_resolved": report.get("resolved") is True,
        "passed": report.get("resolved") is True,
        "score": report.get("score"),
        "scope": SCOPE,
    }


# -- audit folders ---------------------------------------------------------------------------


def recompute_audit_folder(
    folder: EvidenceFolder, params: dict[str, Any], recorded: dict[str, Any]
) -> dict[str, Any]:
    """Replay every control of an audit folder and recompute the audit."""
    if recorded.get("schema_version") != AUDIT_SCHEMA:
        raise VerificationError(f"{AUDIT_FILE} does not hold an audit report")
    pack = _pack(params)
    options = recorded_options(params, pack)
    language = _text(params, "language")
    without = params.get("without_cases")
    if not isinstance(without, list) or not all(isinstance(case, str) for case in without):
        raise VerificationError("params.json has no without_cases list")
    try:
        pack.language(language)
        audited = reduced_pack(pack, without, options.seeds) if without else pack
    except EvalArcError as error:
        raise VerificationError(f"params.json: {error.message}") from None
    saved = _saved_evaluations(folder, recorded, audited)
    work = Path(tempfile.mkdtemp(prefix="evalarc-verify-"))
    try:
        controls = prepare_controls(audited, language, work)
        for control in controls:
            recorded_sha = saved[control.name].get("candidate_sha256")
            if control.snapshot.sha256 != recorded_sha:
                raise VerificationError(
                    f"the pack's {control.name} control ({language}) is not the candidate "
                    f"this audit ran"
                )
        store = _store(folder, options)
        replay_backends(
            controls,
            store,
            audited,
            _request(options, controls[0].snapshot.command),
            case_labels(audited, options.seeds),
        )
        reports = {
            control.name: _replay_control(control, audited, options, saved, store)
            for control in controls
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
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
    created = saved[control.name].get("created_at")
    run = evaluate(
        pack,
        control.snapshot,
        backend,
        options.seeds,
        options.limits,
        now=lambda: _fixed_clock(created),
    )
    _refuse_divergences(backend.divergences)
    report = run.report
    adopt_timings(report, saved[control.name], store, options.backend != "replay")
    return report


def _saved_evaluations(
    folder: EvidenceFolder, recorded: Mapping[str, Any], pack: Pack
) -> dict[str, Mapping[str, Any]]:
    """Each control's evaluation as embedded in audit.json, checked against its copy in
    ``evaluations/``."""
    reference = recorded.get("reference")
    mutants = recorded.get("mutants")
    if not isinstance(reference, dict) or not isinstance(mutants, list):
        raise VerificationError(f"{AUDIT_FILE} lacks its reference or mutants")
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
            f"{AUDIT_FILE} does not list the pack's declared controls ({', '.join(expected)})"
        )
    for name in expected:
        copy = load_report_json(folder, f"{EVALUATIONS_DIR}/{name}.json")
        if _canonical(copy) != _canonical(saved[name]):
            raise VerificationError(
                f"{EVALUATIONS_DIR}/{name}.json differs from the evaluation in {AUDIT_FILE}"
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


def _pack(params: Mapping[str, Any]) -> Pack:
    try:
        return load_pack(_text(params, "task"))
    except EvalArcError as error:
        raise VerificationError(f"params.json: {error.message}") from None


# -- derived files ---------------------------------------------------------------------------

EVENTS_FILE = "events.jsonl"
MAX_EVENT_LINE_CHARS = 64 * 1024


def expected_events(report: Mapping[str, Any], control: str | None) -> list[dict[str, Any]]:
    """The progress events (unstamped) that :func:`evalarc.packs.evaluate` emitted for a run
    that produced ``report``, each tagged with ``control`` inside an audit."""
    task = report["task"]["id"]
    cases = report["cases"]
    total = len(cases)
    events: list[dict[str, Any]] = [
        {
            "event": "evaluation_started",
            "task": task,
            "candidate_sha256": report["candidate_sha256"],
            "total_cases": total,
        }
    ]
    for number, case in enumerate(cases, start=1):
        where = {"task": task, "seed": case["seed"], "case_id": case["case_id"]}
        count = {"case_number": number, "total_cases": total}
        events.append({"event": "case_started", **where, **count})
        events.append(
            {
                "event": "case_completed",
                **where,
                **count,
                "status": case["status"],
                "duration_seconds": case["duration_seconds"],
            }
        )
    events.append(
        {
            "event": "evaluation_completed",
            "task": task,
            "score": report["score"],
            "status": report["status"],
            "valid": report["valid"],
        }
    )
    if control is not None:
        events = [{**event, "control": control} for event in events]
    return events


def _stamped_line(event: Mapping[str, Any], created_at: str) -> str:
    from evalarc.canonical import compact_json
    from evalarc.evaluate_command import EVENT_SCHEMA

    return compact_json({"schema_version": EVENT_SCHEMA, "created_at": created_at, **event})


def events_check(runs: Sequence[tuple[str | None, Mapping[str, Any]]]) -> Any:
    """A check of ``events.jsonl``: every line is one expected event of one run, stamped with a
    timestamp (its only volatile key), byte for byte; each run's events appear exactly once and
    in order (runs of an audit may interleave)."""

    def check(data: bytes) -> str | None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return f"{EVENTS_FILE} is not UTF-8"
        lines = text.split("\n")
        if lines[-1] != "":
            return f"{EVENTS_FILE} does not end with a line break"
        pending = {control: expected_events(report, control) for control, report in runs}
        position = dict.fromkeys(pending, 0)
        for number, line in enumerate(lines[:-1], start=1):
            where = f"{EVENTS_FILE} line {number}"
            if len(line) > MAX_EVENT_LINE_CHARS:
                return f"{where} is longer than {MAX_EVENT_LINE_CHARS} characters"
            try:
                value = json.loads(line)
                stamp, control = value.get("created_at"), value.get("control")
                datetime.fromisoformat(stamp)
            except (ValueError, TypeError, AttributeError, RecursionError):
                return f"{where} is not an event with a timestamp"
            if control not in pending or position[control] >= len(pending[control]):
                return f"{where} is not an event of this run"
            expected = pending[control][position[control]]
            if line != _stamped_line(expected, stamp):
                return f"{where} differs from the event the verified report implies"
            position[control] += 1
        for control, events in pending.items():
            if position[control] != len(events):
                return (
                    f"{EVENTS_FILE} lacks events of the run "
                    f"({position[control]} of {len(events)} found)"
                )
        return None

    return check


def derived_evaluation_files(
    folder: EvidenceFolder, params: dict[str, Any], report: dict[str, Any]
) -> dict[str, Any]:
    """What ``evaluate`` derives from an evaluation: its events and its page."""
    from evalarc.bundle import Later, text_bytes
    from evalarc.site.evaluation_page import recording_reader, render_evaluation_page

    return {
        EVENTS_FILE: events_check([(None, report)]),
        "index.html": Later(
            lambda: text_bytes(render_evaluation_page(report, recording_reader(folder)))
        ),
    }


def derived_audit_files(
    folder: EvidenceFolder, params: dict[str, Any], audit: dict[str, Any]
) -> dict[str, Any]:
    """What ``audit`` derives from an audit: each control's evaluation copy, the events (runs
    interleave when controls ran in parallel) and the page."""
    from evalarc.bundle import Later, text_bytes
    from evalarc.canonical import pretty_json
    from evalarc.site.audit_page import render_audit_page

    runs: list[tuple[str | None, Mapping[str, Any]]] = [(REFERENCE_CONTROL, audit["reference"])]
    runs += [(row["name"], row["evaluation"]) for row in audit["mutants"]]
    derived: dict[str, Any] = {
        f"{EVALUATIONS_DIR}/{name}.json": text_bytes(pretty_json(report)) for name, report in runs
    }
    derived[EVENTS_FILE] = events_check(runs)
    derived["index.html"] = Later(lambda: text_bytes(render_audit_page(audit)))
    return derived


_INFORMATIONAL = frozenset({"trust_local", "report", "replay_recordings", "jobs", "executor"})
"""Options an executed run records for its reader; replaying it does not depend on them."""

EVALUATION_KIND = ReportKind(
    name="evaluation",
    report_file=EVALUATION_FILE,
    recompute=recompute_evaluation_folder,
    summarize=evaluation_summary,
    derive=derived_evaluation_files,
    informational=_INFORMATIONAL,
)
AUDIT_KIND = ReportKind(
    name="audit",
    report_file=AUDIT_FILE,
    recompute=recompute_audit_folder,
    summarize=audit_summary,
    derive=derived_audit_files,
    volatile=((), ("reference",), ("mutants", "*", "evaluation")),
    informational=_INFORMATIONAL,
)
REPORT_KINDS = (EVALUATION_KIND, AUDIT_KIND)
REPORT_KIND = EVALUATION_KIND
"""The kind ``verify`` reads from a module that registers one; this module registers both
through :data:`REPORT_KINDS`."""
