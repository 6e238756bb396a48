"""Case-granular scheduling: every case of every candidate is one job on a shared pool.

``evaluate`` (one candidate) and ``audit`` (the reference and each faulty variant) both hand
their candidates to :func:`run_subjects`, which queues one :class:`CaseJob` per (candidate,
case) on an :class:`Executor` and assembles each candidate's ``evalarc.evaluation.v2`` report
from the records in plan order (seed-major, as a sequential run has them), however the cases
were scheduled. So ``--jobs 1`` and ``--jobs 8`` give the same records and the same report
bytes apart from the recorded timings; the progress events of ``events.jsonl`` are put back in
plan order as well, while the live progress (``on_event``) reports cases as they finish.

Executors:

* :class:`ThreadExecutor` (the default): ``jobs`` worker threads, each running a case on its
  candidate's own backend (Docker, local or replay). The work is mostly waiting on Docker round
  trips, so threads suffice.
* ``evalarc.ray_executor.RayExecutor`` (``--executor ray``): one Ray task per case on the nodes
  of a cluster; every verdict is re-derived on this host from the case's transcript.

Faults are data: an infrastructure failure (``environment_error``) of a case is kept, never
retried silently; ``retry_infrastructure`` re-runs only such cases, at most that many more
times, and every failed attempt stays in the events (``case_retried``). Candidate faults and
timeouts are never retried. The case's ``case_completed`` event then names the attempt that
counted (``attempt``), after the ``case_started``/``case_retried`` pairs of the failed ones.
Each case's recording is handed to ``on_recording`` as soon as it
is accepted, so the transcripts need not stay in memory.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalarc.cancel import signals_held
from evalarc.canonical import JSONValue
from evalarc.packs import (
    CaseRecording,
    Pack,
    PackCase,
    case_completed_event,
    case_runtime,
    case_started_event,
    evaluation_completed_event,
    evaluation_report,
    plan_cases,
    run_case,
    validate_seeds,
)
from evalarc.runtime.protocol import Backend, Limits, Transcript

EventSink = Callable[[dict[str, Any]], None]
MAX_JOBS = 16
MAX_RETRIES = 10
"""Most re-runs ``--retry-infrastructure`` may ask for."""
CANCEL_GRACE_SECONDS = 2.0
"""After Ctrl-C, how long running cases may finish before their containers are removed."""
POLL_SECONDS = 0.2
"""How often the driver wakes while waiting (keeps it responsive to Ctrl-C)."""
INFRASTRUCTURE = "environment_error"


def default_jobs() -> int:
    """Cases run at once: two per core (a case is mostly waiting on Docker round trips)."""
    return max(1, min(16, 2 * (os.cpu_count() or 1)))


@dataclass(frozen=True, slots=True)
class CaseJob:
    """One case of one candidate."""

    subject: int
    """Index of the candidate in the list given to :func:`run_subjects`."""
    number: int
    """1-based position of the case in its candidate's plan."""
    case: PackCase
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class CaseResult:
    """What a case produced: its record and recording (None when nothing ran)."""

    record: dict[str, Any]
    recording: CaseRecording | None
    where: dict[str, JSONValue] = field(default_factory=dict)
    """Where the case ran, for its ``case_retried``/``case_completed`` event (Ray: the node's
    number in the run, ``ray_node``, and ``ray_rerun_node`` for a sampled case)."""


@dataclass(slots=True)
class Subject:
    """One candidate to evaluate: its name in an audit (None for ``evaluate``), its snapshot
    fingerprint and the backend its cases run on (None when the executor brings its own)."""

    name: str | None
    candidate_sha256: str
    backend: Backend | None = None


@dataclass(frozen=True, slots=True)
class SubjectRun:
    """A candidate's evaluation: the report and the recordings it names, in plan order."""

    report: dict[str, Any]
    recordings: list[tuple[int, str, str]]
    """(seed, case id, recording SHA-256) of every case that has one."""


