"""``--executor ray``: one Ray task per case on the nodes of a Ray cluster.

Trust boundary: the workers run EvalArc's own code (this package, installed on every node) and
EvalArc's own Docker backend against their node's local engine, but no verdict is taken from
them. Each task returns the case's transcript (and, for the check below, the record it
derived); this host replays the transcript through its own grader, exactly as ``verify`` and
``--backend replay`` do, and accepts only the record it derives itself:

* a transcript that does not replay (divergence) or a worker record that differs from the
  host's is *rejected*: the case becomes an environment failure ("rejected by the host"),
  unassessed, and the evaluation invalid;
* a task whose worker or node dies is never retried by Ray (``max_retries=0``): the case becomes
  an environment failure ("the Ray worker ... was lost"); ``--retry-infrastructure`` may run it
  again, visibly.

Either way the saved recording is what this host replayed (a rejected or lost case is saved as
one environment ``fault`` event), so ``verify`` re-derives the same record from the folder.

A worker could still send a transcript that replays but is not its case's (another
candidate's: the transcript holds no identity a liar could not forge). So this host chooses
each task's node (hard node affinity: the node recorded for a case, ``ray_node`` in its event,
is where it was sent, not what a worker claims), and re-runs a sample of cases on a second
node (:func:`sampled_cases`, drawn with a seed no worker sees until the run ends): a re-run
whose transcript differs from the first, timings apart, voids the whole run
(:class:`EnvironmentFailure`, exit 2). The host bounds what a worker can cost it: a task's
answer is a small header and the transcript as two objects whose sizes are read from Ray
before either is fetched, and a task past its deadline (the case deadline, the start-up and
:data:`TASK_GRACE_SECONDS`) is force-cancelled and its case an environment failure.

Before any case runs, every node that declares the :data:`SLOT_RESOURCE` resource is probed:
its EvalArc version, the pack's grader fingerprint and the runtime object its Docker backend
reports (image id, limits, command, Python, OS, architecture) must equal this host's, or the run
is refused with a message naming the node. Each candidate snapshot is put into Ray's object
store once and its fingerprint is checked again on the node that unpacks it. A node keeps one
copy per snapshot, held (a shared lock) by each case running from it; sweeps remove a run's
copies when it ends, and any copy no case has used for :data:`COPY_IDLE_SECONDS` (a killed
driver's), but never a held one.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import secrets
import shutil
import signal
import tarfile
import tempfile
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc import __version__
from evalarc.cancel import CANCELLING_SIGNALS
from evalarc.canonical import JSONValue, sha256_text
from evalarc.errors import EnvironmentFailure, EvalArcError, InputError
from evalarc.packs import (
    CaseRecording,
    Pack,
    PackCase,
    grader_sha256,
    load_pack,
    plan_cases,
    run_case,
)
from evalarc.runtime.protocol import Limits, Transcript
from evalarc.runtime.recording import RecordingIndex, RunKey, parse_recording, runtime_fingerprint
from evalarc.runtime.replay import RecordingStore, ReplayBackend
from evalarc.runtime.snapshot import Snapshot, snapshot_candidate
from evalarc.schedule import INFRASTRUCTURE, CaseJob, CaseResult

SLOT_RESOURCE = "evalarc_slot"
"""The custom resource a node declares (``ray start --resources '{"evalarc_slot": N}'``) to run
N EvalArc cases at once; a case task asks for one."""
LOST = "the Ray worker running this case was lost"
REJECTED = "rejected by the host"
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 1024 * 1024
"""The most a task's header (record, timing, snapshot, size) may take in Ray's object store;
both objects' sizes are read from Ray before either is fetched."""
OVERDUE = "the Ray task of this case ran past its deadline"
TASK_GRACE_SECONDS = 120.0
"""Beyond the case deadline and its start-up: unpacking the snapshot, Ray's scheduling."""
DEFAULT_VERIFY_SAMPLE = 4
"""Cases of a run re-run on a second node by default (``--ray-verify-sample``)."""
MAX_VERIFY_SAMPLE = 100_000
RAY_HINT = "--executor ray needs Ray on this machine and on every node: pip install 'evalarc[ray]'"
PROBE_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class RaySubject:
    snapshot: Snapshot


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EnvironmentFailure(RAY_HINT) from None
    return ray


# -- what runs on a node ---------------------------------------------------------------------


