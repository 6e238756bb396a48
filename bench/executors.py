"""The durable-kv audit under each executor, beside the bare-exec floor (one run).

Measures, in one run, the wall time of the durable-kv audit (the reference and its 8 declared
faults; seeds 17 41 97 by default: 9 x 45 = 405 cases):

* **sequential**: every control's cases one after another (:func:`evalarc.packs.evaluate` per
  control, as before case-granular scheduling);
* **--jobs 1 / 2 / 4**: case-granular scheduling on this machine's thread pool;
* **ray 1 node / 3 nodes**: ``--executor ray`` on a local ``ray.cluster_utils.Cluster`` (each
  node declaring ``evalarc_slot`` = the core count), run in a network namespace of its own
  (``unshare -n``, loopback only) with Ray's token authentication;
* **floor**: the same Docker work with no EvalArc code in the loop (:func:`floor_case`, the
  docker SDK's low-level calls only): for every case of every control, in the order the
  scheduler queues them, a container of the same image with the same sandbox options, and per
  session one exec of the same command as the same user, sent the same request lines as the
  audit sent (read from the bundled recordings through a replay audit), each response line
  awaited, then EOF and the exit, or a ``kill -9 -1`` exec where the audit killed the session;
  the container removed at the end. Run at the core count's parallelism (what ``--jobs`` at the
  core count runs), once before and once after the audits, averaged. What EvalArc adds on top
  is its own work: the readiness prelude, the reaper between sessions, grading, recording,
  events and the report folder.

Besides the wall times it prints the host-side cost per case of ``--executor ray``'s acceptance
step (parse a worker's transcript, replay it through the grader), measured on one thread over
the ``--jobs`` audit's recordings: what bounds one driver's throughput on many nodes.

Targets: ``--jobs`` at the core count <= 1.2 x floor; Ray on one node <= 1.5 x ``--jobs``. The
machine may be shared: the 1-minute load average is printed beside every figure.

    python bench/executors.py [--image evalarc-python:local] [--seeds 17 41 97] [--skip-ray]

Needs the engine and the image (scripts/docker_setup.sh); the Ray rows need the ray extra,
``unshare`` and ``ip`` (root).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import docker

from evalarc.packs import evaluate, grader_sha256, load_pack
from evalarc.reports.audit import AuditOptions, AuditResult, Control, prepare_controls, run_audit
from evalarc.runtime.docker_backend import (
    CANDIDATE_USER,
    IDLE_USER,
    LIFETIME_SLACK_SECONDS,
    MEMORY_LIMIT_BYTES,
    NANO_CPUS,
    PIDS_LIMIT,
    STATE_OPTIONS,
    TMPFS_OPTIONS,
    DockerBackend,
)
from evalarc.runtime.protocol import Limits

TASK = "durable-kv"
KILL = ["/bin/sh", "-c", "kill -9 -1"]
"""The least a kill takes in the image (it has no /bin/kill): SIGKILL every candidate process."""
TIMING = {"created_at", "duration_seconds", "evaluation_seconds", "recording_sha256"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _load() -> float:
    return os.getloadavg()[0]


@dataclass(frozen=True, slots=True)
class FloorSession:
    """One process of a case, as the audit ran it: its argv, the request lines it was sent
    (one response line awaited after each) and how it ended (``eof`` or ``kill``)."""

    argv: list[str]
    requests: list[bytes]
    stop: str


@dataclass(frozen=True, slots=True)
class FloorCase:
    snapshot: Path
    sessions: list[FloorSession]


def floor_plan(plan: AuditResult, controls: list[Control]) -> list[FloorCase]:
    """Every case of every control, in the order the scheduler queues them (case-major), with
    the sessions and requests its recording holds."""
    evaluations = {"reference": plan.audit["reference"]}
    evaluations.update({row["name"]: row["evaluation"] for row in plan.audit["mutants"]})
    per_control: list[list[FloorCase]] = []
    for control in controls:
        cases: list[FloorCase] = []
        for record in evaluations[control.name]["cases"]:
            path = plan.output / "recordings" / f"{record['recording_sha256']}.jsonl"
            sessions: dict[int, FloorSession] = {}
            for line in path.read_text(encoding="ascii").splitlines():
                event = json.loads(line)
                index = event["session"]
                if event["event"] == "start":
                    sessions[index] = FloorSession(list(event["argv"]), [], "eof")
                elif event["event"] == "send":
                    sessions[index].requests.append(event["line"].encode("ascii") + b"\n")
                elif event["event"] == "kill":
                    sessions[index] = replace(sessions[index], stop="kill")
                elif event["event"] == "fault":
                    raise SystemExit(f"the floor cannot mirror a faulted case ({path.name})")
            cases.append(FloorCase(control.snapshot.path, [sessions[i] for i in sorted(sessions)]))
        per_control.append(cases)
    return [cases[number] for number in range(len(per_control[0])) for cases in per_control]


class _Frames:
    """Reads Docker's multiplexed exec stream (8-byte frame headers) from a blocking socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = b""
        self.stdout = b""

    def read_line(self) -> bool:
        """Wait for one more stdout line; False at end of stream."""
        while b"\n" not in self.stdout:
            if not self._more():
                return False
        self.stdout = self.stdout.split(b"\n", 1)[1]
        return True

    def drain(self) -> None:
        while self._more():
            pass

    def _more(self) -> bool:
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.pending += chunk
        while len(self.pending) >= 8:
            stream, size = struct.unpack_from(">BxxxL", self.pending)
            if len(self.pending) < 8 + size:
                break
            if stream == 1:
                self.stdout += self.pending[8 : 8 + size]
            self.pending = self.pending[8 + size :]
        return True