class Executor(Protocol):
    """Runs case jobs somewhere and hands back their results, in any order."""

    def runtime(self, subject: int) -> dict[str, Any]:
        """The runtime object of a candidate's report."""
        ...

    def params(self) -> dict[str, JSONValue]:
        """How the cases ran, for params.json: what a reader needs to read the timings (how
        many cases ran at once, and where), never an address, a node id or a host name."""
        ...

    def submit(self, job: CaseJob) -> None: ...

    def next_result(self, timeout: float) -> tuple[CaseJob, CaseResult] | None:
        """The next finished job, or None when none finished within ``timeout`` seconds."""
        ...

    def cancel(self) -> None:
        """Stop everything (Ctrl-C or a driver failure): queued jobs never start, running ones
        are stopped and what they made is removed."""
        ...

    def close(self) -> None: ...


# -- the thread executor ---------------------------------------------------------------------


class ThreadExecutor:
    """``jobs`` threads, each case on its candidate's own backend."""

    def __init__(
        self,
        pack: Pack,
        subjects: Sequence[Subject],
        limits: Limits,
        jobs: int,
        *,
        on_start: Callable[[CaseJob], None] | None = None,
        stop_backend: Callable[[Backend], None] | None = None,
    ) -> None:
        self._pack = pack
        self._subjects = subjects
        self._limits = limits
        self._on_start = on_start
        self._stop_backend = stop_backend
        self._done: queue.Queue[tuple[CaseJob, Future[CaseResult]]] = queue.Queue()
        self._futures: list[Future[CaseResult]] = []
        self._cancelled = threading.Event()
        self._jobs = jobs
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="evalarc-case")

    def runtime(self, subject: int) -> dict[str, Any]:
        backend = self._subjects[subject].backend
        assert backend is not None
        return case_runtime(backend, self._limits)

    def params(self) -> dict[str, JSONValue]:
        return {"jobs": self._jobs}

    def submit(self, job: CaseJob) -> None:
        future = self._pool.submit(self._run, job)
        self._futures.append(future)
        future.add_done_callback(lambda done: self._done.put((job, done)))

    def _run(self, job: CaseJob) -> CaseResult:
        if self._cancelled.is_set():
            raise _Cancelled
        if self._on_start is not None:
            self._on_start(job)
        backend = self._subjects[job.subject].backend
        assert backend is not None
        record, recording = run_case(self._pack.grader, backend, job.case, self._limits)
        return CaseResult(record, recording)

    def next_result(self, timeout: float) -> tuple[CaseJob, CaseResult] | None:
        try:
            job, future = self._done.get(timeout=timeout)
        except queue.Empty:
            return None
        return job, future.result()

    def cancel(self) -> None:
        self._cancelled.set()
        for future in self._futures:
            future.cancel()
        deadline = time.monotonic() + CANCEL_GRACE_SECONDS
        while time.monotonic() < deadline and not all(f.done() for f in self._futures):
            time.sleep(0.05)
        if not all(future.done() for future in self._futures) and self._stop_backend:
            for subject in self._subjects:
                if subject.backend is not None:
                    self._stop_backend(subject.backend)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class _Cancelled(Exception):
    """A queued job reached a worker after cancellation."""


class _Interrupted(Exception):
    """A cancelling signal arrived while the executor was running (delivered on exit)."""


# -- the driver ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Tally:
    """Records of one candidate as they come in."""

    records: list[dict[str, Any] | None]
    recordings: list[tuple[int, str, str] | None]
    left: int
    attempts: list[int] = field(default_factory=list)
    failures: list[list[dict[str, Any]]] = field(default_factory=list)
    """Each case's failed attempts: the error and the recording of its fault."""


def bind_attempts(
    report: dict[str, Any],
    retries: int,
    attempts: Sequence[int],
    failures: Sequence[Sequence[dict[str, Any]]],
) -> None:
    """A run with ``retry_infrastructure`` states it in its report, each case's attempts (1
    when it counted at once) and, for a case that ran again, each failed attempt's error with
    the recording of its fault (``failed_attempts``): ``events.jsonl`` may then show only those
    failed attempts with those errors, and a reader of the report sees that cases ran again.
    Without retries the report is unchanged (the same bytes as before this existed). The
    writer and ``verify`` both call this, so the keys come in the same order."""
    if not retries:
        return
    report["retry_infrastructure"] = retries
    for case, count, failed in zip(report["cases"], attempts, failures, strict=True):
        case["attempts"] = count
        if failed:
            case["failed_attempts"] = [dict(item) for item in failed]


