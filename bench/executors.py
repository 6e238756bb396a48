"""The durable-kv audit under each executor, beside the bare-exec floor (one run).

Measures, in one run, the wall time of the durable-kv audit (the reference and its 8 declared
faults; seeds 17 41 97 by default: 9 x 45 = 405 cases):

* **sequential**: every control's cases one after another (:func:`evalarc.packs.evaluate` per
  control, as before case-granular scheduling);
* **--jobs 1 / 2 / 4**: case-granular scheduling on this machine's thread pool;
* **ray 1 node / 3 nodes**: ``--executor ray`` on a local ``ray.cluster_utils.Cluster`` (each
  node declaring ``evalarc_slot`` = the core count), run in a network namespace of its own
  (``unshare -n``, loopback only) with Ray's token authentication;
* **floor**: the same cases, each with its recorded number of sessions, run through the same
  Docker backend at the core count's parallelism by a bare program that reads stdin to EOF and
  exits (container per case, exec, readiness marker, interpreter start, clean-up; no protocol).

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
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evalarc.packs import evaluate, load_pack
from evalarc.reports.audit import AuditOptions, prepare_controls, run_audit
from evalarc.runtime.docker_backend import DockerBackend
from evalarc.runtime.snapshot import snapshot_candidate

TASK = "durable-kv"
BARE = ["python3", "-I", "-B", "-c", "import sys; sys.stdin.buffer.read()"]
TIMING = {"created_at", "duration_seconds", "evaluation_seconds", "recording_sha256"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _load() -> float:
    return os.getloadavg()[0]


def session_plan(audit: dict[str, Any]) -> list[int]:
    """Sessions of every case of every control (case-granular, in audit order)."""
    evaluations = [audit["reference"], *(row["evaluation"] for row in audit["mutants"])]
    return [len(case["processes"]) for evaluation in evaluations for case in evaluation["cases"]]


def bare_floor(plan: list[int], image: str, jobs: int, work: Path) -> float:
    pack = load_pack(TASK)
    work.mkdir()
    workspace = work / "bare"
    workspace.mkdir()
    (workspace / "evalarc.toml").write_text(f"command = {json.dumps(BARE)}\n", encoding="utf-8")
    snapshot = snapshot_candidate(workspace, work / "bare-snapshot", [])
    backend = DockerBackend(snapshot.path, snapshot.command, pack.limits, work, image=image)

    def case(sessions: int) -> None:
        with backend.open_case("bare") as run:
            for _ in range(sessions):
                run.start_session().stop_eof()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(case, plan))
    seconds = time.perf_counter() - started
    backend.client.close()
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


def _partial(name: str, row: dict[str, Any]) -> None:
    """Each figure as soon as it is measured (on stderr), so a later failure loses nothing."""
    print(f"  measured {name}: {row['seconds']:.2f} s at load {row['load']:.1f}",
          file=sys.stderr, flush=True)


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
    rows: dict[str, dict[str, Any]] = {}
    work = Path(tempfile.mkdtemp(prefix="evalarc-bench-executors-"))
    try:
        plan = session_plan(
            run_audit(
                work / "plan",
                AuditOptions(task=TASK, backend="replay", seeds=seeds),
                temp_root=work,
            ).audit
        )
        load = _load()
        floor_before = bare_floor(plan, arguments.image, cores, work / "floor-before")
        rows["floor"] = {"seconds": floor_before, "load": (load + _load()) / 2}
        _partial("floor (before)", rows["floor"])
        load = _load()
        rows["sequential"] = {
            "seconds": sequential(seeds, arguments.image, work / "seq"),
            "load": 0.0,
        }
        rows["sequential"]["load"] = (load + _load()) / 2
        _partial("sequential", rows["sequential"])
        reference: Any = None
        for jobs in (1, 2, 4):
            options = AuditOptions(task=TASK, image=arguments.image, seeds=seeds, jobs=jobs)
            load = _load()
            started = time.perf_counter()
            audit = run_audit(work / f"jobs-{jobs}", options, temp_root=work)
            rows[f"--jobs {jobs}"] = {
                "seconds": time.perf_counter() - started,
                "load": (load + _load()) / 2,
            }
            stripped = _strip(audit.audit)
            rows[f"--jobs {jobs}"]["same"] = reference is None or stripped == reference
            reference = reference or stripped
            _partial(f"--jobs {jobs}", rows[f"--jobs {jobs}"])
        if not arguments.skip_ray:
            for name, row in ray_rows(seeds, arguments.image, cores, work).items():
                rows[name] = {
                    "seconds": row["seconds"],
                    "load": row["load"],
                    "same": row["audit"] == reference,
                }
        load = _load()
        floor_after = bare_floor(plan, arguments.image, cores, work / "floor-after")
        rows["floor"]["seconds"] = (floor_before + floor_after) / 2
        rows["floor"]["load"] = (rows["floor"]["load"] + (load + _load()) / 2) / 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    floor = rows["floor"]["seconds"]
    jobs_at_cores = (
        rows[f"--jobs {min(4, max(1, cores))}"]["seconds"]
        if cores in (1, 2, 4)
        else rows["--jobs 2"]["seconds"]
    )
    print(
        f"{TASK} audit: 9 controls x {len(seeds)} seeds = {len(plan)} cases, "
        f"{sum(plan)} sessions; image {arguments.image}; {cores} cores"
    )
    print(f"  {'run':<14} {'wall s':>9} {'x floor':>8} {'load':>6}  same audit")
    for name, row in rows.items():
        same = "" if "same" not in row else ("yes" if row["same"] else "NO")
        print(
            f"  {name:<14} {row['seconds']:9.2f} {row['seconds'] / floor:8.2f} "
            f"{row['load']:6.1f}  {same}"
        )
    print(f"  --jobs {cores} (core count) / floor = {jobs_at_cores / floor:.2f} (target <= 1.2)")
    if "ray 1 node" in rows:
        print(
            f"  ray 1 node / --jobs {cores} = "
            f"{rows['ray 1 node']['seconds'] / jobs_at_cores:.2f} (target <= 1.5)"
        )


if __name__ == "__main__":
    main()
