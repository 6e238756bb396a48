"""Drive EvalArc on a local multi-node Ray cluster: the scenarios of ``tests/test_ray_executor.py``.

Run inside a fresh network namespace (``unshare -n``, loopback up) so that every Ray port is on
loopback and reachable from nowhere else, with token authentication (``RAY_AUTH_MODE=token``)
when the installed Ray has it. Run it from a folder that holds no ``evalarc/`` package (the
tests run it in OUT): Ray puts the driver's working folder first on every worker's
``sys.path``, which would hide the other EvalArc a node of the ``refused`` scenario installs.
Usage::

    python tests/ray_cluster_driver.py OUT SCENARIO...

Scenarios (each writes ``OUT/<scenario>/`` and a line to ``OUT/results.jsonl``):

* ``refused``: runs that must be refused before any case runs: no node declares the slot
  resource; then, beside a good slot node, a node with another EvalArc version installed, one
  whose packs hold another grader, and one whose Docker engine is not a unix:// socket;
* ``one-node`` / ``three-nodes``: the durable-kv audit (seed 17) on 1 or 3 slot nodes;
* ``lying-worker``: an evaluation of the reference where the workers tamper with one case's
  record and another case's transcript;
* ``node-removed``: the audit on 3 slot nodes, one node removed while cases run;
* ``node-removed-retried``: the same with ``--retry-infrastructure 1``;
* ``cancel-SIGINT`` / ``cancel-SIGTERM``: an ``evalarc audit --executor ray`` process (its own
  process group, its own empty TMPDIR) gets the signal once its staged folder holds a few
  recordings (cases done, others running on the node); the scenario records its exit status,
  what is left beside the output and in its TMPDIR, and, after bounded waits, the case
  containers, case tasks (``ray::run_case_on_node`` processes) and node snapshot copies left.
* ``kill-SIGKILL``: the same audit (``--case-timeout 10``) killed outright, so it cleans up
  nothing; the scenario records what is left, whether the case containers end by themselves
  within their lifetime (no EvalArc sweeps them meanwhile), what a later EvalArc's sweeps
  remove (the work folder in TMPDIR; the node's snapshot copies), and what stays.

Every scenario also reports the case containers its cluster's workers made that still exist,
and the audits count the case tasks that started (``invocations``: per case, on which node)
and the snapshots put into Ray's object store (``snapshot_puts``).
"""

from __future__ import annotations

