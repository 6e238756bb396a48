"""durable-kv through the real Docker engine: the references, the 8 declared faults and the CLI.

Needs a running engine and the local images named by ``EVALARC_TEST_IMAGE`` (default
``evalarc-python:local``) and ``EVALARC_TEST_NODE_IMAGE`` (default ``evalarc-node:local``);
``bash scripts/docker_setup.sh`` provides all three. Without them these tests fail, never skip.
The expected hashes and scores are the values the reference EvalArc recorded at seed 17.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from evalarc.packs import load_pack, materialize_workspace
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from evalarc.runtime.docker_backend import BACKEND_LABEL

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")
NODE_IMAGE = os.environ.get("EVALARC_TEST_NODE_IMAGE", "evalarc-node:local")
PACK = load_pack("durable-kv")
SEED17_CASES_SHA256 = "842a16a1e65700cde92ee5f5aaaa10d494a9fc9d71bd2d99fb68147b19aad63a"
SEED17_TRANSCRIPTS = {
    "read-write-delete": "c809eed26dc56583f9385d7d4adca2d981d06a672dc1ccbc0ffc52aa228b86f7",
    "json-types-and-overwrite":
        "83f6377f4b57ac659e8162136107ca644158ee089c944892aa9817085e74bd60",
    "reject-and-continue": "d4e0c26837f54e0af94d4909e3cab21d86dedca8c8842d0daae9e7471198c2a0",
    "empty-and-unicode-keys": "e8abe374fc308ce0744e96d2920495b96bda3b026cec9b86fa055023e1e4e620",
    "commit-batch": "ac21f2f6bcc47e3c807fa4ed72300af0f5ef39809ba17f93423e37a0e177e718",
    "rollback-batch": "1786c093ba29dcad562531a44cdbe5fddbed9d3f4632c1c6ddfe736baa240f35",
    "cas-match-and-mismatch": "ecd6148f6f387b4ef5351b877afd4cf27ea2a04c4253a34220fd78de5442d89f",
    "cas-type-sensitivity": "459a5b74588217d8abcf8e138eb559364a1d01d1f23e8c43ca0127ba28240258",
    "restart-preserves-acknowledged-write":
        "c97b82c67f26a1aa2fdc8ac57f50690dbbe13554d094059ffe6690a592df3a55",
    "restart-preserves-transaction":
        "2d1f704df309d49f8e6e89e674581af2cf81aa22fdde633058e2f2d7b8c8a430",
    "sigkill-after-acknowledgement":
        "544c6be916371ed5a0e901394c5e293733ca84e0ad20079a952f9c4b2821a728",
    "sigkill-after-atomic-batch":
        "2d1f704df309d49f8e6e89e674581af2cf81aa22fdde633058e2f2d7b8c8a430",
    "restart-preserves-cas": "149c04fd1366e77603e631349740ae38bdff40aa69f6eb4c738979eb13bf3f49",
    "sigkill-after-delete": "b3dba7f28e6629bb22f49b0439e0f74580ca3263dd98e16061ac9a8f680b5df7",
    "seeded-state-machine": "2a7e5ad4bedce67faf4d53f289c3a1a7304345a0167b287418fdf7dd411030f8",
}
# Recorded seed-17 scores of the declared faults (durable-kv spec §5), independent of pack.toml.
SEED17_FAULT_SCORES = {
    "ack-without-work": 0.0,
    "memory-only": 0.78333333,
    "partial-batch": 0.9,
    "cas-always-wins": 0.85,
    "boolean-equals-one": 0.925,
    "delete-noop": 0.65,
    "accept-nonstring-keys": 0.925,
    "commit-on-exit": 0.9,
}
FAULT_WORKERS = 4
"""Fault evaluations run side by side: each is Docker round trips, not host CPU."""


def _containers_under(engine: Any, root: Path) -> list[str]:
    """EvalArc containers (any backend) that bind-mount something below ``root``."""
    names: list[str] = []
    # The low-level listing carries the mounts, so no container is inspected after it is gone.
    for container in engine.api.containers(all=True, filters={"label": BACKEND_LABEL}):
        mounts = container.get("Mounts") or []
        if any(str(mount.get("Source", "")).startswith(str(root)) for mount in mounts):
            names.extend(container.get("Names") or [container["Id"]])
    return names


def _workspace(dest: Path, language: str = "python", fault: str | None = None) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    materialize_workspace("durable-kv", language, reference=True, fault=fault,
                          dest=dest, contract=False)
    return dest


def _evaluate(root: Path, workspace: Path, image: str) -> dict[str, Any]:
    """run_evaluate on Docker at seed 17 with every temporary folder under ``root``."""
    temp = root / "tmp"
    temp.mkdir(parents=True)
    options = EvaluateOptions(image=image, seeds=(17,))
    result = run_evaluate(workspace, root / "report", options, temp_root=temp)
    assert list(temp.iterdir()) == []
    return result.report


@pytest.mark.parametrize(("language", "image"), [("python", IMAGE), ("javascript", NODE_IMAGE)])
def test_reference_reproduces_the_recorded_seed17_run_in_docker(
        engine: Any, tmp_path: Path, language: str, image: str) -> None:
    report = _evaluate(tmp_path, _workspace(tmp_path / "ws", language), image)
    assert report["cases_sha256"] == SEED17_CASES_SHA256
    assert {case["case_id"]: case["transcript_sha256"] for case in report["cases"]} == \
        SEED17_TRANSCRIPTS
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        True, "passed", 1.0, True)
    runtime = report["runtime"]
    assert (runtime["backend"], runtime["image"]) == ("docker", image)
    assert runtime["image_id"] == engine.images.get(image).id
    for case in report["cases"]:
        plans = {c.case_id: c for c in PACK.grader.generate_cases(17)}[case["case_id"]].sessions
        assert len(case["processes"]) == len(plans)
        for process, plan in zip(case["processes"], plans, strict=True):
            if plan.stop == "eof":
                assert process["exit_code"] == 0
            else:
                assert process["exit_code"] != 0  # killed right after the acknowledgement
            assert process["output_bytes"] > 0
    assert _containers_under(engine, tmp_path) == []


@pytest.fixture(scope="module")
def fault_reports(engine: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """All 8 faulty Python references evaluated through Docker at seed 17, side by side."""
    root = tmp_path_factory.mktemp("faults")

    def run(name: str) -> dict[str, Any]:
        return _evaluate(root / name, _workspace(root / name / "ws", fault=name), IMAGE)

    with ThreadPoolExecutor(max_workers=FAULT_WORKERS) as pool:
        reports = dict(zip(SEED17_FAULT_SCORES, pool.map(run, SEED17_FAULT_SCORES), strict=True))
    assert _containers_under(engine, root) == []
    return reports


def test_every_declared_fault_is_covered(fault_reports: dict[str, Any]) -> None:
    assert sorted(fault_reports) == sorted(fault.name for fault in PACK.faults)


@pytest.mark.parametrize("fault", list(SEED17_FAULT_SCORES))
def test_declared_fault_gets_its_recorded_score_in_docker(
        fault_reports: dict[str, Any], fault: str) -> None:
    report = fault_reports[fault]
    declared = PACK.fault(fault)
    assert report["valid"] is True and report["runtime"]["backend"] == "docker"
    assert report["score"] == SEED17_FAULT_SCORES[fault]
    assert (report["resolved"], report["status"]) == (False, "failed")
    assert report["cases_sha256"] == SEED17_CASES_SHA256
    failing_in_target = sorted(
        case["case_id"] for case in report["cases"]
        if case["checks"].get(declared.target_dimension) is False
    )
    assert failing_in_target == list(declared.expected_seed17_failing)


# -- the CLI end to end ----------------------------------------------------------------------


def _cli_env(temp: Path) -> dict[str, str]:
    temp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(temp)}


def _evaluate_cli(tmp_path: Path, workspace: Path, output: str,
                  *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "evaluate", str(workspace), "--image", IMAGE,
         "--seeds", "17", "--output", output, *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env=_cli_env(tmp_path / "tmp"),
    )


def test_cli_exit_codes_for_reference_and_fault(engine: Any, tmp_path: Path) -> None:
    reference = _workspace(tmp_path / "ref")
    done = _evaluate_cli(tmp_path, reference, "out-ref")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Score: 1.0000 | Status: passed | Resolved: true\nout-ref\n"
    assert len(done.stderr.splitlines()) == 16  # the start line and one line per case

    fault = _workspace(tmp_path / "fault", fault="boolean-equals-one")
    done = _evaluate_cli(tmp_path, fault, "out-fault", "--quiet")
    assert done.returncode == 1, done.stderr
    assert done.stdout == "Score: 0.9250 | Status: failed | Resolved: false\nout-fault\n"
    assert done.stderr == ""

    for name, resolved in (("out-ref", True), ("out-fault", False)):
        folder = tmp_path / name
        report = json.loads((folder / "evaluation.json").read_text())
        assert report["resolved"] is resolved
        assert report["runtime"]["image"] == IMAGE
        assert report["runtime"]["image_id"].startswith("sha256:")
        assert len(list((folder / "recordings").glob("*.jsonl"))) == 15
        params = json.loads((folder / "params.json").read_text())
        assert (params["backend"], params["image"], params["seeds"]) == ("docker", IMAGE, [17])
    assert list((tmp_path / "tmp").iterdir()) == []
    assert _containers_under(engine, tmp_path) == []


def test_cli_missing_image_is_a_setup_error(engine: Any, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "evaluate", str(_workspace(tmp_path / "ws")),
         "--image", "evalarc-missing:never", "--output", "out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=_cli_env(tmp_path / "tmp"),
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "evalarc: Docker image 'evalarc-missing:never' is not available locally; EvalArc never "
        "pulls")
    assert not (tmp_path / "out").exists() and list((tmp_path / "tmp").iterdir()) == []


def test_cli_ctrl_c_removes_containers_and_staged_output(engine: Any, tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "evalarc.cli", "evaluate", str(_workspace(tmp_path / "ws")),
         "--image", IMAGE, "--seeds", "17", "41", "97", "--output", "out"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_cli_env(tmp_path / "tmp"),
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    assert first.startswith("Evaluating candidate "), first
    # Interrupt while a case container is running.
    deadline = time.monotonic() + 120
    while not _containers_under(engine, tmp_path / "tmp"):
        assert time.monotonic() < deadline and process.poll() is None, "no container appeared"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert stdout == ""
    assert stderr.splitlines()[-1] == "evalarc: cancelled"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp", "ws"]  # no output, no staging
    assert list((tmp_path / "tmp").iterdir()) == []
    assert _containers_under(engine, tmp_path) == []