def _exec_stopped(api: Any, exec_id: str) -> None:
    while api.exec_inspect(exec_id)["Running"]:
        time.sleep(0.005)


def floor_case(api: Any, image_id: str, case: FloorCase, limits: Limits) -> None:
    """The Docker work of one case and nothing else: its container (the same sandbox), one exec
    per session fed the same requests, each response line awaited, then EOF and the exit, or a
    ``kill -9 -1`` exec as the candidate's uid; the container removed at the end."""
    container = api.create_container(
        image_id,
        ["sleep", str(int(limits.case_timeout + LIFETIME_SLACK_SECONDS))],
        user=IDLE_USER,
        labels={"evalarc.bench": "floor"},
        network_disabled=True,
        working_dir="/candidate",
        host_config=api.create_host_config(
            auto_remove=True,
            init=True,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            nano_cpus=NANO_CPUS,
            mem_limit=MEMORY_LIMIT_BYTES,
            memswap_limit=MEMORY_LIMIT_BYTES,
            pids_limit=PIDS_LIMIT,
            tmpfs={"/tmp": TMPFS_OPTIONS, "/state": STATE_OPTIONS},
            binds={str(case.snapshot): {"bind": "/candidate", "mode": "ro"}},
        ),
    )["Id"]
    try:
        api.start(container)
        for session in case.sessions:
            exec_id = api.exec_create(
                container,
                session.argv,
                stdin=True,
                user=CANDIDATE_USER,
                workdir="/candidate",
            )["Id"]
            owner = api.exec_start(exec_id, socket=True)
            sock = owner._sock
            sock.settimeout(limits.response_timeout)
            frames = _Frames(sock)
            for request in session.requests:
                sock.sendall(request)
                if not frames.read_line():
                    raise SystemExit("a floor session ended before its response")
            if session.stop == "kill":
                killer = api.exec_create(container, KILL, user=CANDIDATE_USER)
                api.exec_start(killer["Id"], detach=True)
            else:
                sock.shutdown(socket.SHUT_WR)
                frames.drain()
            _exec_stopped(api, exec_id)
            sock.close()
            owner.close()
    finally:
        api.remove_container(container, force=True)


def bare_floor(cases: list[FloorCase], image: str, jobs: int, limits: Limits) -> float:
    """Wall seconds of :func:`floor_case` over every case, ``jobs`` at a time."""
    client = docker.from_env(timeout=60, max_pool_size=64)
    api = client.api
    image_id = client.images.get(image).id
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(lambda case: floor_case(api, image_id, case, limits), cases))
    seconds = time.perf_counter() - started
    client.close()
    return seconds


def sequential(seeds: tuple[int, ...], image: str, work: Path) -> float:
    pack = load_pack(TASK)
    controls = prepare_controls(pack, "python", work)
    started = time.perf_counter()
    for control in controls:
        backend = DockerBackend(
            control.snapshot.path, control.snapshot.command, pack.limits, work, image=image
        )
        evaluate(pack, control.snapshot, backend, seeds, pack.limits)
        backend.client.close()
    return time.perf_counter() - started