import json
import os
import shutil
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
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from evalarc import ray_executor
from evalarc.errors import EnvironmentFailure
from evalarc.packs import materialize_workspace
from evalarc.reports.audit import AuditOptions, run_audit
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from evalarc.runtime.docker_backend import LIFETIME_SLACK_SECONDS
from evalarc.runtime.owner import OWNER_LABEL, sweep_work_folders

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")
SLOTS = 2
SEEDS = (17,)
ROOT_PID = os.getpid()
KILLED_CASE_TIMEOUT = 10
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
    signum = signal.Signals[name.rpartition("-")[2]]
    killed = signum == signal.SIGKILL
    watch = ContainerWatch()
    root = out / name
    temp, work = root / "tmp", root / "work"
    temp.mkdir(parents=True)
    work.mkdir()
    output = work / "audit"
    evalarc = Path(sys.executable).with_name("evalarc")
    process = subprocess.Popen(
        [str(evalarc), "audit", "--task", "durable-kv", "--seeds", *map(str, SEEDS), "--image",
         IMAGE, "--executor", "ray", "--ray-address", cluster.address, "--output", str(output),
         *(("--case-timeout", str(KILLED_CASE_TIMEOUT)) if killed else ())],
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
            # Signal while a case task runs (between two cases, on a loaded machine, none may
            # for a moment): what the checks below must see gone is a running case task.
            running = _case_tasks() if count >= 4 else []
            if running:
                result["recorded_before_signal"] = count
                result["case_tasks_before"] = running
                break
        time.sleep(0.05)
    # What the checks below must see gone: case tasks running and their containers.
    result.setdefault("case_tasks_before", _case_tasks())
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
    if killed:
        # Nobody cleans up after a SIGKILL: the containers must end by themselves by their
        # case deadline plus the slack (the lifetime their idle process sleeps).
        killed_at = time.monotonic()
        lifetime = killed_at + KILLED_CASE_TIMEOUT + LIFETIME_SLACK_SECONDS + 20
        result["containers_left"] = _until(lifetime, watch.existing)
        result["containers_gone_after"] = round(time.monotonic() - killed_at, 1)
        result["node_copies"] = _node_copies()
        # What a later EvalArc does: sweep its TMPDIR's work folders of dead owners, and (a
        # later Ray run, as it closes) sweep every slot node, here as if the copies had been
        # idle for COPY_IDLE_SECONDS already (no case holds them any more).
        result["swept_temp"] = sorted(path.name for path in sweep_work_folders(temp))
        result["temp_after_sweep"] = sorted(entry.name for entry in temp.iterdir())
        sweeper = ray.remote(ray_executor.sweep_node)
        ray.get([
            sweeper.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
                node, soft=False)).remote([], 0)
            for node in slot_node_ids()
        ], timeout=120)
        result["node_copies_after_sweep"] = _node_copies()
    else:
        result["containers_left"] = _until(settle, watch.existing)
        result["node_copies"] = _node_copies()
    watch.left()
    with (out / "results.jsonl").open("a") as stream:
        stream.write(json.dumps(result) + "\n")
    return result


def _node_copies() -> list[str]:
    """The nodes' snapshot copies (and staging folders) in the cluster's TMPDIR."""
    return sorted(
        entry.name
        for entry in Path(os.environ.get("TMPDIR", "/tmp")).iterdir()
        if entry.name.startswith("evalarc-worker-")
    )


def lying_run(task: str, blob: bytes, sha256: str, seed: int, case_id: str, *rest: Any) -> Any:
    """The real case run, then a lie: the first case's record claims the opposite status, the
    second case's transcript has its first response altered."""
    header, transcript = REAL_RUN(task, blob, sha256, seed, case_id, *rest)
    if case_id == "read-write-delete":
        header["record"] = {**header["record"], "status": "failed", "passed": False}
    if case_id == "json-types-and-overwrite":
        lines = transcript.splitlines(keepends=True)
        for number, line in enumerate(lines):
            event = json.loads(line)
            if event["event"] == "recv":
                event["line"] = '{"ok":false}'
                lines[number] = json.dumps(event, sort_keys=True, separators=(",", ":")) + "\n"
                break
        transcript = "".join(lines)
    return header, transcript


def substituting_run(liar: str, reference_blob: bytes, reference_sha256: str) -> Any:
    """A compromised node (``liar``, a Ray node id): for every case it runs the reference
    candidate instead and sends the reference's transcript under the candidate's snapshot
    (its header names the candidate, as a liar's would); every other node is honest."""

    def run(task: str, blob: bytes, sha256: str, seed: int, case_id: str, *rest: Any) -> Any:
        if ray.get_runtime_context().get_node_id() != liar:
            return REAL_RUN(task, blob, sha256, seed, case_id, *rest)
        header, transcript = REAL_RUN(
            task, reference_blob, reference_sha256, seed, case_id, *rest)
        return {**header, "candidate_sha256": sha256}, transcript

    return run


OVERSIZED_CASE = "json-types-and-overwrite"
OVERSIZED_BYTES = 300 * 1024 * 1024
STALLED_CASE = "read-write-delete"


