"""Case-granular scheduling: ``--jobs`` changes nothing but the timings, and
``--retry-infrastructure`` re-runs only infrastructure failures, recording every attempt.

Runs the durable-kv reference with the local backend (trusted code: the pack's own reference)
and replays recordings; no Docker needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from evalarc.canonical import compact_json, sha256_text
from evalarc.packs import materialize_workspace

TIMING = {"created_at", "duration_seconds", "evaluation_seconds", "recording_sha256"}


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ},
    )


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value


def _local(tmp_path: Path, jobs: int, name: str) -> Path:
    workspace = tmp_path / "ws"
    if not workspace.exists():
        materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace)
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--seeds", "17",
                "41", "--jobs", str(jobs), "--output", name, "--progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / name


def test_jobs_change_only_the_timings(tmp_path: Path) -> None:
    one = _local(tmp_path, 1, "one")
    four = _local(tmp_path, 4, "four")
    first = json.loads((one / "evaluation.json").read_text())
    second = json.loads((four / "evaluation.json").read_text())
    assert _strip(first) == _strip(second)
    assert [case["case_id"] for case in second["cases"]] == [
        case["case_id"] for case in first["cases"]
    ]
    # events.jsonl is written in plan order, however the cases finished.
    events = [
        [_strip(json.loads(line)) for line in (folder / "events.jsonl").read_text().splitlines()]
        for folder in (one, four)
    ]
    assert events[0] == events[1]
    assert [event["event"] for event in events[1][:3]] == [
        "evaluation_started", "case_started", "case_completed"]
    for folder in (one, four):
        assert _cli("verify", folder, cwd=tmp_path).returncode == 0


def _break_one_recording(folder: Path, case_id: str) -> str:
    """Make one case's recording end in a recorded infrastructure failure (the engine went away
    while the case was being cleaned up); return the new recording's name."""
    index_path = folder / "recordings" / "index.json"
    index = json.loads(index_path.read_text())
    entry = next(item for item in index["entries"] if item["case_id"] == case_id)
    old = folder / "recordings" / f"{entry['recording']}.jsonl"
    events = [json.loads(line) for line in old.read_text().splitlines()]
    events.append({"event": "fault", "kind": "environment", "session": events[-1]["session"],
                   "t": events[-1]["t"], "message": "cleanup failed: the engine went away"})
    text = "".join(compact_json(event) + "\n" for event in events)
    name = sha256_text(text)
    (folder / "recordings" / f"{name}.jsonl").write_text(text)
    entry["recording"] = name
    index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return name


def test_only_infrastructure_failures_are_retried_and_every_attempt_is_kept(
    tmp_path: Path,
) -> None:
    source = _local(tmp_path, 2, "source")
    _break_one_recording(source, "read-write-delete")
    done = _cli("evaluate", tmp_path / "ws", "--backend", "replay", "--recordings",
                source / "recordings", "--seeds", "17", "41", "--retry-infrastructure", "2",
                "--output", "retried", "--progress", cwd=tmp_path)
    assert done.returncode == 2, done.stderr  # still an infrastructure failure: invalid
    folder = tmp_path / "retried"
    report = json.loads((folder / "evaluation.json").read_text())
    broken = [case for case in report["cases"] if case["status"] == "environment_error"]
    assert [(case["seed"], case["case_id"]) for case in broken] == [(17, "read-write-delete")]
    assert broken[0]["error"] == "cleanup failed: the engine went away"
    assert report["score"] is None and report["valid"] is False
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    retried = [event for event in events if event["event"] == "case_retried"]
    assert [(e["seed"], e["case_id"], e["attempt"], e["error"]) for e in retried] == [
        (17, "read-write-delete", 1, "cleanup failed: the engine went away"),
        (17, "read-write-delete", 2, "cleanup failed: the engine went away"),
    ]
    completed = [event for event in events if event["event"] == "case_completed"]
    assert len(completed) == len(report["cases"])
    params = json.loads((folder / "params.json").read_text())
    assert params["retry_infrastructure"] == 2


def test_candidate_faults_are_never_retried(tmp_path: Path) -> None:
    workspace = tmp_path / "faulty"
    materialize_workspace("durable-kv", "python", reference=True, fault="partial-batch",
                          dest=workspace)
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--seeds", "17",
                "--retry-infrastructure", "3", "--output", "out", "--progress", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    events = [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text()
              .splitlines()]
    report = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert any(case["status"] == "failed" for case in report["cases"])
    assert not [event for event in events if event["event"] == "case_retried"]