def ray_rows(seeds: tuple[int, ...], image: str, slots: int, work: Path) -> dict[str, Any]:
    """Run the Ray part in a fresh network namespace (every Ray port on loopback)."""
    environment = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    environment.pop("RAY_ADDRESS", None)
    completed = subprocess.run(
        [
            "unshare",
            "--net",
            "sh",
            "-c",
            'ip link set lo up && exec "$@"',
            "sh",
            sys.executable,
            __file__,
            "--ray-inside",
            str(work),
            "--image",
            image,
            "--slots",
            str(slots),
            "--seeds",
            *map(str, seeds),
        ],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=7200,
    )
    if completed.returncode != 0:
        raise SystemExit(f"the Ray part failed: {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def ray_inside(work: Path, seeds: tuple[int, ...], image: str, slots: int) -> None:
    import ray
    from ray.cluster_utils import Cluster

    from evalarc.ray_executor import SLOT_RESOURCE

    results: dict[str, Any] = {}
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        cluster.add_node(num_cpus=1, resources={SLOT_RESOURCE: slots})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        for nodes in (1, 3):
            while len(cluster.list_all_nodes()) < nodes + 1:
                cluster.add_node(num_cpus=1, resources={SLOT_RESOURCE: slots})
            cluster.wait_for_nodes()
            options = AuditOptions(task=TASK, image=image, seeds=seeds, executor="ray")
            load = _load()
            started = time.perf_counter()
            audit = run_audit(work / f"ray-{nodes}", options, temp_root=work)
            results[f"ray {nodes} node{'s' if nodes > 1 else ''}"] = {
                "seconds": time.perf_counter() - started,
                "load": (load + _load()) / 2,
                "audit": _strip(audit.audit),
            }
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(results))


def rederive_cost(folder: Path, seeds: tuple[int, ...]) -> dict[str, float]:
    """Host-side cost of ``--executor ray``'s acceptance step, per case, on one thread: parse
    each case's transcript from an audit folder and replay it through this host's grader (what
    the driver does for every case a worker returns); every derived record must equal the one
    in the folder apart from its timing."""
    from evalarc.packs import plan_cases
    from evalarc.ray_executor import rederive
    from evalarc.runtime.recording import parse_recording

    pack = load_pack(TASK)
    grader = grader_sha256(pack)
    cases = plan_cases(pack, seeds)
    audit = json.loads((folder / "audit.json").read_text(encoding="utf-8"))
    evaluations = [audit["reference"], *(row["evaluation"] for row in audit["mutants"])]
    work: list[tuple[dict[str, Any], Any, dict[str, Any], bytes]] = []
    for evaluation in evaluations:
        for case, record in zip(cases, evaluation["cases"], strict=True):
            path = folder / "recordings" / f"{record['recording_sha256']}.jsonl"
            work.append((evaluation, case, record, path.read_bytes()))
    count = 0
    started = time.perf_counter()
    for evaluation, case, stored, data in work:
        transcript = parse_recording(data, Path(case.case_id))
        record, _, divergences = rederive(
            pack,
            grader,
            evaluation["candidate_sha256"],
            evaluation["runtime"],
            pack.limits,
            case,
            transcript,
        )
        if divergences or _strip(record) != _strip(stored):
            raise SystemExit(f"re-deriving {case.seed}/{case.case_id} gave another record")
        count += 1
    seconds = time.perf_counter() - started
    return {"cases": count, "seconds": seconds, "per_case_ms": 1000 * seconds / count}


def _partial(name: str, row: dict[str, Any]) -> None:
    """Each figure as soon as it is measured (on stderr), so a later failure loses nothing."""
    print(
        f"  measured {name}: {row['seconds']:.2f} s at load {row['load']:.1f}",
        file=sys.stderr,
        flush=True,
    )


