"""Ctrl-C, SIGTERM and SIGKILL during an ``evalarc audit --executor ray``: nothing published,
nothing left for long.

A real ``evalarc`` process (its own process group and empty TMPDIR, its output in an empty
folder) runs the durable-kv audit on a real local Ray cluster (``tests/ray_cluster_driver.py``,
inside a network namespace of its own: every Ray port on loopback, token authentication) with
the real Docker engine. Once its staged folder holds a few recordings, so cases are done and
others are running on the node, it gets SIGINT (to the whole group, as Ctrl-C sends it) or
SIGTERM (to the process, as ``kill`` sends it). Then, within bounded waits: exit 130 and
"evalarc: cancelled"; no output folder and no staging folder beside it; an empty TMPDIR; no
process of its group; no case container of the cluster's workers; no Ray worker still running
an EvalArc task; no node copy of a snapshot.

SIGKILL (the driver crashes): nothing is published; Ray ends the dead driver's case tasks; the
case containers end by themselves within their lifetime (case deadline plus slack) with no
EvalArc sweeping them; a later EvalArc's sweeps remove the work folder it left in TMPDIR and the
nodes' snapshot copies (no case holds them any more). Its hidden staging folder beside the
output stays (nothing removes it).

Needs what ``tests/test_ray_executor.py`` needs; without it these tests fail, never skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from test_ray_executor import DRIVER, _ray_environment

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.ray]

SCENARIOS = ("cancel-SIGINT", "cancel-SIGTERM", "kill-SIGKILL")


@pytest.fixture(scope="module")
def cancelled_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing (apt-get install util-linux iproute2)", pytrace=False)
    out = tmp_path_factory.mktemp("ray-cancel")
    # The cluster's own temporary folder (Ray's session files, the nodes' snapshot copies):
    # short, because Ray puts unix sockets in it, and private, so leftovers are seen.
    nodes_temp = Path(tempfile.mkdtemp(prefix="evr-", dir="/tmp"))
    try:
        completed = subprocess.run(
            ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
             sys.executable, str(DRIVER), str(out), *SCENARIOS],
            cwd=out,
            env={**_ray_environment(), "TMPDIR": str(nodes_temp)},
            capture_output=True,
            text=True,
            timeout=2400,
            check=False,
        )
    finally:
        shutil.rmtree(nodes_temp, ignore_errors=True)
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
    return results


@pytest.mark.parametrize("scenario", SCENARIOS[:2])
def test_a_signal_mid_audit_cancels_everything(
    cancelled_runs: dict[str, Any], scenario: str
) -> None:
    result = cancelled_runs[scenario]
    assert result["delivered"] and result["recorded_before_signal"] >= 4, result
    assert result["case_tasks_before"] and result["containers_before"] > 0, result
    assert result["hung"] is False, result
    assert result["code"] == 130, result
    assert result["stderr"].strip().endswith("evalarc: cancelled"), result
    assert result["left"] == [], result  # no output folder, no staging folder beside it
    assert result["temp"] == [], result
    assert result["group_alive"] is False, result
    assert result["containers_left"] == [], result
    assert result["case_tasks"] == [], result
    assert result["node_copies"] == [], result


def test_a_killed_driver_publishes_nothing_and_its_leftovers_go(
    cancelled_runs: dict[str, Any],
) -> None:
    result = cancelled_runs["kill-SIGKILL"]
    assert result["delivered"] and result["recorded_before_signal"] >= 4, result
    assert result["case_tasks_before"] and result["containers_before"] > 0, result
    assert result["code"] == -9, result
    # Nothing published: only the hidden staging folder a SIGKILL leaves beside the output.
    assert [name for name in result["left"] if not name.startswith(".audit.")] == [], result
    assert all(name.endswith(".partial") for name in result["left"]), result
    assert result["case_tasks"] == [], result  # Ray ended the dead driver's tasks
    assert result["containers_left"] == [], result  # each ended by its own lifetime
    assert result["node_copies"], result  # the killed run could not remove them itself
    assert len(result["swept_temp"]) == 1 and result["swept_temp"][0].startswith(
        "evalarc-audit-"), result
    assert result["temp_after_sweep"] == [], result
    assert result["node_copies_after_sweep"] == [], result