def hostile_run(task: str, blob: bytes, sha256: str, seed: int, case_id: str, *rest: Any) -> Any:
    """An honest run but for two cases: one answers with a 300 MB transcript, one never
    returns."""
    if case_id == STALLED_CASE:
        time.sleep(10**6)
    header, transcript = REAL_RUN(task, blob, sha256, seed, case_id, *rest)
    if case_id == OVERSIZED_CASE:
        transcript = "x" * OVERSIZED_BYTES
        header["transcript_bytes"] = 10  # a liar's header: the host asks Ray instead
    return header, transcript


class RssWatch:
    """The peak resident memory of this (the host's) process while it runs, above its start."""

    def __init__(self) -> None:
        self.start = self._rss()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    @staticmethod
    def _rss() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(0.02)

    def growth(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak - self.start


def lying_reference_scenario(cluster: Cluster, out: Path) -> dict[str, Any]:
    """A faulty candidate evaluated while one node of three substitutes the reference's
    transcripts: without the sample (``--ray-verify-sample 0``) the lie decides cases and the
    folder verifies; with every case sampled the run is refused (exit 2, one line)."""
    from evalarc.packs import load_pack
    from evalarc.runtime.snapshot import snapshot_candidate

    pack_command = list(load_pack("durable-kv").default_command)
    reference = out / "liar-reference"
    materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=reference)
    candidate = out / "liar-candidate"
    materialize_workspace("durable-kv", "python", reference=True, fault=LIAR_FAULT,
                          dest=candidate)
    snapshot = snapshot_candidate(reference, out / "liar-reference-snapshot", pack_command)
    liar = sorted(slot_node_ids())[0]
    result: dict[str, Any] = {"scenario": "lying-reference", "liar": liar[:12]}
    ray_executor.run_case_on_node = substituting_run(
        liar, ray_executor.snapshot_blob(snapshot), snapshot.sha256)
    try:
        unsampled = run_evaluate(
            candidate, out / "lying-unsampled",
            EvaluateOptions(image=IMAGE, seeds=SEEDS, executor="ray",
                            ray_address=cluster.address, ray_verify_sample=0))
        result["unsampled"] = {"valid": unsampled.report["valid"],
                               "score": unsampled.report["score"]}
        started = time.monotonic()
        try:
            run_evaluate(
                candidate, out / "lying-sampled",
                EvaluateOptions(image=IMAGE, seeds=SEEDS, executor="ray",
                                ray_address=cluster.address, ray_verify_sample=15))
        except EnvironmentFailure as error:
            result["sampled_message"] = error.message
        else:
            result["sampled_message"] = "(not refused)"
        result["sampled_seconds"] = round(time.monotonic() - started, 1)
        result["sampled_published"] = (out / "lying-sampled").exists()
    finally:
        ray_executor.run_case_on_node = REAL_RUN
    with (out / "results.jsonl").open("a") as stream:
        stream.write(json.dumps(result) + "\n")
    return result


LIAR_FAULT = os.environ.get("EVALARC_TEST_LIAR_FAULT", "ack-without-work")


def hostile_scenario(cluster: Cluster, out: Path) -> dict[str, Any]:
    """The reference evaluated while one case's worker sends a 300 MB transcript and another's
    never returns (task deadline shortened to the case's 20 s, start-up 10 s, grace 10 s)."""
    workspace = out / "hostile-reference"
    materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace)
    result: dict[str, Any] = {"scenario": "hostile"}
    grace = ray_executor.TASK_GRACE_SECONDS
    ray_executor.TASK_GRACE_SECONDS = 10.0
    ray_executor.run_case_on_node = hostile_run
    watch = RssWatch()
    started = time.monotonic()
    try:
        evaluation = run_evaluate(
            workspace, out / "hostile",
            EvaluateOptions(image=IMAGE, seeds=SEEDS, executor="ray", case_timeout=20.0,
                            startup_timeout=10.0, ray_address=cluster.address))
    finally:
        ray_executor.run_case_on_node = REAL_RUN
        ray_executor.TASK_GRACE_SECONDS = grace
    result.update(
        seconds=round(time.monotonic() - started, 1),
        rss_growth=watch.growth(),
        valid=evaluation.report["valid"],
        notes=list(evaluation.notes),
        stalled_tasks=_until(time.monotonic() + 30, _stalled_tasks),
    )
    with (out / "results.jsonl").open("a") as stream:
        stream.write(json.dumps(result) + "\n")
    return result