def _timed(name: str, rows: dict[str, dict[str, Any]], run: Any) -> Any:
    load = _load()
    started = time.perf_counter()
    result = run()
    rows[name] = {"seconds": time.perf_counter() - started, "load": (load + _load()) / 2}
    _partial(name, rows[name])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="evalarc-python:local")
    parser.add_argument("--seeds", type=int, nargs="+", default=[17, 41, 97])
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--ray-inside", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 1, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    seeds = tuple(arguments.seeds)
    if arguments.ray_inside is not None:
        ray_inside(arguments.ray_inside, seeds, arguments.image, arguments.slots)
        return
    cores = os.cpu_count() or 1
    pack = load_pack(TASK)
    rows: dict[str, dict[str, Any]] = {}
    loads_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="evalarc-bench-executors-"))
    try:
        # The floor mirrors what the audit does, taken from its bundled recordings (a replay
        # audit gives every case's sessions and requests without running anything).
        plan = run_audit(
            work / "plan", AuditOptions(task=TASK, backend="replay", seeds=seeds), temp_root=work
        )
        floor_cases = floor_plan(plan, prepare_controls(pack, "python", work / "floor"))
        floors = [
            _timed(
                "floor (before)",
                rows,
                lambda: bare_floor(floor_cases, arguments.image, cores, pack.limits),
            )
        ]
        floor_row = rows.pop("floor (before)")
        _timed("sequential", rows, lambda: sequential(seeds, arguments.image, work / "seq"))
        reference: Any = None
        for jobs in (1, 2, 4):
            options = AuditOptions(task=TASK, image=arguments.image, seeds=seeds, jobs=jobs)
            audit = _timed(
                f"--jobs {jobs}",
                rows,
                lambda options=options, jobs=jobs: run_audit(
                    work / f"jobs-{jobs}", options, temp_root=work
                ),
            )
            stripped = _strip(audit.audit)
            rows[f"--jobs {jobs}"]["same"] = reference is None or stripped == reference
            reference = reference or stripped
        rederived = rederive_cost(
            work / f"jobs-{min(cores, 4) if cores in (1, 2, 4) else 2}", seeds
        )
        if not arguments.skip_ray:
            for name, row in ray_rows(seeds, arguments.image, cores, work).items():
                rows[name] = {
                    "seconds": row["seconds"],
                    "load": row["load"],
                    "same": row["audit"] == reference,
                }
                _partial(name, rows[name])
        floors.append(
            _timed(
                "floor (after)",
                rows,
                lambda: bare_floor(floor_cases, arguments.image, cores, pack.limits),
            )
        )
        after_row = rows.pop("floor (after)")
        rows = {
            "floor": {
                "seconds": (floor_row["seconds"] + after_row["seconds"]) / 2,
                "load": (floor_row["load"] + after_row["load"]) / 2,
            },
            **rows,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    floor = rows["floor"]["seconds"]
    at_cores = f"--jobs {cores}" if cores in (1, 2, 4) else "--jobs 2"
    jobs_at_cores = rows[at_cores]["seconds"]
    sessions = sum(len(case.sessions) for case in floor_cases)
    print(
        f"{TASK} audit: 9 controls x {len(seeds)} seeds = {len(floor_cases)} cases, "
        f"{sessions} sessions; image {arguments.image}; {cores} cores"
    )
    print("load average before the run: " + " ".join(f"{value:.1f}" for value in loads_before))
    print(
        f"floor: {floors[0]:.2f} s before the audits, {floors[1]:.2f} s after (mean below); "
        f"load average after the run: " + " ".join(f"{v:.1f}" for v in os.getloadavg())
    )
    print()
    print("| run | wall s | x floor | load (1 min) | same audit as --jobs 1 |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, row in rows.items():
        same = "" if "same" not in row else ("yes" if row["same"] else "NO")
        print(
            f"| {name} | {row['seconds']:.1f} | {row['seconds'] / floor:.2f} | "
            f"{row['load']:.1f} | {same} |"
        )
    print()
    print(f"{at_cores} (core count) / floor = {jobs_at_cores / floor:.2f} (target <= 1.2)")
    if "ray 1 node" in rows:
        print(
            f"ray 1 node / {at_cores} = "
            f"{rows['ray 1 node']['seconds'] / jobs_at_cores:.2f} (target <= 1.5)"
        )
    print(
        f"host-side re-derivation (parse + replay through the grader, one thread): "
        f"{rederived['per_case_ms']:.2f} ms per case over {rederived['cases']:.0f} cases "
        f"({1000 / rederived['per_case_ms']:.0f} cases/s)"
    )


if __name__ == "__main__":
    main()
