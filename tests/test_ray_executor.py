"""``--executor ray`` on a real local multi-node Ray cluster with the real Docker engine.

The cluster runs in ``tests/ray_cluster_driver.py`` inside a network namespace of its own
(``unshare -n``, only loopback up), so every Ray port is on loopback and reachable from nowhere
else, with Ray's token authentication on. One driver run covers every scenario (starting a
cluster costs tens of seconds on the shared 2-core machine):

* the durable-kv audit on 1 and on 3 slot nodes gives the same audit as ``--jobs`` here;
* workers that lie (a record that contradicts its transcript, a tampered transcript): the host
  re-derives every verdict, rejects both cases (environment failures), and ``verify`` accepts
  the folder;
* a node removed mid-audit: its cases become environment failures, the audit is invalid with a
  null score, ``verify`` accepts the folder, and no container of the cluster is left.

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
SCENARIOS = ("one-node", "three-nodes", "lying-worker", "node-removed")
TIMING = ("created_at", "evaluation_seconds", "duration_seconds", "recording_sha256")


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


def _audit(folder: Path) -> Any:
    return json.loads((folder / "audit.json").read_text())


def _verify(folder: Path) -> subprocess.CompletedProcess[str]:
    evalarc = Path(sys.executable).with_name("evalarc")
    return subprocess.run(
        [str(evalarc), "verify", str(folder)], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("scenario", ["one-node", "three-nodes"])
def test_ray_audit_is_the_jobs_audit(
    cluster_runs: dict[str, Any], threads_audit: Path, scenario: str
) -> None:
    folder = cluster_runs["out"] / scenario
    result = cluster_runs["results"][scenario]
    assert result["valid"] is True and result["notes"] == []
    assert _without_timing(_audit(folder)) == _without_timing(_audit(threads_audit))
    params = json.loads((folder / "params.json").read_text())
    assert params["executor"] == "ray"
    assert "127.0.0.1" not in (folder / "params.json").read_text()
    assert _verify(folder).returncode == 0
    assert result["containers_left"] == []


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


def test_a_node_removed_mid_audit_makes_its_cases_invalid(cluster_runs: dict[str, Any]) -> None:
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
    verified = _verify(folder)
    assert verified.returncode == 0, verified.stderr
    assert "records are consistent" in verified.stdout and "gate is failing" in verified.stdout
    assert result["containers_left"] == []


def _occurs(needle: str, text: str) -> bool:
    """Whether ``needle`` occurs in ``text`` as a token of its own (a short host name such as
    ``vm`` must not match inside a longer word)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(needle)}(?![A-Za-z0-9_])", text) is not None


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_nothing_of_the_cluster_or_machine_is_published(
    cluster_runs: dict[str, Any], scenario: str
) -> None:
    """The cluster's address, node ids and host names, the session and temporary folders and
    the checkout's path appear in no file of a folder made with --executor ray; the executor
    is recorded only as the informational ``executor`` option."""
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