def _stalled_tasks() -> list[str]:
    """Worker processes still sleeping in the stalled case (force-cancelled ones are killed)."""
    return [task for task in _case_tasks() if "run_case_on_node" in task]


def counted_run(log: Path) -> Any:
    """The real case run, each start logged (node, candidate, case) by the worker that runs it:
    how many tasks a case got and where they ran."""

    def run(task: str, blob: bytes, sha256: str, seed: int, case_id: str, *rest: Any) -> Any:
        node = ray.get_runtime_context().get_node_id()
        line = json.dumps({"node": node, "case": [sha256, seed, case_id]}) + "\n"
        with open(log, "a", encoding="utf-8") as stream:
            stream.write(line)
        return REAL_RUN(task, blob, sha256, seed, case_id, *rest)

    return run


def invocations(log: Path, slot_nodes: set[str]) -> dict[str, Any]:
    """What :func:`counted_run` logged: tasks started, the most any one case got, the nodes
    used and whether every one of them declares the slot resource."""
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    per_case: dict[str, int] = {}
    for entry in entries:
        key = json.dumps(entry["case"])
        per_case[key] = per_case.get(key, 0) + 1
    nodes = {entry["node"] for entry in entries}
    return {
        "tasks": len(entries),
        "cases": len(per_case),
        "most_per_case": max(per_case.values(), default=0),
        "nodes_used": len(nodes),
        "slot_nodes_only": nodes <= slot_nodes,
    }


def slot_node_ids() -> set[str]:
    return {
        node["NodeID"]
        for node in ray.nodes()
        if node.get("Resources", {}).get(ray_executor.SLOT_RESOURCE, 0) >= 1
    }


