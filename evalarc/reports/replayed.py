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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from evalarc.bundle import EvidenceFolder
from evalarc.errors import EvalArcError, VerificationError
from evalarc.packs import (
    Pack,
    evaluate,
    grader_sha256,
    load_pack,
    plan_cases,
    validate_seeds,
)
from evalarc.reports.backends import RayRun, check_seconds
from evalarc.reports.run_folder import EVENTS_FILE
from evalarc.runtime.protocol import Limits
from evalarc.runtime.replay import (
    Divergence,
    RecordingStore,
    ReplayBackend,
    RuntimeRequest,
    case_label,
    read_store,
)
from evalarc.runtime.snapshot import Snapshot

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


def recorded_text(params: Mapping[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise VerificationError(f"params.json has no {key}")
    return value


def recorded_options(params: Mapping[str, Any], pack: Pack) -> RecordedOptions:
    backend = recorded_text(params, "backend")
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
    index = recorded_text(params, "recordings")
    if not index.endswith("/index.json"):
        raise VerificationError("params.json: recordings must name a recordings index")
    return RecordedOptions(
        recorded_text(params, "task"), backend, image, seeds, limits, index.rpartition("/")[0]
    )


def replay_request(options: RecordedOptions, command: Sequence[str]) -> RuntimeRequest:
    backend = options.backend if options.backend in ("docker", "local") else None
    image = options.image if options.backend != "local" else None
    return RuntimeRequest(
        command=list(command), limits=options.limits, image=image, backend=backend
    )


def recordings_store(folder: EvidenceFolder, options: RecordedOptions) -> RecordingStore:
    return read_store(EvidenceSource(folder, options.recordings), options.recordings)


# -- timings and divergences -----------------------------------------------------------------


def adopt_attempts(
    recomputed: dict[str, Any],
    recorded: Mapping[str, Any],
    retries: int,
    pack: Pack,
    options: RecordedOptions,
    store: RecordingStore,
) -> None:
    """With ``retries`` (params.json's ``retry_infrastructure``) the recomputed report states
    them too, with each case's attempt count taken from the saved report when it is one the
    retries allow, and each failed attempt's error derived here by replaying the recording of
    its fault through the grader (it must replay as an infrastructure failure);
    ``events.jsonl`` must then show exactly those attempts and errors (:func:`events_check`)."""
    from evalarc.ray_executor import rederive
    from evalarc.runtime.protocol import Transcript
    from evalarc.schedule import bind_attempts

    stated = recorded.get("retry_infrastructure", 0)
    if stated != retries:
        raise VerificationError(
            f"params.json: retry_infrastructure {retries} is not the {stated!r} the report states"
        )
    if not retries:
        return
    saved_cases = recorded.get("cases")
    cases = recomputed["cases"]
    if not isinstance(saved_cases, list) or len(saved_cases) != len(cases):
        raise VerificationError("the report's cases are not the recomputed cases")
    planned = plan_cases(pack, options.seeds)
    grader = grader_sha256(pack)
    attempts: list[int] = []
    failures: list[list[dict[str, Any]]] = []
    for mine, saved, case in zip(cases, saved_cases, planned, strict=True):
        label = f"case {mine['seed']}/{mine['case_id']}"
        count = saved.get("attempts") if isinstance(saved, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= retries + 1:
            raise VerificationError(
                f"{label}: the report states no attempt count from 1 to {retries + 1} "
                f"(retry_infrastructure {retries})"
            )
        failed = saved.get("failed_attempts", []) if count > 1 else []
        if not isinstance(failed, list) or len(failed) != count - 1:
            raise VerificationError(
                f"{label}: the report does not list its {count - 1} failed attempt(s)"
            )
        derived = []
        for number, item in enumerate(failed, start=1):
            name = item.get("recording_sha256") if isinstance(item, dict) else None
            try:
                events = store.events(str(name))
            except EvalArcError as error:
                raise VerificationError(
                    f"{label}: failed attempt {number}: {error.message}"
                ) from None
            record, _, divergences = rederive(
                pack,
                grader,
                str(recomputed["candidate_sha256"]),
                dict(recomputed["runtime"]),
                options.limits,
                case,
                Transcript(list(events)),
            )
            if divergences or record.get("status") != "environment_error":
                raise VerificationError(
                    f"{label}: failed attempt {number}'s recording does not replay as an "
                    "infrastructure failure"
                )
            derived.append({"error": record.get("error"), "recording_sha256": name})
        attempts.append(count)
        failures.append(derived)
    bind_attempts(recomputed, retries, attempts, failures)


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
    if finite(seconds):
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
        if not isinstance(duration, int | float) or not finite(duration):
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


def finite(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an integer beyond any float, written into a tampered report
        return False


def refuse_divergences(divergences: Sequence[Divergence]) -> None:
    if divergences:
        more = f" (and {len(divergences) - 1} more)" if len(divergences) > 1 else ""
        raise VerificationError(divergences[0].describe() + more)


def fixed_clock(created_at: object) -> datetime:
    if isinstance(created_at, str):
        try:
            return datetime.fromisoformat(created_at)
        except ValueError:
            pass
    return datetime.fromtimestamp(0).astimezone()


# -- evaluation folders ----------------------------------------------------------------------


# -- audit folders ---------------------------------------------------------------------------


def recorded_pack(params: Mapping[str, Any]) -> Pack:
    try:
        return load_pack(recorded_text(params, "task"))
    except EvalArcError as error:
        raise VerificationError(f"params.json: {error.message}") from None


# -- derived files ---------------------------------------------------------------------------

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
    from evalarc.reports.run_folder import EVENT_SCHEMA

    return compact_json({"schema_version": EVENT_SCHEMA, "created_at": created_at, **event})


def _ray_where(
    value: Mapping[str, Any], ray: RayRun, sampled: bool, nodes_may_repeat: bool
) -> dict[str, int] | str:
    """The ``ray_node`` (and for a sampled case ``ray_rerun_node``) a Ray run's case event
    must carry: present, a node number of the run, the re-run on another node when there was
    one, and a re-run exactly for the sampled cases; else why not."""
    where: dict[str, int] = {}
    for key in ("ray_node", "ray_rerun_node"):
        number = value.get(key)
        if key not in value:
            continue
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= ray.nodes:
            return f"has no node number of the run in {key}"
        where[key] = number
    if "ray_node" not in where:
        return "does not name the Ray node that ran the case"
    if sampled != ("ray_rerun_node" in where):
        wanted = "was" if sampled else "was not"
        return f"contradicts the recorded sample (the case {wanted} to be re-run on a second node)"
    if sampled and not nodes_may_repeat and where["ray_rerun_node"] == where["ray_node"]:
        return "names the same node for a sampled case's run and its re-run"
    return where


def events_check(
    runs: Sequence[tuple[str | None, Mapping[str, Any]]],
    retries: int = 0,
    ray: RayRun | None = None,
) -> Any:
    """A check of ``events.jsonl``: every line is one expected event of one run, stamped with a
    timestamp (its only volatile key), byte for byte; each run's events appear exactly once and
    in order (runs of an audit may interleave).

    With ``retries`` (the run's ``retry_infrastructure``), a case may also show up to that many
    failed attempts between its ``case_started`` and its ``case_completed``: each a
    ``case_retried`` line (its ``error`` is the failed attempt's own, which no recording keeps)
    followed by the next attempt's ``case_started``; the ``case_completed`` then names the
    attempt that counted. A case that ended in an infrastructure failure must show every
    attempt it was allowed.

    With ``ray`` (a Ray run), every ``case_retried`` and ``case_completed`` line names the
    node that ran that attempt (``ray_node``), and a completed case of the recomputed sample
    (:func:`evalarc.ray_executor.sampled_cases`) that was not an infrastructure failure names
    the node that re-ran it (``ray_rerun_node``); no other case does."""
    sample: set[tuple[int, int]] = set()
    if ray is not None:
        from evalarc.ray_executor import sampled_cases

        first = runs[0][1]["cases"] if runs else []
        sample = sampled_cases(
            ray.seed,
            ray.sample,
            [str(report.get("candidate_sha256")) for _, report in runs],
            [(case["seed"], case["case_id"]) for case in first],
        )
    run_number = {control: index for index, (control, _) in enumerate(runs)}
    attempts_of = {
        control: [case.get("attempts") for case in report["cases"]] for control, report in runs
    }
    """Each case's attempts as its report states them (None: a report without retries)."""
    faults_of = {
        control: [
            case.get("failed_attempts", []) if "attempts" in case else None
            for case in report["cases"]
        ]
        for control, report in runs
    }
    """Each case's failed attempts as its report states them (None: a report without
    retries)."""

    def where_of(value: Mapping[str, Any], control: Any, number: int, status: Any) -> Any:
        if ray is None:
            return {}
        sampled = (run_number[control], number) in sample and status != "environment_error"
        return _ray_where(value, ray, sampled, ray.nodes == 1)

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
        attempt = dict.fromkeys(pending, 1)
        """The attempt of each run's case in progress."""
        retried = dict.fromkeys(pending, False)
        """Whether a run's last line was a ``case_retried`` (its next is the next attempt)."""
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
            if retried[control]:  # the next attempt of the case in progress starts
                attempt[control] += 1
                retried[control] = False
                started = pending[control][position[control] - 1]
                if line != _stamped_line({**started, "attempt": attempt[control]}, stamp):
                    return f"{where} differs from the next attempt's case_started"
                continue
            if expected["event"] == "case_completed" and value.get("event") == "case_retried":
                if attempt[control] > retries:
                    return f"{where} retries a case more often than retry_infrastructure allows"
                error = value.get("error")
                failed = {
                    key: item
                    for key, item in expected.items()
                    if key not in ("status", "duration_seconds")
                }
                failed.update(event="case_retried", attempt=attempt[control], error=error)
                recorded_faults = faults_of[control][expected["case_number"] - 1]
                if recorded_faults is not None and (
                    len(recorded_faults) < attempt[control]
                    or recorded_faults[attempt[control] - 1].get("error") != error
                ):
                    return f"{where} states an error other than its attempt's recorded fault"
                placed = where_of(value, control, expected["case_number"], "environment_error")
                if isinstance(placed, str):
                    return f"{where} {placed}"
                failed.update(placed)
                if not isinstance(error, str) or line != _stamped_line(failed, stamp):
                    return f"{where} differs from a case_retried event of this case"
                retried[control] = True
                continue
            if expected["event"] == "case_completed":
                if attempt[control] > 1:
                    expected = {**expected, "attempt": attempt[control]}
                if (
                    retries
                    and expected["status"] == "environment_error"
                    and attempt[control] != retries + 1
                ):
                    return (
                        f"{where} ends a case in an infrastructure failure after "
                        f"{attempt[control]} attempt(s), not the {retries + 1} "
                        "retry_infrastructure allows"
                    )
                stated = attempts_of[control][expected["case_number"] - 1]
                if stated is not None and attempt[control] != stated:
                    return (
                        f"{where} ends a case after {attempt[control]} attempt(s), but the "
                        f"report says {stated}"
                    )
                attempt[control] = 1
                placed = where_of(value, control, expected["case_number"], expected["status"])
                if isinstance(placed, str):
                    return f"{where} {placed}"
                expected = {**expected, **placed}
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


INFORMATIONAL = frozenset({"trust_local", "report", "replay_recordings", "jobs", "executor"})
"""Options an executed run records for its reader; replaying it does not depend on them."""


def case_labels(pack: Pack, seeds: Sequence[int]) -> list[str]:
    return [
        case_label(case.seed, case.case_id)
        for seed in seeds
        for case in pack.grader.generate_cases(seed)
    ]


def replayed_report(
    pack: Pack,
    snapshot: Snapshot,
    backend: ReplayBackend,
    options: RecordedOptions,
    saved: Mapping[str, Any],
    store: RecordingStore,
) -> dict[str, Any]:
    """Evaluate ``snapshot`` again with every case answered from the folder's recordings, at
    the saved report's clock; a divergent recording is refused, and the timings that cannot be
    recomputed are taken from ``saved``."""
    created = saved.get("created_at")
    run = evaluate(
        pack,
        snapshot,
        backend,
        options.seeds,
        options.limits,
        now=lambda: fixed_clock(created),
    )
    refuse_divergences(backend.divergences)
    report = run.report
    adopt_timings(report, saved, store, options.backend != "replay")
    return report
