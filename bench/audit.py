"""How long does a durable-kv audit take live in Docker, replayed, and at the bare floor?

One run measures three things, in one process:

1. **live**: ``evalarc audit`` of durable-kv (the reference and its 8 declared faults, seeds
   17 41 97 by default: 9 x 45 = 405 cases) in Docker, controls evaluated side by side
   (``--jobs``, default two per core);
2. **floor**: the same cases and, case by case, the same number of sessions (taken from the
   bundled recordings of these controls), run through the same Docker backend with the same
   parallelism, but by a bare program that starts, reads stdin to EOF and exits
   (``python3 -I -B -c ...``): container per case, exec, readiness marker, interpreter start,
   clean exit and clean-up, and no protocol work at all. It is measured just before and just
   after the live run and averaged, so a change in machine load during the run shows up as a
   gap between the two instead of skewing the ratio;
3. **replay**: the same audit recomputed with ``--backend replay`` from the live run's
   recordings (no candidate runs), which must give the identical audit.

It prints the three wall times, live/floor (target <= 1.5) and live/replay (target >= 50).

    python bench/audit.py [--image evalarc-python:local] [--seeds 17 41 97] [--jobs N]

Needs the engine and the image (scripts/docker_setup.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evalarc.packs import load_pack
from evalarc.reports.audit import AuditOptions, default_jobs, run_audit
from evalarc.runtime.docker_backend import DockerBackend
from evalarc.runtime.snapshot import snapshot_candidate

TASK = "durable-kv"
BARE = ["python3", "-I", "-B", "-c", "import sys; sys.stdin.buffer.read()"]
VOLATILE = {"created_at", "duration_seconds", "evaluation_seconds"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def session_plan(audit: dict[str, Any]) -> list[list[int]]:
    """Per control, the number of sessions each of its cases started."""
    evaluations = [audit["reference"], *(row["evaluation"] for row in audit["mutants"])]
    return [[len(case["processes"]) for case in evaluation["cases"]]
            for evaluation in evaluations]


def recorded_plan(seeds: tuple[int, ...], work: Path) -> list[list[int]]:
    """The session plan of the bundled recordings of these controls (a replay, no Docker)."""
    options = AuditOptions(task=TASK, backend="replay", seeds=seeds)
    return session_plan(run_audit(work / "plan", options, temp_root=work).audit)


def bare_floor(plan: list[list[int]], image: str, jobs: int, work: Path) -> float:
    """Wall seconds to open every case and start and stop its sessions with a bare program."""
    pack = load_pack(TASK)
    work.mkdir()
    workspace = work / "bare"
    workspace.mkdir()
    (workspace / "evalarc.toml").write_text(f"command = {json.dumps(BARE)}\n", encoding="utf-8")
    snapshot = snapshot_candidate(workspace, work / "bare-snapshot", [])
    backends = [DockerBackend(snapshot.path, snapshot.command, pack.limits,
                              work / f"bare-cases-{number}", image=image)
                for number in range(len(plan))]

    def control(number: int) -> None:
        backend = backends[number]
        for sessions in plan[number]:
            with backend.open_case(f"bare/{number}") as case:
                for _ in range(sessions):
                    case.start_session().stop_eof()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(control, range(len(plan))))
    seconds = time.perf_counter() - started
    for backend in backends:
        backend.client.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="evalarc-python:local")
    parser.add_argument("--seeds", type=int, nargs="+", default=[17, 41, 97])
    parser.add_argument("--jobs", type=int, default=default_jobs())
    arguments = parser.parse_args()
    seeds = tuple(arguments.seeds)

    with tempfile.TemporaryDirectory(prefix="evalarc-bench-audit-") as temp:
        work = Path(temp)
        plan = recorded_plan(seeds, work)
        loads = [os.getloadavg()[0]]
        floor_before = bare_floor(plan, arguments.image, arguments.jobs, work / "before")
        live_options = AuditOptions(task=TASK, backend="docker", image=arguments.image,
                                    seeds=seeds, jobs=arguments.jobs)
        started = time.perf_counter()
        live = run_audit(work / "live", live_options, temp_root=work)
        live_seconds = time.perf_counter() - started
        loads.append(os.getloadavg()[0])
        floor_after = bare_floor(plan, arguments.image, arguments.jobs, work / "after")
        loads.append(os.getloadavg()[0])
        floor_seconds = (floor_before + floor_after) / 2
        live_plan = session_plan(live.audit)

        replay_options = AuditOptions(task=TASK, backend="replay", seeds=seeds,
                                      recordings=work / "live" / "recordings")
        started = time.perf_counter()
        replay = run_audit(work / "replay", replay_options, temp_root=work)
        replay_seconds = time.perf_counter() - started
        same = _strip(replay.audit) == _strip(live.audit)

    cases = sum(len(control) for control in plan)
    sessions = sum(sum(control) for control in plan)
    audit = live.audit
    print(f"{TASK} audit: {len(plan)} controls x {len(seeds)} seeds = {cases} cases, "
          f"{sessions} sessions; image {arguments.image}; {arguments.jobs} controls at once")
    print(f"  result: {audit['killed']}/{audit['total']} detected, weakest margin "
          f"{audit['detection']['weakest_margin']}, single-case: "
          f"{', '.join(audit['detection']['single_case_detections']) or 'none'}")
    print(f"  floor  (bare sessions, same cases and parallelism): {floor_seconds:8.2f} s "
          f"({1000 * floor_seconds / sessions:.0f} ms per session; {floor_before:.2f} s "
          f"before and {floor_after:.2f} s after the live run)")
    print(f"  live   (Docker):                                    {live_seconds:8.2f} s "
          f"= {live_seconds / floor_seconds:.2f} x floor (target <= 1.5)")
    print(f"  replay (recordings, no Docker):                     {replay_seconds:8.2f} s "
          f"= {live_seconds / replay_seconds:.0f} x faster than live (target >= 50)")
    print(f"  replayed audit identical to the live one: {str(same).lower()}; live sessions "
          f"per case as recorded: {str(live_plan == plan).lower()}")
    print("  1-minute load average before / after live / after floor: "
          + " / ".join(f"{load:.1f}" for load in loads))


if __name__ == "__main__":
    main()
