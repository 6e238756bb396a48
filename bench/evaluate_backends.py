"""What does a durable-kv evaluation cost on each backend, and how much of it is process start-up?

Evaluates the Python reference over the given seeds (default 17 41 97, 45 cases) once through the
Docker backend and once through the local backend, and prints the host wall time per case (the
``duration_seconds`` each case record carries: start-ups, exchanges, kills and cleanup), per case
id averaged over the seeds, and the whole run. In the same run it measures the bare start cost of

* a container: ``docker run`` of ``true`` with the sandbox's network/user/read-only settings
  (create, start, wait for exit, remove);
* an exec in a running container (what one extra session of a case pays): ``true``;
* a local process: ``/bin/true`` and ``python3 -I -B -c pass``,

as medians over ``--repeat`` tries.

    python bench/evaluate_backends.py [--image evalarc-python:local] [--seeds 17 41 97]

Needs a running engine and the image (scripts/docker_setup.sh).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker

from evalarc.packs import evaluate, load_pack, materialize_workspace
from evalarc.runtime.docker_backend import DockerBackend
from evalarc.runtime.local import LocalBackend
from evalarc.runtime.protocol import Backend
from evalarc.runtime.snapshot import snapshot_candidate


def _median_seconds(action: Callable[[], None], repeat: int) -> tuple[float, float]:
    """Median and minimum wall seconds of ``action`` over ``repeat`` tries (after one warm-up)."""
    action()
    times: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), min(times)


def _start_costs(image: str, repeat: int) -> list[tuple[str, float, float]]:
    client = docker.from_env()
    try:
        image_id = client.images.get(image).id

        def container_run() -> None:
            container = client.containers.run(
                image_id, ["true"], detach=True, network_mode="none", read_only=True,
                cap_drop=["ALL"], user="65534:65534",
            )  # fmt: skip
            container.wait()
            container.remove(force=True)

        idle = client.containers.run(
            image_id, ["sleep", "infinity"], detach=True, init=True, network_mode="none",
            read_only=True, cap_drop=["ALL"], user="65533:65533",
        )  # fmt: skip
        try:

            def exec_true() -> None:
                result = idle.exec_run(["true"], user="65534:65534")
                assert result.exit_code == 0

            def exec_python() -> None:
                result = idle.exec_run(["python3", "-I", "-B", "-c", "pass"], user="65534:65534")
                assert result.exit_code == 0

            costs = [
                ("container: run `true` (create+start+wait+remove)",
                 *_median_seconds(container_run, repeat)),
                ("container: exec `true` in a running one", *_median_seconds(exec_true, repeat)),
                ("container: exec `python3 -I -B -c pass`", *_median_seconds(exec_python, repeat)),
            ]  # fmt: skip
        finally:
            idle.remove(force=True)
    finally:
        client.close()

    def local(argv: list[str]) -> Callable[[], None]:
        return lambda: subprocess.run(argv, check=True, env={"PATH": "/bin:/usr/bin"})

    costs += [
        ("local: spawn `/bin/true`", *_median_seconds(local(["/bin/true"]), repeat)),
        (f"local: spawn `{Path(sys.executable).name} -I -B -c pass`",
         *_median_seconds(local([sys.executable, "-I", "-B", "-c", "pass"]), repeat)),
    ]  # fmt: skip
    return costs


def _evaluate(kind: str, image: str, seeds: list[int], root: Path) -> tuple[dict[str, Any], float]:
    pack = load_pack("durable-kv")
    workspace = root / f"{kind}-ws"
    materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace,
                          contract=False)  # fmt: skip
    snapshot = snapshot_candidate(workspace, root / f"{kind}-snapshot", list(pack.default_command))
    backend: Backend
    if kind == "docker":
        backend = DockerBackend(snapshot.path, snapshot.command, pack.limits, root / "docker-work",
                                image=image)  # fmt: skip
    else:
        backend = LocalBackend(snapshot.path, snapshot.command, pack.limits, root / "local-work")
    started = time.perf_counter()
    report = evaluate(pack, snapshot, backend, seeds, pack.limits).report
    wall = time.perf_counter() - started
    if not report["resolved"]:
        raise SystemExit(f"{kind}: the reference did not resolve ({report['status']})")
    return report, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="evalarc-python:local")
    parser.add_argument("--seeds", type=int, nargs="+", default=[17, 41, 97])
    parser.add_argument("--repeat", type=int, default=10, help="tries per start-cost figure")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="evalarc-bench-") as temp:
        root = Path(temp)
        runs = {kind: _evaluate(kind, args.image, args.seeds, root) for kind in ("docker", "local")}
    costs = _start_costs(args.image, args.repeat)

    seeds_text = " ".join(map(str, args.seeds))
    print(f"durable-kv Python reference, seeds {seeds_text}; Docker image {args.image}")
    print()
    print(f"{'case (mean over seeds), seconds':44} {'docker':>8} {'local':>8} {'ratio':>7}")
    per_case: dict[str, dict[str, list[float]]] = {}
    for kind, (report, _) in runs.items():
        for case in report["cases"]:
            per_case.setdefault(case["case_id"], {}).setdefault(kind, []).append(
                case["duration_seconds"])
    for case_id, times in per_case.items():
        docker_mean = statistics.mean(times["docker"])
        local_mean = statistics.mean(times["local"])
        print(f"{case_id:44} {docker_mean:8.3f} {local_mean:8.3f} {docker_mean / local_mean:6.1f}x")
    print()
    for kind, (report, wall) in runs.items():
        durations = [case["duration_seconds"] for case in report["cases"]]
        print(f"{kind:6}: {len(durations)} cases in {wall:.2f} s; per case median "
              f"{statistics.median(durations):.3f} s, mean {statistics.mean(durations):.3f} s, "
              f"max {max(durations):.3f} s")
    print()
    print(f"bare start cost (median / min of {args.repeat}):")
    for label, median, minimum in costs:
        print(f"  {label:52} {median * 1000:8.1f} ms / {minimum * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