def fault_recording(case: PackCase, message: str) -> CaseRecording:
    """A failed attempt's record as a recording: one environment ``fault`` event whose message
    is its error (replayed through the grader, it gives that error back), saved beside the
    recordings so that the error a ``case_retried`` event states is derived from a recorded
    fault, not free text."""
    transcript = Transcript()
    transcript.add("fault", 0, 0.0, message=message, kind="environment")
    return CaseRecording(case.seed, case.case_id, transcript.sha256(), transcript)


@dataclass(slots=True)
class Progress:
    """Stamped events from every thread, in arrival order, forwarded to ``sink``."""

    sink: EventSink | None
    stamp: Callable[[dict[str, Any]], dict[str, Any]]
    events: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def emit(self, event: dict[str, Any]) -> None:
        stamped = self.stamp(event)
        with self.lock:
            self.events.append(stamped)
            if self.sink is not None:
                self.sink(stamped)

    def in_plan_order(self, names: Sequence[str | None]) -> list[dict[str, Any]]:
        """The events as a sequential run would have emitted them (candidates in order; each
        one's start, its cases in plan order with their retries, its end)."""
        position = {name: index for index, name in enumerate(names)}
        phases = {"evaluation_started": 0, "evaluation_completed": 2}
        steps = {"case_started": 0, "case_retried": 1, "case_completed": 2}

        def key(item: tuple[int, dict[str, Any]]) -> tuple[int, int, int, int, int, int]:
            arrival, event = item
            subject = position.get(event.get("control"), 0)
            name = str(event.get("event"))
            if name in phases:
                return (subject, phases[name], 0, 0, 0, arrival)
            number = event.get("case_number")
            attempt = event.get("attempt")
            return (
                subject,
                1,
                number if isinstance(number, int) else 0,
                attempt if isinstance(attempt, int) else 0,
                steps.get(name, 3),
                arrival,
            )

        return [event for _, event in sorted(enumerate(self.events), key=key)]