def other_evalarc(root: Path, version: str | None, grader_note: str | None) -> Path:
    """A folder that, first on a node's PYTHONPATH, installs another EvalArc there: a copy of
    this one with another distribution version, or with packs whose grader differs."""
    source = Path(ray_executor.__file__).resolve().parents[1]
    root.mkdir(parents=True)
    shutil.copytree(source / "evalarc", root / "evalarc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(source / "packs", root / "packs", ignore=shutil.ignore_patterns("__pycache__"))
    if version is not None:
        info = root / f"evalarc-{version}.dist-info"
        info.mkdir()
        metadata = f"Metadata-Version: 2.1\nName: evalarc\nVersion: {version}\n"
        (info / "METADATA").write_text(metadata)
    if grader_note is not None:
        with (root / "packs" / "durable-kv" / "durable_kv.py").open("a") as stream:
            stream.write(f"# {grader_note}\n")
    return root


def refused_scenario(cluster: Cluster, out: Path) -> dict[str, Any]:
    """Runs refused before any case runs: see the module doc. Leaves one good slot node."""
    watch = ContainerWatch()
    workspace = out / "refused-candidate"
    materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace)
    options = EvaluateOptions(image=IMAGE, seeds=SEEDS, executor="ray",
                              ray_address=cluster.address)
    messages: dict[str, str] = {}

    def attempt(name: str) -> None:
        try:
            run_evaluate(workspace, out / f"refused-{name}", options)
        except EnvironmentFailure as error:
            messages[name] = error.message
        else:
            messages[name] = "(not refused)"

    attempt("no-slot-node")
    cluster.add_node(num_cpus=1, resources={ray_executor.SLOT_RESOURCE: SLOTS})
    cluster.wait_for_nodes()
    bad_nodes = {
        "other-version": {"PYTHONPATH": str(other_evalarc(out / "evalarc-9", "9.9.9", None))},
        "other-grader": {"PYTHONPATH": str(other_evalarc(out / "evalarc-g", None, "changed"))},
        "remote-engine": {"DOCKER_HOST": "tcp://127.0.0.1:2376"},
    }
    for name, environment in bad_nodes.items():
        node = cluster.add_node(num_cpus=1, resources={ray_executor.SLOT_RESOURCE: SLOTS},
                                env_vars=environment)
        cluster.wait_for_nodes()
        attempt(name)
        cluster.remove_node(node)
        cluster.wait_for_nodes()
    result = {
        "scenario": "refused",
        "messages": messages,
        "published": sorted(entry.name for entry in out.iterdir()
                            if entry.name.startswith("refused-") and entry.is_dir()
                            and entry.name != "refused-candidate"),
        "containers_seen": len(watch.seen),
        "containers_left": watch.left(),
        "version": ray_executor.__version__,
    }
    with (out / "results.jsonl").open("a") as stream:
        stream.write(json.dumps(result) + "\n")
    return result


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
    options = AuditOptions(
        image=IMAGE,
        seeds=SEEDS,
        executor="ray",
        ray_address=cluster.address,
        retry_infrastructure=1 if name == "node-removed-retried" else 0,
        # No sample where a node is removed: the counts below are of first runs only.
        ray_verify_sample=0 if name.startswith("node-removed") else None,
    )
    log = out / f"invocations-{name}.jsonl"
    slot_nodes = slot_node_ids()
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
    elif name.startswith("node-removed"):
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
        ray_executor.run_case_on_node = counted_run(log)
        try:
            audit = run_audit(out / name, options, on_event=on_event)
        finally:
            ray_executor.run_case_on_node = REAL_RUN
        remover.join(timeout=5)
        result.update(valid=audit.audit["valid"], score=audit.audit.get("score"),
                      notes=list(audit.notes))
    else:
        ray_executor.run_case_on_node = counted_run(log)
        puts: list[int] = []
        real_put = ray.put

        def counted_put(value: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(value, bytes):  # a snapshot blob (nothing else is put as bytes)
                puts.append(len(value))
            return real_put(value, *args, **kwargs)

        ray.put = counted_put
        try:
            audit = run_audit(out / name, options)
        finally:
            ray_executor.run_case_on_node = REAL_RUN
            ray.put = real_put
        result.update(valid=audit.audit["valid"], notes=list(audit.notes), snapshot_puts=len(puts))
    if name != "lying-worker":
        result["invocations"] = invocations(log, slot_nodes)
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
        ray.init(address=cluster.address, log_to_driver=False)
        if "refused" in wanted:  # first: it starts with no slot node, and leaves one
            refused_scenario(cluster, out)
        else:
            cluster.add_node(num_cpus=1, resources={ray_executor.SLOT_RESOURCE: SLOTS})
            cluster.wait_for_nodes()
        for name in wanted:
            if name == "refused":
                continue
            if name.startswith(("cancel-", "kill-")):
                cancel_scenario(cluster, name, out)
                continue
            if name in ("lying-reference", "hostile"):
                while len(cluster.list_all_nodes()) < 4:  # the head and 3 slot nodes
                    cluster.add_node(num_cpus=1, resources={ray_executor.SLOT_RESOURCE: SLOTS})
                cluster.wait_for_nodes()
                (lying_reference_scenario if name == "lying-reference" else hostile_scenario)(
                    cluster, out)
                continue
            if name != "one-node" and len(cluster.list_all_nodes()) < 4:
                while len(cluster.list_all_nodes()) < 4:  # the head and 3 slot nodes
                    cluster.add_node(num_cpus=1, resources={ray_executor.SLOT_RESOURCE: SLOTS})
                cluster.wait_for_nodes()
                time.sleep(1)
            scenario(cluster, name, out)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
