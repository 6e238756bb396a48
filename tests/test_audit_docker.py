"""``evalarc audit`` live in Docker: the three packs' seed-17 tables in both languages, the
agreement of those live runs with the bundled recordings, and Ctrl-C.

Needs a running engine and the local images ``evalarc-python:local`` and ``evalarc-node:local``
(``bash scripts/docker_setup.sh``); without them these tests fail, never skip.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalarc.reports.audit import AuditOptions, run_audit
from evalarc.runtime.docker_backend import BACKEND_LABEL

pytestmark = pytest.mark.docker

IMAGES = {"python": os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local"),
          "javascript": os.environ.get("EVALARC_TEST_NODE_IMAGE", "evalarc-node:local")}
# Seed 17 live: declared, detected, weakest margin, caught by a single case, sole detectors.
TABLES = {
    "durable-kv": (8, 8, 1, ["accept-nonstring-keys", "boolean-equals-one", "partial-batch"],
                   ["cas-type-sensitivity", "reject-and-continue", "rollback-batch"]),
    "support-routing": (7, 7, 1, ["new-key-on-retry", "skip-retry"],
                        ["retry-after-commit", "retry-before-commit"]),
    "robot-evidence-review": (6, 6, 1, ["assume-complete"], ["incomplete-recording"]),
}
VOLATILE = {"created_at", "duration_seconds", "evaluation_seconds", "recording_sha256",
            "image_id", "python", "platform", "stderr_tail"}


def _containers_under(engine: Any, root: Path) -> list[str]:
    names: list[str] = []
    for container in engine.api.containers(all=True, filters={"label": BACKEND_LABEL}):
        mounts = container.get("Mounts") or []
        if any(str(mount.get("Source", "")).startswith(str(root)) for mount in mounts):
            names.extend(container.get("Names") or [container["Id"]])
    return names


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _rows(audit: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {row["name"]: (row["killed"], row["detection_margin"], row["score"],
                          row["failing_cases"]) for row in audit["mutants"]}


@pytest.mark.parametrize("task", sorted(TABLES))
def test_seed_17_table_live_in_docker_in_both_languages(engine: Any, tmp_path: Path,
                                                        task: str) -> None:
    declared, detected, weakest, single, sole = TABLES[task]
    live: dict[str, dict[str, Any]] = {}
    for language, image in IMAGES.items():
        temp = tmp_path / f"tmp-{language}"
        temp.mkdir()
        options = AuditOptions(task=task, language=language, backend="docker", image=image,
                               seeds=(17,))
        result = run_audit(tmp_path / language, options, temp_root=temp)
        audit = result.audit
        assert result.exit_code == 0
        assert (audit["valid"], audit["passed"], audit["reference_passed"]) == (True, True, True)
        assert (audit["total"], audit["killed"], audit["mutation_score"]) == (
            declared, detected, 1.0)
        assert audit["detection"] == {"weakest_margin": weakest,
                                      "single_case_detections": single,
                                      "sole_detector_cases": sole}
        runtime = audit["reference"]["runtime"]
        assert (runtime["backend"], runtime["image"]) == ("docker", image)
        assert list(temp.iterdir()) == []
        live[language] = audit
        # The same controls replayed from the bundled recordings agree with this live run.
        replayed = run_audit(tmp_path / f"replay-{language}", AuditOptions(
            task=task, language=language, backend="replay", seeds=(17,))).audit
        assert _rows(replayed) == _rows(audit)
        assert _strip(replayed["reference"]["cases"]) == _strip(audit["reference"]["cases"])
    assert {name: row[1:] for name, row in _rows(live["python"]).items()} == \
        {name: row[1:] for name, row in _rows(live["javascript"]).items()}
    assert _containers_under(engine, tmp_path) == []


def _cli_env(temp: Path) -> dict[str, str]:
    temp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(temp)}


def test_cli_audit_ctrl_c_leaves_no_output_and_no_container(engine: Any, tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "evalarc.cli", "audit", "--image", IMAGES["python"], "--seeds",
         "17", "41", "97", "--output", "out"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_cli_env(tmp_path / "tmp"),
    )
    deadline = time.monotonic() + 120
    # Wait until several controls have case containers running at once.
    while len(_containers_under(engine, tmp_path / "tmp")) < 2:
        assert time.monotonic() < deadline and process.poll() is None, "no containers appeared"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert stdout == ""
    assert stderr.splitlines()[-1] == "evalarc: cancelled"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]  # no output, no staging
    assert list((tmp_path / "tmp").iterdir()) == []
    assert _containers_under(engine, tmp_path) == []


def test_cli_audit_missing_image_is_a_setup_error(engine: Any, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "audit", "--task", "support-routing", "--image",
         "evalarc-missing:never", "--output", "out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_cli_env(tmp_path / "tmp"),
    )
    assert done.returncode == 2
    assert "Docker image 'evalarc-missing:never' is not available locally" in done.stderr
    assert not (tmp_path / "out").exists() and list((tmp_path / "tmp").iterdir()) == []


def test_cli_audit_progress_stream_names_each_control(engine: Any, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "audit", "--task", "robot-evidence-review",
         "--language", "javascript", "--image", IMAGES["javascript"], "--seeds", "17",
         "--output", "out", "--progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=_cli_env(tmp_path / "tmp"),
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]
    completed = [e["control"] for e in events if e["event"] == "evaluation_completed"]
    assert sorted(completed) == sorted(["reference", "assume-meters", "ignore-frame-origin",
                                        "ignore-clock-units", "assume-complete",
                                        "last-frame-is-peak", "invent-source"])
    assert all(e["schema_version"] == "evalarc.event.v1" for e in events)
    saved = (tmp_path / "out" / "events.jsonl").read_text().splitlines()
    assert len(saved) == len(events)
    assert _containers_under(engine, tmp_path) == []
