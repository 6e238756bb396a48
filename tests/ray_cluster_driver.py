"""Drive EvalArc on a local multi-node Ray cluster: the scenarios of ``tests/test_ray_executor.py``.

Run inside a fresh network namespace (``unshare -n``, loopback up) so that every Ray port is on
loopback and reachable from nowhere else, with token authentication (``RAY_AUTH_MODE=token``)
when the installed Ray has it. Usage::

    python tests/ray_cluster_driver.py OUT SCENARIO...

Scenarios (each writes ``OUT/<scenario>/`` and a line to ``OUT/results.jsonl``):

* ``one-node`` / ``three-nodes``: the durable-kv audit (seed 17) on 1 or 3 slot nodes;
* ``lying-worker``: an evaluation of the reference where the workers tamper with one case's
  record and another case's transcript;
* ``node-removed``: the audit on 3 slot nodes, one node removed while cases run.

Every scenario also reports the case containers its cluster's workers made that still exist.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import docker
import ray
from ray.cluster_utils import Cluster

from evalarc import ray_executor
from evalarc.packs import materialize_workspace
from evalarc.reports.audit import AuditOptions, run_audit
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from evalarc.runtime.owner import OWNER_LABEL

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")
SLOTS = 2
SEEDS = (17,)
ROOT_PID = os.getpid()
REAL_RUN = ray_executor.run_case_on_node


def _descends_from_root(pid: int) -> bool:
    for _ in range(64):
        if pid == ROOT_PID:
            return True
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(text.rpartition(")")[2].split()[1])
        if pid <= 1:
            return False
    return False


class ContainerWatch:
    """Remembers every case container made by a process of this driver's cluster."""

    def __init__(self) -> None:
        self.client = docker.from_env()
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                # The raw list (no inspect per container): containers of other runs on this
                # engine come and go meanwhile.
                for entry in self.client.api.containers(filters={"label": OWNER_LABEL}):
                    pid = str(entry.get("Labels", {}).get(OWNER_LABEL, "")).split("/")[2:3]
                    if pid and pid[0].isdigit() and _descends_from_root(int(pid[0])):
                        self.seen.add(entry["Id"])
            except Exception:
                pass
            time.sleep(0.2)

    def left(self) -> list[str]:
        self._stop.set()
        self._thread.join()
        ids = {entry["Id"] for entry in self.client.api.containers(all=True)}
        return sorted(self.seen & ids)


def lying_run(task: str, blob: bytes, sha256: str, seed: int, case_id: str, *rest: Any) -> Any:
    """The real case run, then a lie: the first case's record claims the opposite status, the
    second case's transcript has its first response altered."""
    answer = REAL_RUN(task, blob, sha256, seed, case_id, *rest)
    if case_id == "read-write-delete":
        answer["record"] = {**answer["record"], "status": "failed", "passed": False}
    if case_id == "json-types-and-overwrite":
        lines = answer["transcript"].splitlines(keepends=True)
        for number, line in enumerate(lines):
            event = json.loads(line)
            if event["event"] == "recv":
                event["line"] = '{"ok":false}'
                lines[number] = json.dumps(event, sort_keys=True, separators=(",", ":")) + "\n"
                break
        answer["transcript"] = "".join(lines)
    return answer


def scenario(cluster: Cluster, name: str, out: Path) -> dict[str, Any]:
    watch = ContainerWatch()
    started = time.monotonic()
    result: dict[str, Any] = {"scenario": name}
    options = AuditOptions(image=IMAGE, seeds=SEEDS, executor="ray", ray_address=cluster.address)
    if name == "lying-worker":
        workspace = out / "reference"
        materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace)
        ray_executor.run_case_on_node = lying_run
        try:
            evaluation = run_evaluate(
                workspace,
                out / name,
                EvaluateOptions(image=IMAGE, seeds=SEEDS, executor="ray",
                                ray_address=cluster.address),
            )
        finally:
            ray_executor.run_case_on_node = REAL_RUN
        result.update(valid=evaluation.report["valid"], notes=list(evaluation.notes))
    elif name == "node-removed":
        victims = [node for node in cluster.list_all_nodes() if not node.head]
        completed = threading.Event()
        seen = {"count": 0}

        def on_event(event: dict[str, Any]) -> None:
            if event.get("event") == "case_completed":
                seen["count"] += 1
                if seen["count"] == 20:
                    completed.set()

        def remove() -> None:
            completed.wait(timeout=600)
            cluster.remove_node(victims[-1], allow_graceful=False)
            result["removed_after"] = seen["count"]

        remover = threading.Thread(target=remove, daemon=True)
        remover.start()
        audit = run_audit(out / name, options, on_event=on_event)
        remover.join(timeout=5)
        result.update(valid=audit.audit["valid"], score=audit.audit.get("score"),
                      notes=list(audit.notes))
    else:
        audit = run_audit(out / name, options)
        result.update(valid=audit.audit["valid"], notes=list(audit.notes))
    result["seconds"] = round(time.monotonic() - started, 3)
    result["containers_left"] = watch.left()
    with (out / "results.jsonl").open("a") as stream:
        stream.write(json.dumps(result) + "\n")
    return result


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    wanted = sys.argv[2:]
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    try:
        cluster.add_node(num_cpus=1, resources={ray_executor.SLOT_RESOURCE: SLOTS})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        for name in wanted:
            if name != "one-node" and len(cluster.list_all_nodes()) < 4:
                for _ in range(2):
                    cluster.add_node(num_cpus=1, resources={ray_executor.SLOT_RESOURCE: SLOTS})
                cluster.wait_for_nodes()
                time.sleep(1)
            scenario(cluster, name, out)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
