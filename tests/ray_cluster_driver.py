"""Drive EvalArc on a local multi-node Ray cluster: the scenarios of ``tests/test_ray_executor.py``.

Run inside a fresh network namespace (``unshare -n``, loopback up) so that every Ray port is on
loopback and reachable from nowhere else, with token authentication (``RAY_AUTH_MODE=token``)
when the installed Ray has it. Usage::

    python tests/ray_cluster_driver.py OUT SCENARIO...

Scenarios (each writes ``OUT/<scenario>/`` and a line to ``OUT/results.jsonl``):

* ``one-node`` / ``three-nodes``: the durable-kv audit (seed 17) on 1 or 3 slot nodes;
* ``lying-worker``: an evaluation of the reference where the workers tamper with one case's
  record and another case's transcript;
* ``node-removed``: the audit on 3 slot nodes, one node removed while cases run;
* ``cancel-SIGINT`` / ``cancel-SIGTERM``: an ``evalarc audit --executor ray`` process (its own
  process group, its own empty TMPDIR) gets the signal once its staged folder holds a few
  recordings (cases done, others running on the node); the scenario records its exit status,
  what is left beside the output and in its TMPDIR, and, after bounded waits, the case
  containers, case tasks (``ray::run_case_on_node`` processes) and node snapshot copies left.

Every scenario also reports the case containers its cluster's workers made that still exist.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
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
        return self.existing()

    def existing(self) -> list[str]:
        ids = {entry["Id"] for entry in self.client.api.containers(all=True)}
        return sorted(self.seen & ids)


def _case_tasks() -> list[str]:
    """Processes of this driver's cluster still running (or titled after) an EvalArc task."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        names = ("run_case_on_node", "sweep_node", "node_probe")
        if any(name in title for name in names) and _descends_from_root(int(entry.name)):
            found.append(f"{entry.name}: {title.strip()[:80]}")
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _until(deadline: float, check: Any) -> Any:
    """``check()`` until it is falsy or ``deadline`` passes (bounded waits); its last value."""
    while True:
        value = check()
        if not value or time.monotonic() >= deadline:
            return value
        time.sleep(0.25)


def cancel_scenario(cluster: Cluster, name: str, out: Path) -> dict[str, Any]:
    """Signal a running ``evalarc audit --executor ray`` mid-case; see the module doc."""
    signum = signal.Signals[name.removeprefix("cancel-")]
    watch = ContainerWatch()
    root = out / name
    temp, work = root / "tmp", root / "work"
    temp.mkdir(parents=True)
    work.mkdir()
    output = work / "audit"
    evalarc = Path(sys.executable).with_name("evalarc")
    process = subprocess.Popen(
        [str(evalarc), "audit", "--task", "durable-kv", "--seeds", *map(str, SEEDS), "--image",
         IMAGE, "--executor", "ray", "--ray-address", cluster.address, "--output", str(output)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(temp)},
        start_new_session=True,
    )
    result: dict[str, Any] = {"scenario": name, "recorded_before_signal": 0}
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and process.poll() is None:
        staged = [entry for entry in work.iterdir() if entry.name.endswith(".partial")]
        recordings = staged[0] / "recordings" if staged else None
        if recordings is not None and recordings.is_dir():
            count = sum(1 for _ in recordings.iterdir())
            if count >= 4:
                result["recorded_before_signal"] = count
                break
        time.sleep(0.05)
    # What the checks below must see gone: case tasks running and their containers.
    result["case_tasks_before"] = _case_tasks()
    result["containers_before"] = len(watch.seen)
    result["delivered"] = process.poll() is None
    if result["delivered"]:
        if signum == signal.SIGINT:
            os.killpg(process.pid, signum)  # Ctrl-C: the whole process group
        else:
            process.send_signal(signum)  # kill PID: the process only
    try:
        _, stderr = process.communicate(timeout=120)
        result["hung"] = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
        result["hung"] = True
    result["code"] = process.returncode
    result["stderr"] = stderr.decode("utf-8", "replace")[-600:]
    result["left"] = sorted(entry.name for entry in work.iterdir())
    result["temp"] = sorted(entry.name for entry in temp.iterdir())
    # Bounded waits: what EvalArc stopped may take the engine and Ray a moment to clear.
    settle = time.monotonic() + 30
    result["group_alive"] = _until(settle, lambda: _group_alive(process.pid))
    result["case_tasks"] = _until(settle, _case_tasks)
    result["containers_left"] = _until(settle, watch.existing)
    watch.left()
    result["node_copies"] = sorted(
        entry.name
        for entry in Path(os.environ.get("TMPDIR", "/tmp")).iterdir()
        if entry.name.startswith("evalarc-worker-")
    )
    with (out / "results.jsonl").open("a") as stream:
        stream.write(json.dumps(result) + "\n")
    return result


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


def machine_strings(cluster: Cluster, out: Path) -> list[str]:
    """What identifies this machine and this cluster: none may appear in a published file."""
    strings = {cluster.address, cluster.address.rpartition(":")[0], socket.gethostname(),
               str(out), str(Path(__file__).resolve().parents[1]), tempfile.gettempdir()}
    for node in ray.nodes():
        strings.update(str(node.get(key, "")) for key in (
            "NodeID", "NodeManagerAddress", "NodeManagerHostname", "NodeName"))
        socket_name = str(node.get("ObjectStoreSocketName", ""))
        if "/sockets/" in socket_name:
            strings.add(socket_name.partition("/sockets/")[0])  # the session folder
    return sorted(value for value in strings if value)


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
    result["machine"] = machine_strings(cluster, out)
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
            if name.startswith("cancel-"):
                cancel_scenario(cluster, name, out)
                continue
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
