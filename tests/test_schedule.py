"""Case-granular scheduling: ``--jobs`` changes nothing but the timings (params.json records
it), progress reaches stderr as cases finish, ``--retry-infrastructure`` re-runs only
infrastructure failures (never a candidate's fault or timeout), recording every attempt in a
folder ``verify`` accepts, and options that would be ignored are refused.

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
    for folder, jobs in ((one, 1), (four, 4)):
        assert _cli("verify", folder, cwd=tmp_path).returncode == 0
        # params.json says how the cases ran (jobs), which the report does not depend on.
        params = json.loads((folder / "params.json").read_text())
        assert params["jobs"] == jobs and "executor" not in params


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
                "--output", "retried", cwd=tmp_path)
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
    # In events.jsonl the case's failed attempts come first, then the one that counted.
    mine = [(event["event"], event.get("attempt")) for event in events
            if event.get("case_id") == "read-write-delete" and event["seed"] == 17]
    assert mine == [("case_started", None), ("case_retried", 1), ("case_started", 2),
                    ("case_retried", 2), ("case_started", 3), ("case_completed", 3)]
    # Progress on stderr says each failed attempt as it happens.
    assert ("[ 1/30] seed 17 read-write-delete: attempt 1 failed (cleanup failed: the engine "
            "went away); running it again") in done.stderr.splitlines()
    params = json.loads((folder / "params.json").read_text())
    assert params["retry_infrastructure"] == 2 and params["jobs"] == 1
    # The report states the retries and each case's attempts (only a run with retries does).
    assert report["retry_infrastructure"] == 2
    assert [case["attempts"] for case in report["cases"]] == [
        3 if case["status"] == "environment_error" else 1 for case in report["cases"]]
    # Each failed attempt's error comes with the recording of its fault (the counted attempt's
    # recording is the case's own).
    failed = broken[0]["failed_attempts"]
    assert [item["error"] for item in failed] == ["cleanup failed: the engine went away"] * 2
    for item in failed:
        fault = (folder / "recordings" / f"{item['recording_sha256']}.jsonl").read_text()
        assert json.loads(fault)["message"] == "cleanup failed: the engine went away"
    assert all("failed_attempts" not in case for case in report["cases"] if case is not broken[0])
    verified = _cli("verify", folder, cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert "records are consistent" in verified.stdout

    # verify checks the attempts against the report and retry_infrastructure.
    lines = (folder / "events.jsonl").read_text().splitlines(keepends=True)
    retried_at = [number for number, line in enumerate(lines)
                  if json.loads(line)["event"] == "case_retried"]
    tampered = {
        # an attempt fewer than the two re-runs asked for
        "after 2 attempt(s), not the 3": [*lines[:retried_at[1]], *lines[retried_at[1] + 2:]],
        # a failed attempt's error other than its recorded fault
        "states an error other than its attempt's recorded fault": [
            *lines[:retried_at[0]],
            lines[retried_at[0]].replace("the engine went away", "the node caught fire"),
            *lines[retried_at[0] + 1:]],
        # a failed attempt the run never had
        "differs from the next attempt's case_started": [
            *lines[:retried_at[1] + 1],
            lines[retried_at[1] + 1].replace('"attempt":3', '"attempt":4'),
            *lines[retried_at[1] + 2:]],
    }
    for message, edited in tampered.items():
        (folder / "events.jsonl").write_text("".join(edited))
        refused = _cli("verify", folder, cwd=tmp_path)
        assert refused.returncode == 2 and message in refused.stderr, (message, refused.stderr)
    (folder / "events.jsonl").write_text("".join(lines))
    for key, value, message in [
        ("retry_infrastructure", 1, "retry_infrastructure 1 is not the 2 the report states"),
        ("retry_infrastructure", 11, "retry_infrastructure must be a whole number from 0 to 10"),
        ("jobs", 0, "jobs must be a whole number above 0"),
        ("executor", "dask", "unknown executor 'dask'"),
        ("ray_nodes", 3, "ray_nodes but the cases did not run on Ray"),
    ]:
        edited_params = {**params, key: value}
        (folder / "params.json").write_text(json.dumps(edited_params, indent=2) + "\n")
        refused = _cli("verify", folder, cwd=tmp_path)
        assert refused.returncode == 2 and message in refused.stderr, (key, refused.stderr)


def test_retries_cannot_be_granted_after_the_run(tmp_path: Path) -> None:
    """A run without retries: adding ``retry_infrastructure`` to params.json and a failed
    attempt to events.jsonl is refused (the report states no retries); so is a report whose
    stated attempts the events do not show."""
    folder = _local(tmp_path, 2, "plain")
    report_text = (folder / "evaluation.json").read_text()
    assert "retry_infrastructure" not in report_text and '"attempts"' not in report_text
    params = json.loads((folder / "params.json").read_text())
    lines = (folder / "events.jsonl").read_text().splitlines(keepends=True)
    started = next(number for number, line in enumerate(lines)
                   if json.loads(line)["event"] == "case_started")
    first = json.loads(lines[started])
    stamp = first["created_at"]
    retried = {key: value for key, value in first.items() if key not in ("schema_version",
                                                                          "created_at")}
    retried.update(event="case_retried", attempt=1, error="anything at all")
    forged_lines = [
        *lines[:started + 1],
        compact_json({"schema_version": first["schema_version"], "created_at": stamp,
                      **retried}) + "\n",
        lines[started].replace('"case_started"', '"case_started","attempt":2').replace(
            '"case_id"', '"attempt":2,"case_id"', 0),
        *lines[started + 1:],
    ]
    again = json.loads(forged_lines[started + 2])
    again["attempt"] = 2
    forged_lines[started + 2] = compact_json(again) + "\n"
    completed_at = next(number for number, line in enumerate(forged_lines)
                        if json.loads(line)["event"] == "case_completed"
                        and json.loads(line)["case_id"] == first["case_id"]
                        and json.loads(line)["seed"] == first["seed"])
    completed = json.loads(forged_lines[completed_at])
    completed["attempt"] = 2
    forged_lines[completed_at] = compact_json(completed) + "\n"
    (folder / "events.jsonl").write_text("".join(forged_lines))
    (folder / "params.json").write_text(
        json.dumps({**params, "retry_infrastructure": 1}, indent=2) + "\n")
    refused = _cli("verify", folder, cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout
    assert "retry_infrastructure 1 is not the 0 the report states" in refused.stderr, (
        refused.stderr)
    # The report states the retry too, but no failed attempt (so no recorded fault for the
    # error the forged case_retried states), and an attempt count the events do not show.
    report = json.loads(report_text)
    report["retry_infrastructure"] = 1
    for case in report["cases"]:
        case["attempts"] = 1
    (folder / "evaluation.json").write_text(json.dumps(report, indent=2) + "\n")
    refused = _cli("verify", folder, cwd=tmp_path)
    assert refused.returncode == 2
    assert "states an error other than its attempt's recorded fault" in refused.stderr, (
        refused.stderr)
    forged_lines.pop(started + 1)  # without the case_retried: one attempt fewer than events say
    forged_lines.pop(started + 1)
    (folder / "events.jsonl").write_text("".join(forged_lines))
    refused = _cli("verify", folder, cwd=tmp_path)
    assert refused.returncode == 2
    assert "differs from the event the verified report implies" in refused.stderr, (
        refused.stderr)


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


def test_timeouts_are_never_retried(tmp_path: Path) -> None:
    # A candidate that answers nothing times out on every case: its fault, never retried.
    workspace = tmp_path / "silent"
    materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace)
    (workspace / "main.py").write_text(
        "import sys, time\nfor line in sys.stdin:\n    time.sleep(30)\n")
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--seeds", "17",
                "--timeout", "0.5", "--case-timeout", "5", "--retry-infrastructure", "3",
                "--output", "out", "--progress", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert report["valid"] is True
    assert {case["status"] for case in report["cases"]} == {"agent_error"}
    assert all("timeout" in case["error"] or "did not answer" in case["error"]
               for case in report["cases"]), [case["error"] for case in report["cases"]]
    events = [json.loads(line) for line in
              (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    assert not [event for event in events if event["event"] == "case_retried"]
    assert not [event for event in events if "attempt" in event]


def test_progress_arrives_as_cases_finish(tmp_path: Path) -> None:
    """The first case's line is on stderr while the run still goes on (nothing published yet);
    an audit prints one line per case of every control, not only when a control ends."""
    workspace = tmp_path / "ws"
    materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace)
    process = subprocess.Popen(
        [sys.executable, "-m", "evalarc.cli", "audit", "--backend", "local", "--trust-local",
         "--seeds", "17", "--jobs", "2", "--output", "audit"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert process.stderr is not None
    first_case = None
    lines = []
    for line in process.stderr:
        lines.append(line.rstrip("\n"))
        if first_case is None and "] seed 17 " in line:
            first_case = (process.poll(), (tmp_path / "audit").exists())
    process.wait(timeout=600)
    assert process.returncode == 0, lines
    assert first_case == (None, False)
    cases = [line for line in lines if "] seed 17 " in line]
    assert len(cases) == 9 * 15
    assert "reference [ 1/15] seed 17 read-write-delete: passed (" in "\n".join(cases)
    assert len({line.split(":")[0] for line in cases}) == 9 * 15
    # Every control's end comes after its own 15 cases.
    for control in ("reference", "memory-only", "commit-on-exit"):
        end = lines.index(next(line for line in lines if line.startswith(f"{control}: score")))
        assert len([line for line in lines[:end] if line.startswith(f"{control} [")]) == 15


def test_options_that_would_be_ignored_are_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    materialize_workspace("durable-kv", "python", reference=True, fault=None, dest=workspace)
    for command, message in [
        (("evaluate", workspace, "--executor", "ray", "--jobs", "4"),
         "--jobs sets the cases run at once on this machine; with --executor ray each node's "
         "evalarc_slot resource does"),
        (("audit", "--executor", "ray", "--jobs", "4"), "with --executor ray each node's"),
        (("evaluate", workspace, "--ray-address", "127.0.0.1:6379"),
         "--ray-address is only for --executor ray"),
        (("audit", "--ray-address", "127.0.0.1:6379"), "--ray-address is only for --executor ray"),
        (("evaluate", workspace, "--ray-verify-sample", "3"),
         "--ray-verify-sample is only for --executor ray"),
        (("audit", "--executor", "ray", "--ray-verify-sample", "-1"),
         "--ray-verify-sample must be between 0 and 100000, not -1"),
    ]:
        done = _cli(*command, "--output", "out", cwd=tmp_path)
        assert done.returncode == 2 and message in done.stderr, (command, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "out").exists()
