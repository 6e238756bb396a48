"""``--executor ray`` on a real local multi-node Ray cluster with the real Docker engine.

The cluster runs in ``tests/ray_cluster_driver.py`` inside a network namespace of its own
(``unshare -n``, only loopback up), so every Ray port is on loopback and reachable from nowhere
else, with Ray's token authentication on. One driver run covers every scenario (starting a
cluster costs tens of seconds on the shared 2-core machine):

* runs that cannot work are refused before any case runs, with a one-line message naming the
  node: no node declares the slot resource; a node has another EvalArc version, another
  grader, or a Docker engine that is not a unix:// socket;
* the durable-kv audit on 1 and on 3 slot nodes gives the same audit as ``--jobs`` here (what
  "same" compares: :func:`test_ray_audit_is_the_jobs_audit`), one Ray task per case, on slot
  nodes only;
* workers that lie (a record that contradicts its transcript, a tampered transcript): the host
  re-derives every verdict, rejects both cases (environment failures), and ``verify`` accepts
  the folder;
* a node removed mid-audit: its cases become environment failures (never silently re-run), the
  audit is invalid with a null score, every other case is the one ``--jobs`` gives, ``verify``
  accepts the folder, and no container of the cluster is left;
* the same with ``--retry-infrastructure 1``: each lost case runs once more, every lost attempt
  is in events.jsonl, and the audit is the ``--jobs`` audit, valid, which ``verify`` accepts.

Needs Docker, the image ``EVALARC_TEST_IMAGE`` (default ``evalarc-python:local``), Ray (the
``ray`` extra), ``unshare`` and ``ip`` (root). Without them these tests fail, never skip.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalarc.ray_executor import LOST, REJECTED
from evalarc.reports.audit import AuditOptions, run_audit

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.ray]

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")
DRIVER = Path(__file__).resolve().parent / "ray_cluster_driver.py"
SCENARIOS = ("refused", "one-node", "three-nodes", "lying-worker", "node-removed",
             "node-removed-retried")
FOLDERS = ("one-node", "three-nodes", "lying-worker", "node-removed", "node-removed-retried")
TIMING = ("created_at", "evaluation_seconds", "duration_seconds", "recording_sha256")
"""What differs between two runs of the same audit: when it ran and how long each case took
(``recording_sha256`` hashes a transcript with its timings; ``transcript_sha256``, without
them, is compared)."""
HOW_IT_RAN = ("jobs", "executor", "ray_nodes", "ray_slots", "ray_verify_sample",
              "retry_infrastructure")
"""The params.json options that say how the cases ran, not what was measured."""


def _ray_environment() -> dict[str, str]:
    import ray

    environment = {**os.environ, "EVALARC_TEST_IMAGE": IMAGE}
    environment.pop("RAY_ADDRESS", None)
    major, minor = (int(part) for part in ray.__version__.split(".")[:2])
    if (major, minor) >= (2, 52):  # token authentication for every Ray connection
        environment["RAY_AUTH_MODE"] = "token"
        environment["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    return environment


@pytest.fixture(scope="module")
def cluster_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing (apt-get install util-linux iproute2)", pytrace=False)
    out = tmp_path_factory.mktemp("ray")
    script = 'ip link set lo up && exec "$@"'
    completed = subprocess.run(
        ["unshare", "--net", "sh", "-c", script, "sh", sys.executable, str(DRIVER), str(out),
         *SCENARIOS],
        cwd=out,
        env=_ray_environment(),
        capture_output=True,
        text=True,
        timeout=3000,
        check=False,
    )
    results_file = out / "results.jsonl"
    results = {}
    if results_file.exists():
        for line in results_file.read_text().splitlines():
            entry = json.loads(line)
            results[entry["scenario"]] = entry
    if completed.returncode != 0 or set(results) != set(SCENARIOS):
        pytest.fail(
            f"the Ray driver exited {completed.returncode}: {completed.stderr[-3000:]}",
            pytrace=False,
        )
    return {"out": out, "results": results}


@pytest.fixture(scope="module")
def threads_audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("threads") / "audit"
    run_audit(out, AuditOptions(image=IMAGE, seeds=(17,), jobs=4))
    return out


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_timing(item) for key, item in value.items() if key not in TIMING}
    if isinstance(value, list):
        return [_without_timing(item) for item in value]
    return value


RETRIES = ("retry_infrastructure", "attempts", "failed_attempts")
"""What a run with --retry-infrastructure adds to its evaluations."""


def _without(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {key: _without(item, keys) for key, item in value.items() if key not in keys}
    if isinstance(value, list):
        return [_without(item, keys) for item in value]
    return value


def _audit(folder: Path) -> Any:
    return json.loads((folder / "audit.json").read_text())


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _records(folder: Path) -> dict[tuple[str, int, str], Any]:
    """Every case record of an audit folder by (control, seed, case id), timings removed."""
    return {
        (path.stem, case["seed"], case["case_id"]): _without_timing(case)
        for path in sorted((folder / "evaluations").glob("*.json"))
        for case in _json(path)["cases"]
    }


def _run_keys(index: dict[str, Any]) -> list[str]:
    """The run keys a recordings index lists (each names its recording, whose bytes hold
    timings)."""
    return sorted(
        json.dumps({key: value for key, value in entry.items() if key != "recording"},
                   sort_keys=True)
        for entry in index["entries"]
    )


def test_runs_that_cannot_work_are_refused_before_any_case(cluster_runs: dict[str, Any]) -> None:
    result = cluster_runs["results"]["refused"]
    messages = result["messages"]
    assert messages["no-slot-node"].startswith(
        "no node of the Ray cluster declares the resource evalarc_slot: start the nodes"
    ), messages
    node = r"Ray node [0-9a-f]{12} "
    assert re.fullmatch(
        node + rf"runs EvalArc 9\.9\.9, this host {re.escape(result['version'])}: install the "
        "same version on every node", messages["other-version"]), messages
    assert re.fullmatch(
        node + r"has grader [0-9a-f]{12} for durable-kv, this host [0-9a-f]{12}: install the "
        "same packs everywhere", messages["other-grader"]), messages
    assert re.fullmatch(
        node + "cannot run cases: DOCKER_HOST=tcp://127.0.0.1:2376 is not a local engine: .*",
        messages["remote-engine"]), messages
    assert all("\n" not in message for message in messages.values())
    # Refused before any case ran: no folder, no case container.
    assert result["published"] == [] and result["containers_seen"] == 0


def _verify(folder: Path) -> subprocess.CompletedProcess[str]:
    evalarc = Path(sys.executable).with_name("evalarc")
    return subprocess.run(
        [str(evalarc), "verify", str(folder)], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize(("scenario", "nodes"), [("one-node", 1), ("three-nodes", 3)])
def test_ray_audit_is_the_jobs_audit(
    cluster_runs: dict[str, Any], threads_audit: Path, scenario: str, nodes: int
) -> None:
    """"Same" is: audit.json and every evaluations/*.json equal once the timings (TIMING) are
    removed, the recordings index lists the same run keys (the same runtime fingerprint), and
    params.json is equal but for how the cases ran (HOW_IT_RAN): ``jobs`` here, ``executor``,
    ``ray_nodes`` and ``ray_slots`` on Ray."""
    folder = cluster_runs["out"] / scenario
    result = cluster_runs["results"][scenario]
    assert result["valid"] is True and result["notes"] == []
    assert _without_timing(_audit(folder)) == _without_timing(_audit(threads_audit))
    assert _records(folder) == _records(threads_audit) and len(_records(folder)) == 9 * 15
    index, threads_index = (
        _json(path / "recordings" / "index.json") for path in (folder, threads_audit))
    assert index["runtimes"] == threads_index["runtimes"]
    assert _run_keys(index) == _run_keys(threads_index) and len(_run_keys(index)) == 9 * 15
    params, threads_params = (_json(path / "params.json") for path in (folder, threads_audit))
    assert re.fullmatch("[0-9a-f]{32}", params.pop("ray_sample_seed"))
    assert {key: params.pop(key) for key in HOW_IT_RAN if key in params} == {
        "executor": "ray", "ray_nodes": nodes, "ray_slots": 2 * nodes, "ray_verify_sample": 4}
    assert threads_params.pop("jobs") == 4 and "executor" not in threads_params
    assert params == threads_params
    assert "127.0.0.1" not in (folder / "params.json").read_text()
    assert _verify(folder).returncode == 0
    assert result["containers_left"] == []
    # Each control's snapshot went into the object store once; one Ray task per case and one
    # more for each of the 4 sampled cases, only on nodes that declare the slot resource, on
    # every node.
    assert result["snapshot_puts"] == 9
    assert result["invocations"] == {"tasks": 9 * 15 + 4, "cases": 9 * 15, "most_per_case": 2,
                                     "nodes_used": nodes, "slot_nodes_only": True}
    # Every case names the node that ran it; the 4 sampled ones the node that re-ran them
    # (another node when there is one).
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    completed = [event for event in events if event["event"] == "case_completed"]
    assert {event["ray_node"] for event in completed} == set(range(1, nodes + 1))
    reruns = [event for event in completed if "ray_rerun_node" in event]
    assert len(reruns) == 4
    assert all((event["ray_rerun_node"] != event["ray_node"]) == (nodes > 1) for event in reruns)


def test_a_lying_worker_is_caught_by_the_host(cluster_runs: dict[str, Any]) -> None:
    folder = cluster_runs["out"] / "lying-worker"
    result = cluster_runs["results"]["lying-worker"]
    report = json.loads((folder / "evaluation.json").read_text())
    assert report["valid"] is False and report["score"] is None
    cases = {case["case_id"]: case for case in report["cases"]}
    contradicted = cases["read-write-delete"]
    assert contradicted["status"] == "environment_error"
    assert contradicted["checks"] == {contradicted["dimension"]: None}
    assert contradicted["error"].startswith(f"{REJECTED}: the worker's record contradicts")
    tampered = cases["json-types-and-overwrite"]
    assert tampered["status"] == "environment_error"
    assert tampered["error"].startswith(f"{REJECTED}: ")
    others = [case for case_id, case in cases.items()
              if case_id not in ("read-write-delete", "json-types-and-overwrite")]
    assert others and all(case["status"] == "passed" for case in others)
    assert len(result["notes"]) == 2
    verified = _verify(folder)  # the folder is consistent evidence of an invalid evaluation
    assert verified.returncode == 0, verified.stderr
    assert "records are consistent" in verified.stdout and "gate is failing" in verified.stdout


def test_a_node_removed_mid_audit_makes_its_cases_invalid(
    cluster_runs: dict[str, Any], threads_audit: Path
) -> None:
    folder = cluster_runs["out"] / "node-removed"
    result = cluster_runs["results"]["node-removed"]
    audit = _audit(folder)
    assert result["removed_after"] >= 20
    assert audit["valid"] is False and audit["mutation_score"] is None
    evaluations = [
        json.loads(path.read_text()) for path in sorted((folder / "evaluations").glob("*.json"))
    ]
    lost = [
        case
        for evaluation in evaluations
        for case in evaluation["cases"]
        if case["status"] == "environment_error"
    ]
    assert lost and all(case["error"].startswith(LOST) for case in lost)
    assert all(case["checks"] == {case["dimension"]: None} for case in lost)
    assert all(evaluation["score"] is None for evaluation in evaluations
               if any(case in lost for case in evaluation["cases"]))
    kept = [
        case
        for evaluation in evaluations
        for case in evaluation["cases"]
        if case["status"] != "environment_error"
    ]
    assert len(kept) > len(lost)
    assert len(result["notes"]) == len(lost)
    # Every other case is kept as --jobs makes it; no lost case was run again behind our back.
    threads = _records(threads_audit)
    records = _records(folder)
    assert {key: record for key, record in records.items()
            if record["status"] != "environment_error"} == {
        key: threads[key] for key, record in records.items()
        if record["status"] != "environment_error"}
    assert result["invocations"]["most_per_case"] == 1
    assert result["invocations"]["slot_nodes_only"] is True
    verified = _verify(folder)
    assert verified.returncode == 0, verified.stderr
    assert "records are consistent" in verified.stdout and "gate is failing" in verified.stdout
    assert result["containers_left"] == []


def test_retry_infrastructure_reruns_the_lost_cases(
    cluster_runs: dict[str, Any], threads_audit: Path
) -> None:
    folder = cluster_runs["out"] / "node-removed-retried"
    result = cluster_runs["results"]["node-removed-retried"]
    assert result["removed_after"] >= 20
    lost = [note for note in result["notes"] if LOST in note]
    assert lost and len(lost) == len(result["notes"])
    # Each lost case ran once more, on a node still there, and passed as under --jobs: the
    # same audit but for what the retries add to each evaluation (RETRIES).
    assert result["valid"] is True
    assert _without(_without_timing(_audit(folder)), RETRIES) == _without_timing(
        _audit(threads_audit))
    records = _records(folder)
    assert {key: _without(record, RETRIES) for key, record in records.items()} == _records(
        threads_audit)
    # Each evaluation states the retries, each case its attempts, and each case that ran again
    # its failed attempt: the loss, with the recording of that fault.
    evaluations = [_json(path) for path in sorted((folder / "evaluations").glob("*.json"))]
    assert all(evaluation["retry_infrastructure"] == 1 for evaluation in evaluations)
    cases = [case for evaluation in evaluations for case in evaluation["cases"]]
    again = [case for case in cases if case["attempts"] == 2]
    assert len(again) == len(lost)
    assert all(len(record["failed_attempts"]) == 1
               and record["failed_attempts"][0]["error"].startswith(LOST)
               and (folder / "recordings" /
                    f"{record['failed_attempts'][0]['recording_sha256']}.jsonl").is_file()
               for record in again)
    assert all(case["attempts"] == 1 and "failed_attempts" not in case
               for case in cases if case not in again)
    invocations = result["invocations"]
    assert invocations["cases"] == 9 * 15 and invocations["most_per_case"] == 2
    assert invocations["tasks"] <= 9 * 15 + len(lost)
    # Every lost attempt is in events.jsonl: a case_retried with the loss, then the next attempt.
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    retried = [event for event in events if event["event"] == "case_retried"]
    assert len(retried) == len(lost)
    assert all(event["attempt"] == 1 and event["error"].startswith(LOST) for event in retried)
    completed = {(event["control"], event["seed"], event["case_id"]): event.get("attempt")
                 for event in events if event["event"] == "case_completed"}
    assert all(completed[(event["control"], event["seed"], event["case_id"])] == 2
               for event in retried)
    assert _json(folder / "params.json")["retry_infrastructure"] == 1
    verified = _verify(folder)
    assert verified.returncode == 0, verified.stderr
    assert "records are consistent" in verified.stdout
    assert result["containers_left"] == []


def _occurs(needle: str, text: str) -> bool:
    """Whether ``needle`` occurs in ``text`` as a token of its own (a short host name such as
    ``vm`` must not match inside a longer word)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(needle)}(?![A-Za-z0-9_])", text) is not None


@pytest.mark.parametrize("scenario", FOLDERS)
def test_nothing_of_the_cluster_or_machine_is_published(
    cluster_runs: dict[str, Any], scenario: str
) -> None:
    """The cluster's address, node ids and host names, the session and temporary folders and
    the checkout's path appear in no file of a folder made with --executor ray; the executor
    is recorded only by the informational ``executor``, ``ray_nodes`` and ``ray_slots``
    options (counts, not names)."""
    folder = cluster_runs["out"] / scenario
    machine = cluster_runs["results"][scenario]["machine"]
    assert any(len(value) == 56 for value in machine)  # node ids are among them
    files = [path for path in sorted(folder.rglob("*")) if path.is_file()]
    assert len(files) > 10
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        found = [value for value in machine if _occurs(value, text)]
        assert found == [], f"{path.relative_to(folder)} holds {found}"
        assert "/tmp/" not in text and "evalarc-worker-" not in text, path
    params = json.loads((folder / "params.json").read_text())
    assert params["executor"] == "ray"
    assert not {"ray_address", "address", "nodes", "hosts"} & set(params)
    # How it ran, as counts only.
    assert isinstance(params["ray_nodes"], int) and isinstance(params["ray_slots"], int)