def run_subjects(
    pack: Pack,
    subjects: Sequence[Subject],
    seeds: Sequence[int],
    executor: Executor,
    progress: Progress,
    *,
    on_recording: Callable[[CaseRecording], str],
    created_at: str,
    retry_infrastructure: int = 0,
) -> list[SubjectRun]:
    """Run every case of every candidate on ``executor``; return each candidate's evaluation.

    ``on_recording`` saves an accepted recording (e.g. into the staged report folder) and
    returns its name; ``created_at`` is every report's creation time. Any exception (Ctrl-C
    included) cancels the executor and propagates: nothing is assembled.
    """
    seed_list = validate_seeds(seeds)
    cases = plan_cases(pack, seed_list)
    total = len(cases)
    names = [subject.name for subject in subjects]

    def tagged(subject: int, event: dict[str, Any]) -> dict[str, Any]:
        name = names[subject]
        return event if name is None else {**event, "control": name}

    tallies = [
        _Tally([None] * total, [None] * total, total, [1] * total, [[] for _ in range(total)])
        for _ in subjects
    ]
    runs: list[SubjectRun | None] = [None] * len(subjects)
    # Ctrl-C, SIGTERM and SIGHUP are held back while the executor runs and polled between
    # results: raised at an arbitrary point of this thread, the KeyboardInterrupt could leave
    # a lock inside the thread pool held, and the pool's shutdown would then wait forever.
    try:
        with signals_held() as interrupted:
            try:
                # Keys in sorted order whatever the executor's: the order a recording keeps,
                # so the report a run writes and the one `verify` replays are the same bytes.
                runtimes = [
                    dict(sorted(executor.runtime(index).items())) for index in range(len(subjects))
                ]
                for index, subject in enumerate(subjects):
                    progress.emit(
                        tagged(
                            index,
                            {
                                "event": "evaluation_started",
                                "task": pack.id,
                                "candidate_sha256": subject.candidate_sha256,
                                "total_cases": total,
                            },
                        )
                    )
                # Case-major, so every candidate advances at the same pace (an infrastructure
                # failure part-way through then touches each of them alike).
                jobs = [
                    CaseJob(index, number, case)
                    for number, case in enumerate(cases, start=1)
                    for index in range(len(subjects))
                ]
                started = time.monotonic()
                for job in jobs:
                    executor.submit(job)
                outstanding = len(jobs)
                while outstanding:
                    if interrupted():
                        raise _Interrupted
                    finished = executor.next_result(POLL_SECONDS)
                    if finished is None:
                        continue
                    job, result = finished
                    tally = tallies[job.subject]
                    status = result.record.get("status")
                    if status == INFRASTRUCTURE and job.attempt <= retry_infrastructure:
                        error = str(result.record.get("error"))
                        fault = on_recording(fault_recording(job.case, error))
                        tally.failures[job.number - 1].append(
                            {"error": error, "recording_sha256": fault}
                        )
                        progress.emit(
                            tagged(
                                job.subject,
                                {
                                    "event": "case_retried",
                                    "task": pack.id,
                                    "seed": job.case.seed,
                                    "case_id": job.case.case_id,
                                    "case_number": job.number,
                                    "total_cases": total,
                                    "attempt": job.attempt,
                                    "error": error,
                                    **result.where,
                                },
                            )
                        )
                        executor.submit(
                            CaseJob(job.subject, job.number, job.case, attempt=job.attempt + 1)
                        )
                        continue
                    outstanding -= 1
                    slot = job.number - 1
                    tally.records[slot] = result.record
                    tally.attempts[slot] = job.attempt
                    if result.recording is not None:
                        name = on_recording(result.recording)
                        tally.recordings[slot] = (job.case.seed, job.case.case_id, name)
                    tally.left -= 1
                    completed = case_completed_event(
                        pack, job.case, job.number, total, result.record
                    )
                    if job.attempt > 1:  # the attempt that counted, after its failed ones
                        completed["attempt"] = job.attempt
                    completed.update(result.where)
                    progress.emit(tagged(job.subject, completed))
                    if tally.left == 0:
                        records = [record for record in tally.records if record is not None]
                        report = evaluation_report(
                            pack,
                            subjects[job.subject].candidate_sha256,
                            runtimes[job.subject],
                            seed_list,
                            cases,
                            records,
                            created_at=created_at,
                            seconds=time.monotonic() - started,
                            replayed=_replayed(subjects[job.subject]),
                        )
                        bind_attempts(report, retry_infrastructure, tally.attempts, tally.failures)
                        runs[job.subject] = SubjectRun(
                            report, [entry for entry in tally.recordings if entry is not None]
                        )
                        progress.emit(tagged(job.subject, evaluation_completed_event(pack, report)))
            except BaseException:
                with suppress(BaseException):
                    executor.cancel()
                raise
            finally:
                executor.close()
    except _Interrupted:
        raise KeyboardInterrupt from None
    done = [run for run in runs if run is not None]
    assert len(done) == len(subjects)
    return done


def _replayed(subject: Subject) -> bool:
    return subject.backend is not None and subject.backend.name == "replay"


def case_started(
    pack: Pack, subjects: Sequence[Subject], total: int, progress: Progress
) -> Callable[[CaseJob], None]:
    """The callback a worker calls as a case starts: a ``case_started`` event."""

    def started(job: CaseJob) -> None:
        event = case_started_event(pack, job.case, job.number, total)
        if job.attempt > 1:
            event["attempt"] = job.attempt
        name = subjects[job.subject].name
        progress.emit(event if name is None else {**event, "control": name})

    return started


def check_jobs(jobs: object) -> int:
    """``--jobs`` must be a whole number from 1 to :data:`MAX_JOBS`."""
    from evalarc.errors import UsageError

    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be between 1 and {MAX_JOBS}, not {jobs!r}")
    return jobs


def check_retries(retries: object) -> int:
    from evalarc.errors import UsageError

    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise UsageError(
            f"--retry-infrastructure must be between 0 and {MAX_RETRIES}, not {retries!r}"
        )
    return retries