def snapshot_blob(snapshot: Snapshot) -> bytes:
    """The snapshot's files as an uncompressed tar (what goes once into the object store)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(snapshot.path.rglob("*")):
            if path.is_file() and not path.is_symlink():
                info = tarfile.TarInfo(path.relative_to(snapshot.path).as_posix())
                data = path.read_bytes()
                info.size = len(data)
                info.mode = path.stat().st_mode & 0o777
                info.mtime = 0
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def unpack_snapshot(blob: bytes, sha256: str, default_command: list[str], root: Path) -> Snapshot:
    """Unpack a snapshot blob under ``root`` (once per node and fingerprint) and prove that it
    is the candidate the host fingerprinted."""
    final = copy_folder(root, sha256)
    if (final / "snapshot").is_dir():
        # Several workers of a node may check the cached copy at once: each in its own folder.
        check = Path(tempfile.mkdtemp(prefix=f"evalarc-worker-check-{sha256[:32]}-", dir=root))
        try:
            snapshot = snapshot_candidate(final / "snapshot", check / "copy", default_command)
        finally:
            shutil.rmtree(check, ignore_errors=True)
        if snapshot.sha256 == sha256:
            (final / LOCK_FILE).touch()  # a copy made before copies were held (none then)
            return _moved(snapshot, final / "snapshot")
        shutil.rmtree(final, ignore_errors=True)
    # Named by the snapshot, so a sweep finds it when a cancelled worker was killed mid-unpack.
    staging = Path(tempfile.mkdtemp(prefix=f"evalarc-worker-unpack-{sha256[:32]}-", dir=root))
    try:
        files = staging / "files"
        files.mkdir()
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as archive:
            archive.extractall(files, filter="data")
        snapshot = snapshot_candidate(files, staging / "snapshot", default_command)
        if snapshot.sha256 != sha256:
            raise EnvironmentFailure(
                f"the candidate snapshot arrived as {snapshot.sha256[:12]}, not {sha256[:12]}"
            )
        shutil.rmtree(files)
        (staging / LOCK_FILE).touch()
        try:
            staging.rename(final)
        except OSError:  # another worker of this node unpacked it first
            shutil.rmtree(staging, ignore_errors=True)
        return _moved(snapshot, final / "snapshot")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def copy_folder(root: Path, sha256: str) -> Path:
    """Where a node keeps its copy of a snapshot (``snapshot/``, beside :data:`LOCK_FILE`)."""
    return root / f"{COPY_PREFIX}{sha256[:32]}"


def hold_copy(root: Path, sha256: str) -> int | None:
    """A shared lock on this node's copy of a snapshot, held while a case runs from it so that
    no sweep removes it meanwhile (the lock ends with the process, whatever kills it); None
    when there is no copy, or a sweep removed it while this waited. Marks the copy used now."""
    lock = copy_folder(root, sha256) / LOCK_FILE
    try:
        descriptor = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        held, current = os.fstat(descriptor), os.stat(lock, follow_symlinks=False)
        if (held.st_dev, held.st_ino) != (current.st_dev, current.st_ino):
            raise FileNotFoundError(lock)  # swept and made again: hold the new one
        os.utime(lock, follow_symlinks=False)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def _moved(snapshot: Snapshot, path: Path) -> Snapshot:
    return Snapshot(
        path, snapshot.sha256, snapshot.files, snapshot.bytes, snapshot.command, snapshot.manifest
    )


def node_probe(task: str, image: str, limits: Limits, command: list[str]) -> dict[str, Any]:
    """What a node would run cases with (the host compares it with its own)."""
    from evalarc.runtime.docker_backend import DockerBackend

    pack = load_pack(task)
    work = Path(tempfile.mkdtemp(prefix="evalarc-worker-probe-"))
    try:
        backend = DockerBackend(work, command, limits, work, image=image)
        try:
            runtime = backend.runtime()
        finally:
            backend.client.close()
    except EnvironmentFailure as error:
        return {"error": error.message}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "evalarc_version": __version__,
        "grader_sha256": grader_sha256(pack),
        "runtime": runtime,
    }


_BACKENDS: OrderedDict[tuple[str, str], Any] = OrderedDict()
"""Docker backends of each worker process by (snapshot, image), most recently used last (Ray
reuses a worker for many cases, so a candidate's backend is made once per worker)."""
MAX_BACKENDS = 8
"""Backends a worker keeps: a sweep over thousands of candidates must not make each worker
hold thousands of engine clients."""
CANCEL_WAIT_SECONDS = 15.0
"""How long a cancel waits for force-cancelled case tasks to end before sweeping the nodes."""
COPY_PREFIX = "evalarc-worker-"
"""The folders a node keeps under its temporary folder: ``<sha>`` copies of snapshots, and
``unpack-``, ``check-``, ``probe-`` and ``trash-`` work folders."""
LOCK_FILE = "in-use.lock"
"""Beside a copy's ``snapshot/``: each case running from the copy holds a shared lock on it."""
COPY_IDLE_SECONDS = 600.0
"""A node's snapshot copy that no case has used for this long is removed by any sweep (the
copies of a run whose driver was killed, which could not remove them itself)."""


def run_case_on_node(
    task: str,
    blob: bytes,
    sha256: str,
    seed: int,
    case_id: str,
    limits: Limits,
    image: str,
) -> tuple[dict[str, Any], str]:
    """Run one case with EvalArc's Docker backend on this node; return a small header (the
    worker's record, its timing, the snapshot it ran and the transcript's size) and the
    transcript, as two objects: the host checks the transcript's stored size before it fetches
    it (:data:`MAX_TRANSCRIPT_BYTES`)."""
    from evalarc.runtime.docker_backend import DockerBackend

    pack = load_pack(task)
    started = time.monotonic()
    root = Path(tempfile.gettempdir())
    snapshot: Snapshot | None = None
    held = hold_copy(root, sha256)
    for _ in range(3):
        if held is not None:
            break
        snapshot = unpack_snapshot(blob, sha256, list(pack.default_command), root)
        held = hold_copy(root, sha256)
    if held is None:
        raise EnvironmentFailure("this node's copy of the candidate vanished as it was unpacked")
    try:
        key = (sha256, image)
        backend = _BACKENDS.pop(key, None)
        if backend is None:
            if snapshot is None:  # a copy another worker made: check it before trusting it
                snapshot = unpack_snapshot(blob, sha256, list(pack.default_command), root)
            backend = DockerBackend(snapshot.path, snapshot.command, limits, root, image=image)
        _BACKENDS[key] = backend
        while len(_BACKENDS) > MAX_BACKENDS:
            _, oldest = _BACKENDS.popitem(last=False)
            oldest.client.close()  # a worker runs one task at a time: nobody else uses it now
        cases = [case for case in pack.grader.generate_cases(seed) if case.case_id == case_id]
        if len(cases) != 1:
            raise EnvironmentFailure(f"no case {seed}/{case_id} in {task}")
        record, recording = run_case(pack.grader, backend, cases[0], limits)
    finally:
        os.close(held)
    transcript = recording.transcript.jsonl() if recording is not None else ""
    return {
        "record": record,
        "duration_seconds": time.monotonic() - started,
        "candidate_sha256": sha256,
        "transcript_bytes": len(transcript),
    }, transcript


def sweep_node(snapshots: Sequence[str] = (), idle_seconds: float = COPY_IDLE_SECONDS) -> int:
    """Remove leftovers from this node: containers of dead owners (workers killed mid-case),
    the copies of ``snapshots`` (the run that ends) and of any snapshot no case has used for
    ``idle_seconds`` (a run whose driver was killed), and unpack, check or probe folders of
    workers killed meanwhile. A copy a case holds (:func:`hold_copy`) is never removed.
    Return how many containers were removed."""
    from evalarc.runtime.docker_backend import connect, sweep_containers

    root = Path(tempfile.gettempdir())
    ending = {sha256[:32] for sha256 in snapshots}
    now = time.time()
    for entry in sorted(root.glob(f"{COPY_PREFIX}*")):
        name = entry.name.removeprefix(COPY_PREFIX)
        stage, _, rest = name.partition("-")
        if stage == "trash":
            shutil.rmtree(entry, ignore_errors=True)
        elif stage in ("unpack", "check", "probe"):
            if rest[:32] in ending or _idle(entry, now, idle_seconds):
                shutil.rmtree(entry, ignore_errors=True)
        elif len(name) == 32:
            _remove_copy(entry, name in ending, now, idle_seconds)
    client = connect()
    try:
        return sweep_containers(client)
    finally:
        client.close()


def _idle(path: Path, now: float, idle_seconds: float) -> bool:
    try:
        return now - path.lstat().st_mtime >= idle_seconds
    except OSError:
        return False


def _remove_copy(folder: Path, ending: bool, now: float, idle_seconds: float) -> None:
    """Remove a snapshot copy unless a case holds it, or it was used within ``idle_seconds``
    and its run is not ``ending``. It is renamed away under an exclusive lock, so a worker
    waiting to hold it finds it gone and unpacks a new one."""
    lock = folder / LOCK_FILE
    try:
        descriptor: int | None = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        descriptor = None
    except OSError:
        return
    trash = folder.with_name(f"{COPY_PREFIX}trash-{secrets.token_hex(8)}")
    try:
        if descriptor is not None:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # a case runs from it
        used = folder / LOCK_FILE if descriptor is not None else folder
        if not ending and not _idle(used, now, idle_seconds):
            return
        try:
            folder.rename(trash)
        except OSError:
            return
    finally:
        if descriptor is not None:
            os.close(descriptor)
    shutil.rmtree(trash, ignore_errors=True)


# -- the host side ---------------------------------------------------------------------------


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """Keep this process's handlers of the cancelling signals across ``ray.init``, which sets
    its own SIGTERM handler (``sys.exit(15)``): a SIGTERM must cancel the run like Ctrl-C (exit
    130, nothing published), not end it with status 15."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {number: signal.getsignal(number) for number in CANCELLING_SIGNALS}
    try:
        yield
    finally:
        for number, handler in kept.items():
            if handler is not None:
                signal.signal(number, handler)


@dataclass(slots=True)
class _Task:
    """A case task in flight: the job, the node this host sent it to, and for the re-run of
    a sampled case, the first run it checks and the result held until it agrees."""

    job: CaseJob
    node: str
    checks: _Task | None = None
    held: CaseResult | None = None
    body: Any = None
    deadline: float = 0.0


def sampled_cases(
    seed: str, size: int, candidates: Sequence[str], cases: Sequence[tuple[int, str]]
) -> set[tuple[int, int]]:
    """The (candidate index, 1-based case number) pairs a run re-runs on a second node: the
    ``size`` pairs whose SHA-256 of (``seed``, candidate snapshot, case seed, case id) is
    least. ``seed`` is drawn by the host and recorded only in params.json when the run
    ends, so anyone can recompute the sample afterwards but no worker can know it before it
    answers."""
    ranked = sorted(
        (
            sha256_text(f"{seed}\n{candidate}\n{case_seed}\n{case_id}"),
            index,
            number,
        )
        for index, candidate in enumerate(candidates)
        for number, (case_seed, case_id) in enumerate(cases, start=1)
    )
    return {(index, number) for _, index, number in ranked[:size]}


def _untimed(text: str) -> list[dict[str, Any]] | None:
    """A transcript's events without their times (what two honest runs of a case share), or
    None when it is not a transcript."""
    try:
        transcript = parse_recording(text.encode("ascii"), Path("re-run"))
    except (InputError, UnicodeEncodeError):
        return None
    return [{k: v for k, v in event.items() if k != "t"} for event in transcript.events]


def check_verify_sample(size: object) -> int:
    """``--ray-verify-sample`` is a whole number from 0 to :data:`MAX_VERIFY_SAMPLE`."""
    from evalarc.errors import UsageError

    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_VERIFY_SAMPLE:
        raise UsageError(
            f"--ray-verify-sample must be between 0 and {MAX_VERIFY_SAMPLE}, not {size!r}"
        )
    return size


def _fault_transcript(message: str) -> Transcript:
    transcript = Transcript()
    transcript.add("fault", 0, 0.0, message=message, kind="environment")
    return transcript


class RayExecutor:
    """Case jobs as Ray tasks; every record re-derived on this host (see the module doc)."""

    def __init__(
        self,
        pack: Pack,
        subjects: Sequence[RaySubject],
        limits: Limits,
        *,
        image: str,
        address: str | None,
        seeds: Sequence[int],
        verify_sample: int | None = None,
        on_start: Callable[[CaseJob], None] | None = None,
    ) -> None:
        self._ray = ray = _import_ray()
        self._pack = pack
        self._subjects = subjects
        self._limits = limits
        self._image = image
        self._on_start = on_start
        self._pending: dict[Any, _Task] = {}
        self._queued: deque[CaseJob] = deque()
        self._checks: deque[_Task] = deque()
        """Sampled cases waiting for their re-run (each holds the accepted result)."""
        self._failed_on: dict[tuple[int, int], str] = {}
        """The node each case's last failed attempt ran on (a retry avoids it)."""
        self.slots = 0
        """The slot nodes' EvalArc slots when the run started (cases they run at once)."""
        self.window = 0
        """Cases handed to Ray at once: the slots of the cluster (one task per slot, so that a
        task's deadline runs from when it was handed over)."""
        self._rejections: list[str] = []
        self._lost: list[str] = []
        self._started_here = False
        self._grader = grader_sha256(pack)
        self.sample_seed = secrets.token_hex(16)
        """Chooses the sampled cases: drawn here, never sent to a worker, recorded when the
        run ends (so a worker cannot know which of its answers will be checked)."""
        self.verify_sample = DEFAULT_VERIFY_SAMPLE if verify_sample is None else verify_sample
        self._sampled = sampled_cases(
            self.sample_seed,
            self.verify_sample,
            [subject.snapshot.sha256 for subject in subjects],
            [(case.seed, case.case_id) for case in plan_cases(pack, list(seeds))],
        )
        self.task_deadline = limits.case_timeout + limits.startup_timeout + TASK_GRACE_SECONDS
        """Seconds a case task may run before it is cancelled (an environment failure)."""
        try:
            if not ray.is_initialized():
                self._connect(address)
            slots = self._slot_nodes()
            self._nodes = sorted(slots)
            self._node_slots = slots
            self._alive = set(self._nodes)
            self._busy = dict.fromkeys(self._nodes, 0)
            self.slots = sum(slots.values())
            self.window = self.slots
            self._runtime = self._check_nodes(pack, subjects)
            self._remote_case = ray.remote(run_case_on_node)
            self._blobs = [ray.put(snapshot_blob(subject.snapshot)) for subject in subjects]
        except BaseException:
            self.close()
            raise

    # -- set-up -------------------------------------------------------------------------------

    def _connect(self, address: str | None) -> None:
        target = address or os.environ.get("RAY_ADDRESS") or None
        try:
            with _signal_handlers_kept():
                self._init(target)
        except Exception as error:  # Ray raises many kinds (ConnectionError, RuntimeError ...)
            raise EnvironmentFailure(
                f"cannot join the Ray cluster {target or '(a new local one)'}: "
                f"{str(error).splitlines()[0] if str(error) else type(error).__name__}"
            ) from None

    def _init(self, target: str | None) -> None:
        ray = self._ray
        if target is not None:
            ray.init(address=target, log_to_driver=False, configure_logging=False)
            return
        from evalarc.schedule import default_jobs

        ray.init(
            resources={SLOT_RESOURCE: default_jobs()},
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            configure_logging=False,
        )
        self._started_here = True

    def _slot_nodes(self) -> dict[str, int]:
        """The live nodes that declare :data:`SLOT_RESOURCE`, with their slots."""
        nodes = {
            str(node["NodeID"]): int(node.get("Resources", {}).get(SLOT_RESOURCE, 0))
            for node in self._ray.nodes()
            if node.get("Alive")
        }
        slots = {node: count for node, count in nodes.items() if count >= 1}
        if not slots:
            raise EnvironmentFailure(
                f"no node of the Ray cluster declares the resource {SLOT_RESOURCE}: start the "
                f"nodes that run cases with ray start --resources '{{\"{SLOT_RESOURCE}\": N}}'"
            )
        return slots

    def _check_nodes(self, pack: Pack, subjects: Sequence[RaySubject]) -> dict[str, Any]:
        """Probe every slot node; refuse the run unless all match this host."""
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        command = list(subjects[0].snapshot.command)
        probe = ray.remote(node_probe)
        refs = {
            node: probe.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(pack.id, self._image, self._limits, command)
            for node in self._nodes
        }
        try:
            answers = {node: ray.get(ref, timeout=PROBE_TIMEOUT) for node, ref in refs.items()}
        except Exception as error:
            raise EnvironmentFailure(
                f"a Ray node did not answer the EvalArc probe: {type(error).__name__}"
            ) from None
        expected: dict[str, Any] | None = None
        local = self._local_runtime(command)
        for node, answer in answers.items():
            name = node[:12]
            if "error" in answer:
                raise EnvironmentFailure(f"Ray node {name} cannot run cases: {answer['error']}")
            if answer.get("evalarc_version") != __version__:
                raise EnvironmentFailure(
                    f"Ray node {name} runs EvalArc {answer.get('evalarc_version')}, this host "
                    f"{__version__}: install the same version on every node"
                )
            if answer.get("grader_sha256") != self._grader:
                raise EnvironmentFailure(
                    f"Ray node {name} has grader {str(answer.get('grader_sha256'))[:12]} for "
                    f"{pack.id}, this host {self._grader[:12]}: install the same packs everywhere"
                )
            runtime = answer.get("runtime")
            if not isinstance(runtime, dict):
                raise EnvironmentFailure(f"Ray node {name} sent no runtime")
            reference = expected or local or runtime
            if runtime != reference:
                keys = sorted(
                    key
                    for key in set(runtime) | set(reference)
                    if runtime.get(key) != reference.get(key)
                )
                raise EnvironmentFailure(
                    f"Ray node {name} would run cases under another runtime ({', '.join(keys)} "
                    f"differ, e.g. image id {str(runtime.get('image_id'))[:19]}): every node "
                    "needs the same image, Python, OS and architecture"
                )
            expected = runtime
        assert expected is not None
        return expected

    def _local_runtime(self, command: list[str]) -> dict[str, Any] | None:
        """This host's own runtime when it has the engine and the image (else the nodes')."""
        answer = node_probe(self._pack.id, self._image, self._limits, command)
        runtime = answer.get("runtime")
        return runtime if isinstance(runtime, dict) else None

    # -- the Executor protocol ----------------------------------------------------------------

    def runtime(self, subject: int) -> dict[str, Any]:
        del subject
        runtime = dict(self._runtime)
        for name, value in self._limits.to_json().items():
            runtime.setdefault(name, value)
        return dict(sorted(runtime.items()))

    def params(self) -> dict[str, Any]:
        """How many slot nodes passed the probe and how many slots they declared (cases at
        once), counted when the run started, and the sample of cases re-run on a second node
        (its size and the seed that chose it, :func:`sampled_cases`); which nodes they were is
        never recorded."""
        return {
            "executor": "ray",
            "ray_nodes": len(self._nodes),
            "ray_slots": self.slots,
            "ray_verify_sample": self.verify_sample,
            "ray_sample_seed": self.sample_seed,
        }

    def node_number(self, node: str) -> int:
        """A node's number in this run (1 = the first slot node by Ray node id)."""
        return self._nodes.index(node) + 1

    def submit(self, job: CaseJob) -> None:
        """Queue a case; at most :attr:`window` cases are handed to Ray at once, so the driver's
        bookkeeping stays bounded however many cases a sweep has."""
        self._queued.append(job)
        self._top_up()

    def _free_node(self, avoid: str | None = None) -> str | None:
        """The live node with a free slot that is least busy (``avoid`` only when no other
        node lives): this host, not Ray, chooses where each case runs, so it knows which node
        answered."""
        nodes = [node for node in self._nodes if node in self._alive]
        others = [node for node in nodes if node != avoid] or nodes
        free = [node for node in others if self._busy[node] < self._node_slots[node]]
        if not free:
            return None
        return min(free, key=lambda node: (self._busy[node] / self._node_slots[node], node))

    def _launch(self, task: _Task) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        subject = self._subjects[task.job.subject]
        header, body = self._remote_case.options(
            num_cpus=0,
            num_returns=2,
            resources={SLOT_RESOURCE: 1},
            max_retries=0,
            retry_exceptions=False,
            scheduling_strategy=NodeAffinitySchedulingStrategy(task.node, soft=False),
        ).remote(
            self._pack.id,
            self._blobs[task.job.subject],
            subject.snapshot.sha256,
            task.job.case.seed,
            task.job.case.case_id,
            self._limits,
            self._image,
        )
        task.body = body
        task.deadline = time.monotonic() + self.task_deadline
        self._busy[task.node] += 1
        self._pending[header] = task

    def _top_up(self) -> None:
        while self._checks:
            node = self._free_node(
                avoid=self._checks[0].checks.node if self._checks[0].checks else None
            )
            if node is None:
                return
            check = self._checks.popleft()
            check.node = node
            self._launch(check)
        while self._queued:
            # A retried case goes to another node than the one its last attempt failed on.
            node = self._free_node(
                self._failed_on.get((self._queued[0].subject, self._queued[0].number))
            )
            if node is None:
                if not self._alive:
                    raise EnvironmentFailure("no slot node of the Ray cluster is left")
                return
            job = self._queued.popleft()
            self._launch(_Task(job, node))
            if self._on_start is not None:
                self._on_start(job)

    def next_result(self, timeout: float) -> tuple[CaseJob, CaseResult] | None:
        self._top_up()
        if not self._pending:
            time.sleep(timeout)
            return None
        now = time.monotonic()
        overdue = [ref for ref, task in self._pending.items() if task.deadline <= now]
        if overdue:
            return self._overdue(overdue[0])
        wait = min(timeout, max(0.0, min(task.deadline for task in self._pending.values()) - now))
        ready, _ = self._ray.wait(list(self._pending), num_returns=1, timeout=wait)
        if not ready:
            return None
        ref = ready[0]
        task = self._pending.pop(ref)
        self._busy[task.node] -= 1
        answer = self._fetch(ref, task)
        if isinstance(answer, str):  # the task failed: its worker, its node or its object lost
            self._refresh_alive()
            return self._failed(task, answer)
        if task.checks is not None:
            return self._compare(task, answer)
        result = self._accept(task, answer)
        key = (task.job.subject, task.job.number)
        if key in self._sampled and result.record.get("status") != INFRASTRUCTURE:
            # Every accepted attempt of a sampled case is re-run (a retried one too).
            self._checks.append(_Task(task.job, task.node, checks=task, held=result))
            self._top_up()
            return None
        return task.job, self._where(result, task.node)

    def _where(self, result: CaseResult, node: str, rerun: str | None = None) -> CaseResult:
        """The result with the node that ran it (and re-ran it, when sampled), by number."""
        where: dict[str, JSONValue] = {"ray_node": self.node_number(node)}
        if rerun is not None:
            where["ray_rerun_node"] = self.node_number(rerun)
        return CaseResult(result.record, result.recording, where)

    def _overdue(self, ref: Any) -> tuple[CaseJob, CaseResult] | None:
        """A task past its deadline: cancel it (the worker is killed) and make its case an
        environment failure."""
        task = self._pending.pop(ref)
        self._busy[task.node] -= 1
        with contextlib.suppress(Exception):
            self._ray.cancel(ref, force=True)
        return self._failed(
            task,
            f"{OVERDUE} ({self.task_deadline:g} s: the case deadline, start-up and grace) "
            "and was cancelled",
        )

    def _failed(self, task: _Task, message: str) -> tuple[CaseJob, CaseResult] | None:
        """A task that brought no answer: its case (or the sampled case it re-ran) becomes an
        environment failure of this attempt."""
        job = task.job
        label = f"{job.case.seed}/{job.case.case_id}"
        self._lost.append(f"case {label}: {message}")
        self._failed_on[(job.subject, job.number)] = task.node
        node = task.checks.node if task.checks is not None else task.node
        return job, self._where(self._derive(job, _fault_transcript(message), None, None), node)

    def _compare(
        self, task: _Task, answer: tuple[dict[str, Any], str]
    ) -> tuple[CaseJob, CaseResult]:
        """A sampled case's re-run on another node: its transcript, timings apart, must be the
        one the first node sent, or the whole run is void (one of the two nodes lied or runs
        something else)."""
        first = task.checks
        assert first is not None and task.held is not None
        job = task.job
        label = f"{job.case.seed}/{job.case.case_id}"
        again = _untimed(answer[1])
        held = task.held.recording
        assert held is not None
        if again is None or again != _untimed(held.transcript.jsonl()):
            candidate = self._subjects[job.subject].snapshot.sha256[:12]
            raise EnvironmentFailure(
                f"case {label} of candidate {candidate}: the transcript Ray node "
                f"{first.node[:12]} sent differs from the re-run on node {task.node[:12]} "
                "(a node lied or runs something else): the run is void"
            )
        return job, self._where(task.held, first.node, task.node)

    def _refresh_alive(self) -> None:
        with contextlib.suppress(Exception):
            alive = {node["NodeID"] for node in self._ray.nodes() if node.get("Alive")}
            self._alive = {node for node in self._nodes if node in alive}

    def _fetch(self, ref: Any, task: _Task) -> tuple[dict[str, Any], str] | str:
        """The worker's answer, its size checked from Ray's record of each object before the
        object is fetched; a failure message when the task failed."""
        ray = self._ray
        try:
            locations = ray.experimental.get_object_locations([ref, task.body], timeout_ms=60_000)
            sizes = [locations.get(item, {}).get("object_size") for item in (ref, task.body)]
        except Exception:
            sizes = [None, None]
        try:
            if isinstance(sizes[0], int) and sizes[0] > MAX_HEADER_BYTES:
                return f"{REJECTED}: the worker's answer is {sizes[0]} bytes"
            header = ray.get(ref)
            if not isinstance(sizes[1], int):
                return f"{REJECTED}: Ray does not know the size of the worker's transcript"
            if sizes[1] > MAX_TRANSCRIPT_BYTES + 1024:
                return (
                    f"{REJECTED}: the transcript is {sizes[1]} bytes, more than a recording "
                    f"may be ({MAX_TRANSCRIPT_BYTES}); not fetched"
                )
            body = ray.get(task.body)
        except Exception as error:  # the worker, its node or the object was lost
            cause = getattr(error, "cause", None)
            if isinstance(cause, EvalArcError):
                return f"the Ray worker could not run this case: {cause.message}"
            return f"{LOST} ({type(error).__name__})"
        finally:
            task.body = None
        if not isinstance(header, dict) or not isinstance(body, str):
            return f"{REJECTED}: the worker's answer is not a transcript"
        return header, body

    def cancel(self) -> None:
        self._queued.clear()
        self._checks.clear()
        refs = list(self._pending)
        for ref in refs:
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)
        self._pending.clear()
        # A forced cancel kills the worker asynchronously: wait (bounded) until the killed tasks
        # have ended, so the sweep does not race a worker still unpacking or starting a case.
        with contextlib.suppress(Exception):
            self._ray.wait(refs, num_returns=len(refs), timeout=CANCEL_WAIT_SECONDS)
        self.sweep()

    def sweep(self) -> None:
        """On every live slot node: remove containers of dead owners (workers killed
        mid-case) and the node's copies of this run's snapshots."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        sweeper = ray.remote(sweep_node)
        alive = {node["NodeID"] for node in ray.nodes() if node.get("Alive")}
        refs = [
            sweeper.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote([subject.snapshot.sha256 for subject in self._subjects])
            for node in getattr(self, "_nodes", [])
            if node in alive
        ]
        with contextlib.suppress(Exception):
            ray.get(refs, timeout=60)

    def close(self) -> None:
        if self._ray.is_initialized() and hasattr(self, "_nodes"):
            self.sweep()
        if self._started_here:
            self._ray.shutdown()

    def notes(self) -> list[str]:
        """One line per rejected transcript and per lost case attempt (each made that attempt
        an environment failure; a retried case may have passed on a later attempt)."""
        return [*self._rejections, *self._lost]

    # -- re-deriving every verdict ------------------------------------------------------------

    def _accept(self, task: _Task, answer: tuple[dict[str, Any], str]) -> CaseResult:
        job = task.job
        label = f"{job.case.seed}/{job.case.case_id}"
        header, text = answer
        candidate = self._subjects[job.subject].snapshot.sha256
        if header.get("candidate_sha256") != candidate:
            # A worker's own claim: it catches a node that ran the wrong copy, not a liar
            # (who names the right snapshot); the sample catches those.
            return self._reject(
                job,
                f"the worker ran candidate {str(header.get('candidate_sha256'))[:12]}, "
                f"not {candidate[:12]}",
            )
        if len(text) > MAX_TRANSCRIPT_BYTES:
            return self._reject(job, "the transcript is larger than a recording may be")
        try:
            transcript = parse_recording(text.encode("ascii"), Path(label))
        except (InputError, UnicodeEncodeError) as error:
            message = error.message if isinstance(error, InputError) else "not ASCII"
            return self._reject(job, f"the transcript is malformed ({message})")
        if not transcript.events:
            return self._reject(job, "the worker recorded nothing")
        return self._derive(job, transcript, header.get("duration_seconds"), header.get("record"))

    def _reject(self, job: CaseJob, why: str) -> CaseResult:
        label = f"{job.case.seed}/{job.case.case_id}"
        self._rejections.append(f"{REJECTED}: case {label}: {why}")
        return self._derive(job, _fault_transcript(f"{REJECTED}: {why}"), None, None)

    def _derive(
        self,
        job: CaseJob,
        transcript: Transcript,
        duration: object,
        worker_record: object,
    ) -> CaseResult:
        """Replay ``transcript`` through this host's grader; the record is the host's own."""
        subject = self._subjects[job.subject]
        record, recording, divergences = rederive(
            self._pack,
            self._grader,
            subject.snapshot.sha256,
            self.runtime(job.subject),
            self._limits,
            job.case,
            transcript,
        )
        if divergences:
            return self._reject(job, divergences[0])
        if worker_record is not None and _without_timing(worker_record) != _without_timing(record):
            return self._reject(
                job,
                "the worker's record contradicts the transcript it sent (status "
                f"{_status(worker_record)} against the host's {record.get('status')})",
            )
        if (
            isinstance(duration, int | float)
            and not isinstance(duration, bool)
            and 0 <= duration < 1e9
        ):
            record["duration_seconds"] = round(max(float(duration), 0.0), 6)
        return CaseResult(record, recording)


def rederive(
    pack: Pack,
    grader: str,
    candidate_sha256: str,
    runtime: dict[str, Any],
    limits: Limits,
    case: PackCase,
    transcript: Transcript,
) -> tuple[dict[str, Any], CaseRecording | None, list[str]]:
    """Replay one case's transcript through this host's grader (as ``verify`` does): the
    record and recording this host derives, and why the transcript does not replay (empty
    when it does). ``grader`` is the pack's grader fingerprint."""
    runtime_sha256 = runtime_fingerprint(runtime)
    pack_key = f"{pack.id}@{pack.version}"
    text = transcript.jsonl()
    name = sha256_text(text)
    index = RecordingIndex()
    key = RunKey(candidate_sha256, pack_key, grader, case.seed, case.case_id, runtime_sha256)
    index.runtimes[runtime_sha256] = runtime
    if transcript.events:
        index.add(key, name)
    data = text.encode("ascii")
    store = RecordingStore(
        index, "the worker's transcript", lambda wanted: data if wanted == name else None
    )
    backend = ReplayBackend(
        store,
        candidate_sha256=candidate_sha256,
        pack=pack_key,
        grader_sha256=grader,
        runtime_sha256=runtime_sha256,
        limits=limits,
    )
    record, recording = run_case(pack.grader, backend, case, limits)
    return record, recording, [divergence.message for divergence in backend.divergences]


def _without_timing(record: object) -> object:
    if not isinstance(record, dict):
        return record
    return {key: value for key, value in record.items() if key != "duration_seconds"}


def _status(record: object) -> str:
    return str(record.get("status")) if isinstance(record, dict) else "?"
