"""``evalarc tasks``, ``init`` and ``evaluate`` as a user runs them: real CLI processes, the local
backend running real candidate processes (Docker runs are in test_durable_kv_docker.py)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import canonical_json
from evalarc.errors import OutputError, UsageError
from evalarc.packs import load_pack, materialize_workspace
from evalarc.pages.evaluation import build_evaluation_page, render_evaluation_page
from evalarc.reports.backends import check_seconds
from evalarc.reports.evaluation import (
    EvaluateOptions,
    progress_line,
    run_evaluate,
    summary_line,
)
from evalarc.runtime.recording import load_index, read_recording, runtime_fingerprint
from evalarc.runtime.snapshot import snapshot_candidate
from evalarc.schedule import default_jobs

PACK = load_pack("durable-kv")
REPORT_FILES = ["candidate", "evaluation.json", "events.jsonl", "index.html", "params.json",
                "recordings"]  # fmt: skip


def _cli(*args: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TMPDIR": str(_tmpdir(cwd))},
    )


def _tmpdir(cwd: Path) -> Path:
    """A TMPDIR per test, so a test can prove the command removed its temporary folders."""
    folder = cwd / "tmp"
    folder.mkdir(exist_ok=True)
    return folder


def _reference(tmp_path: Path, fault: str | None = None, name: str = "ws") -> Path:
    dest = tmp_path / name
    materialize_workspace("durable-kv", "python", reference=True, fault=fault, dest=dest)
    return dest


def _leftovers(tmp_path: Path, output: Path) -> list[str]:
    """Anything an evaluation may leave behind: the output, its staging sibling, temp folders."""
    found = [p.name for p in output.parent.iterdir() if p.name.startswith(f".{output.name}.")]
    if output.exists():
        found.append(output.name)
    found += [p.name for p in _tmpdir(tmp_path).iterdir()]
    return found


# -- tasks -----------------------------------------------------------------------------------


def test_tasks_lists_durable_kv_in_text(tmp_path: Path) -> None:
    done = _cli("tasks", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("durable-kv · coding · v0.1.0 · Persistent key-value service")
    assert lines[at + 1] == ("  dimensions: basic 0.25, validation 0.15, transactions 0.2, "
                             "compare_swap 0.15, persistence 0.15, crash_recovery 0.1")
    assert lines[at + 2] == ("  default seeds: 17 41 97 · declared faults: 8 · "
                             "languages: javascript, python")


def test_tasks_json_carries_weights_seeds_and_fault_count(tmp_path: Path) -> None:
    done = _cli("tasks", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    tasks = json.loads(done.stdout)
    assert [task["id"] for task in tasks] == sorted(task["id"] for task in tasks)
    durable = next(task for task in tasks if task["id"] == "durable-kv")
    assert durable == {
        "id": "durable-kv",
        "version": "0.1.0",
        "domain": "coding",
        "description": "Persistent key-value service",
        "dimensions": {"basic": 0.25, "validation": 0.15, "transactions": 0.2,
                       "compare_swap": 0.15, "persistence": 0.15, "crash_recovery": 0.1},
        "default_seeds": [17, 41, 97],
        "declared_faults": 8,
        "languages": ["javascript", "python"],
    }
    assert math.isclose(sum(durable["dimensions"].values()), 1.0)


# -- init ------------------------------------------------------------------------------------


@pytest.mark.parametrize("reference", [False, True])
def test_init_python_writes_program_and_contract(tmp_path: Path, reference: bool) -> None:
    args = ["init", "ws", *(["--reference"] if reference else [])]
    done = _cli(*args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "Created ws\n", "")
    dest = tmp_path / "ws"
    assert sorted(p.name for p in dest.iterdir()) == ["TASK.md", "main.py"]
    assert (dest / "TASK.md").read_bytes() == PACK.contract.read_bytes()
    source = PACK.language("python").reference if reference else PACK.language("python").starter
    assert (dest / "main.py").read_bytes() == (source / "main.py").read_bytes()


def test_init_javascript_adds_manifest_guide_and_node_hint(tmp_path: Path) -> None:
    done = _cli("init", "js", "--language", "javascript", "--reference", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "Created js"
    assert "Node.js 22+" in out[1] and "--image" in out[1]
    dest = tmp_path / "js"
    assert sorted(p.name for p in dest.iterdir()) == ["RUNTIME.md", "TASK.md", "evalarc.toml",
                                                      "main.js"]
    assert (dest / "evalarc.toml").read_text() == (
        'command = ["node", "main.js", "{state}/store.json"]\n')


def test_init_refuses_an_existing_destination_untouched(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "mine.txt").write_text("keep")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("ws", "dangling"):
        done = _cli("init", name, cwd=tmp_path)
        assert done.returncode == 2
        assert done.stderr == f"evalarc: {name} already exists\n"
    assert [p.name for p in (tmp_path / "ws").iterdir()] == ["mine.txt"]
    assert (tmp_path / "dangling").is_symlink() and not (tmp_path / "nowhere").exists()


def test_init_unknown_task_or_language_creates_nothing(tmp_path: Path) -> None:
    done = _cli("init", "ws", "--task", "no-such-task", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("evalarc: unknown task 'no-such-task' (available: ")
    done = _cli("init", "ws", "--language", "cobol", cwd=tmp_path)
    assert done.returncode == 2 and "cobol" in done.stderr
    assert not (tmp_path / "ws").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


# -- evaluate: refusing bad options before anything runs --------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "nan"], "--timeout must be a finite number of seconds above 0"),
        (["--timeout", "inf"], "--timeout must be a finite number of seconds above 0"),
        (["--case-timeout", "0"], "--case-timeout must be a finite number of seconds above 0"),
        (["--startup-timeout", "-1"],
         "--startup-timeout must be a finite number of seconds above 0"),
        (["--timeout", "1e9"], "--timeout must be at most 86400 seconds"),
        (["--seeds", "17", "17"], "do not repeat seeds"),
        ([], "local mode executes host code"),
    ],
)
def test_evaluate_refuses_bad_options_and_writes_nothing(
        tmp_path: Path, args: list[str], message: str) -> None:
    workspace = _reference(tmp_path)
    trust = [] if message.startswith("local mode") else ["--trust-local"]
    done = _cli("evaluate", workspace, "--backend", "local", *trust, "--output", "out", *args,
                cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"evalarc: {message}"), done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
    assert _leftovers(tmp_path, tmp_path / "out") == []


def test_evaluate_refuses_non_numbers_as_usage_errors(tmp_path: Path) -> None:
    workspace = _reference(tmp_path)
    for args in (["--seeds", "x"], ["--timeout", "soon"], ["--backend", "cloud"]):
        done = _cli("evaluate", workspace, "--output", "out", *args, cwd=tmp_path)
        assert done.returncode == 2, args
        assert "Invalid value" in done.stderr
    assert not (tmp_path / "out").exists()


def test_evaluate_refuses_existing_output_and_output_inside_the_candidate(tmp_path: Path) -> None:
    workspace = _reference(tmp_path)
    (tmp_path / "out").mkdir()
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--output", "out",
                cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "evalarc: output folder out already exists; choose a new one\n"
    assert list((tmp_path / "out").iterdir()) == []
    inside = workspace / "report"
    done = _cli("evaluate", "ws", "--backend", "local", "--trust-local", "--output", inside,
                cwd=tmp_path)
    assert done.returncode == 2
    assert "is inside the candidate folder" in done.stderr
    assert sorted(p.name for p in workspace.iterdir()) == ["TASK.md", "main.py"]


def test_evaluate_refuses_a_bad_manifest_or_a_missing_candidate(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "evalarc.toml").write_text('command = "python3 main.py"\n')
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--output", "out",
                cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("evalarc: candidate ") and "command must be an array" in (
        done.stderr)
    done = _cli("evaluate", tmp_path / "missing", "--backend", "local", "--trust-local",
                "--output", "out2", cwd=tmp_path)
    assert done.returncode == 2 and "not a directory" in done.stderr
    assert _leftovers(tmp_path, tmp_path / "out") == []
    assert _leftovers(tmp_path, tmp_path / "out2") == []


def test_option_checks_in_the_library() -> None:
    assert check_seconds("--timeout", 2) == 2.0
    for bad in (True, "1", float("nan"), -0.0, 86_400.5):
        with pytest.raises(UsageError):
            check_seconds("--timeout", bad)
    with pytest.raises(UsageError, match="unknown backend"):
        run_evaluate(Path("."), Path("x"), EvaluateOptions(backend="vm"))
    with pytest.raises(UsageError, match="not an image name"):
        run_evaluate(Path("."), Path("x"), EvaluateOptions(image="evil image"))
    with pytest.raises(OutputError, match="inside the candidate"):
        run_evaluate(Path("."), Path("sub/report"),
                     EvaluateOptions(backend="local", trust_local=True))


# -- evaluate: local end to end --------------------------------------------------------------


def _replayed_transcript_sha256(events: list[dict[str, Any]]) -> str:
    """The case's transcript hash rebuilt from its recording alone (every send/recv pair)."""
    digest = hashlib.sha256()
    pending: Any = None
    for event in events:
        if event["event"] == "send":
            pending = json.loads(event["line"])
        elif event["event"] == "recv":
            digest.update(canonical_json([pending, json.loads(event["line"])]).encode("ascii"))
    return digest.hexdigest()


def test_evaluate_reference_locally_writes_a_complete_report_folder(tmp_path: Path) -> None:
    workspace = _reference(tmp_path)
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--seeds", "17",
                "41", "--output", "runs/ref", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Score: 1.0000 | Status: passed | Resolved: true\nruns/ref\n"
    progress = done.stderr.splitlines()
    assert progress[0].startswith("Evaluating candidate ") and progress[0].endswith(": 30 cases")
    # Cases run side by side (--jobs): one line per case as it finishes, in any order.
    finished = sorted(progress[1:])
    assert finished[0].startswith("[ 1/30] seed 17 read-write-delete: passed (")
    assert finished[-1].startswith("[30/30] seed 41 seeded-state-machine: passed (")
    assert len(progress) == 31 and len(set(line.split(":")[0] for line in finished)) == 30
    folder = tmp_path / "runs" / "ref"
    assert sorted(p.name for p in folder.iterdir()) == REPORT_FILES
    assert _leftovers(tmp_path, folder) == ["ref"]
    report = json.loads((folder / "evaluation.json").read_text())
    assert report["seeds"] == [17, 41] and len(report["cases"]) == 30
    assert (report["valid"], report["status"], report["score"], report["resolved"]) == (
        True, "passed", 1.0, True)
    assert report["runtime"]["backend"] == "local"

    # The candidate copy is the snapshot the run used: same fingerprint.
    again = snapshot_candidate(folder / "candidate", tmp_path / "again", ["x"])
    assert again.sha256 == report["candidate_sha256"]
    assert sorted(p.name for p in (folder / "candidate").iterdir()) == ["TASK.md", "main.py"]

    # Every case has a recording, indexed by run key, from which its transcript hash follows.
    index = load_index(folder / "recordings" / "index.json")
    assert len(index.entries) == 30
    runtime_sha256 = runtime_fingerprint(report["runtime"])
    assert index.runtimes == {runtime_sha256: report["runtime"]}
    by_case = {(key.seed, key.case_id): (key, sha) for key, sha in index.entries.items()}
    for case in report["cases"]:
        key, sha = by_case[(case["seed"], case["case_id"])]
        assert (key.candidate_sha256, key.grader_sha256, key.pack, key.runtime_sha256) == (
            report["candidate_sha256"], report["grader_sha256"], "durable-kv@0.1.0",
            runtime_sha256)
        assert sha == case["recording_sha256"]
        transcript = read_recording(folder / "recordings", sha)
        assert _replayed_transcript_sha256(transcript.events) == case["transcript_sha256"]
    assert len(list((folder / "recordings").glob("*.jsonl"))) == 30

    params = json.loads((folder / "params.json").read_text())
    assert params == {
        "schema_version": "evalarc.report-params.v1", "kind": "evaluation",
        "task": "durable-kv", "candidate": "candidate", "backend": "local", "trust_local": True,
        "image": None, "seeds": [17, 41], "timeout": 10.0, "case_timeout": 60.0,
        "startup_timeout": 30.0, "report": "evaluation.json",
        "recordings": "recordings/index.json", "jobs": default_jobs(),
    }
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["evaluation_started"] + [
        "case_started", "case_completed"] * 30 + ["evaluation_completed"]
    assert {e["schema_version"] for e in events} == {"evalarc.event.v1"}
    assert all(e["created_at"].endswith("+00:00") for e in events)
    page = (folder / "index.html").read_text()
    assert "Resolved: every case passed" in page and "1.0000" in page
    assert page.count('<details id="case-') == 30


def test_evaluate_fault_exits_one_and_shows_the_first_mismatch(tmp_path: Path) -> None:
    workspace = _reference(tmp_path, "boolean-equals-one")
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--seeds", "17",
                "--output", "out", "--quiet", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout == "Score: 0.9250 | Status: failed | Resolved: false\nout\n"
    assert done.stderr == ""
    page = (tmp_path / "out" / "index.html").read_text()
    assert "Not resolved: 1 of 15 case(s) failed" in page
    assert ("response mismatch at request 2; expected {&#34;ok&#34;: true, &#34;swapped&#34;: "
            "false}, got {&#34;ok&#34;: true, &#34;swapped&#34;: true}") in page


def test_environment_failure_still_writes_the_report_and_exits_two(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "evalarc.toml").write_text('command = ["/nonexistent/kv", "{state}"]\n')
    done = _cli("evaluate", workspace, "--backend", "local", "--trust-local", "--seeds", "17",
                "--output", "out", "--progress", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == "Score: unavailable | Status: environment_error | Resolved: false\nout\n"
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert events[-1]["event"] == "evaluation_completed" and events[-1]["valid"] is False
    assert all(e["schema_version"] == "evalarc.event.v1" for e in events)
    report = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert report["score"] is None and report["valid"] is False
    assert "Unassessed: the environment failed" in (tmp_path / "out" / "index.html").read_text()


HANGS = """
import pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text("started")
time.sleep(600)
"""


def test_ctrl_c_removes_staged_output_temp_folders_and_processes(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = tmp_path / "started"
    (workspace / "main.py").write_text(HANGS)
    (workspace / "evalarc.toml").write_text(f'command = ["{{python}}", "main.py", "{marker}"]\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "evalarc.cli", "evaluate", str(workspace), "--backend", "local",
         "--trust-local", "--seeds", "17", "--output", "out", "--progress"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(_tmpdir(tmp_path))},
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline and process.poll() is None, "candidate never started"
        time.sleep(0.05)
    assert any(p.name.startswith(".out.") for p in tmp_path.iterdir())  # staged, not published
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert stdout == ""
    lines = stderr.splitlines()
    assert lines[-1] == "evalarc: cancelled"
    assert json.loads(lines[-2])["event"] == "run_cancelled"
    assert _leftovers(tmp_path, tmp_path / "out") == []
    hung = subprocess.run(["pgrep", "-f", str(marker)], capture_output=True, text=True)
    assert hung.stdout == ""


# -- the page model and the library pieces ---------------------------------------------------


def _report(error: str | None, status: str = "failed") -> dict[str, Any]:
    check: bool | None = None if status == "environment_error" else status == "passed"
    valid = status != "environment_error"
    return {
        "created_at": "2026-01-01T00:00:00+00:00", "evalarc_version": "0",
        "task": {"id": "durable-kv", "version": "0.1.0", "domain": "coding",
                 "split": "public-development"},
        "candidate_sha256": "a" * 64, "grader_sha256": "b" * 64, "cases_sha256": "c" * 64,
        "runtime": {"backend": "docker", "image": "img<1>", "image_id": "sha256:" + "d" * 64},
        "seeds": [17], "valid": valid, "status": status,
        "score": (0.75 if status == "failed" else 1.0) if valid else None,
        "resolved": status == "passed",
        "dimensions": {"basic": {"passed": int(bool(check)), "total": 1,
                                 "assessed": int(valid), "weight": 1.0,
                                 "score": float(bool(check)) if valid else None}},
        "cases": [{"seed": 17, "case_id": "read-write-delete", "dimension": "basic",
                   "checks": {"basic": check}, "passed": status == "passed", "status": status,
                   "checks_completed": 0, "duration_seconds": 0.5, "error": error,
                   "processes": [], "recording_sha256": "e" * 64}],
        "evaluation_seconds": 1.25,
    }


def test_page_escapes_candidate_text_and_links_only_inside_the_folder() -> None:
    hostile = 'got "</code><script>alert(1)</script><a href="https://evil.example">'
    html = render_evaluation_page(_report(hostile))
    assert "<script>alert" not in html and "https://evil.example\"" not in html
    # Only the shared, CSP-hashed script and inert JSON data islands.
    assert html.count("<script>") == 1
    assert html.count("<script") == 1 + html.count('<script type="application/json">')
    assert "&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "img&lt;1&gt;" in html
    hrefs = [part.split('"', 1)[0] for part in html.split('href="')[1:]]
    assert hrefs and all(not h.startswith(("http:", "https:", "//", "/")) for h in hrefs)
    assert f"recordings/{'e' * 64}.jsonl" in hrefs
    assert 'content="default-src &#39;none&#39;;' in html  # the shared CSP: no network, no JS


def test_page_model_banners_follow_the_outcome() -> None:
    failed = build_evaluation_page(_report("response mismatch at request 1; ..."))
    assert failed.banner == "Not resolved: 1 of 1 case(s) failed"
    assert [c.value for c in failed.cards[:2]] == ["0.7500", "0/1"]
    assert failed.cases[0].first_problem.startswith("response mismatch at request 1")
    assert failed.cases[0].failed_checks == "basic"
    passed = build_evaluation_page(_report(None, "passed"))
    assert passed.banner == "Resolved: every case passed" and passed.tone == "ok"
    invalid = build_evaluation_page(_report("Docker could not start", "environment_error"))
    assert invalid.banner == "Unassessed: the environment failed"
    assert invalid.cards[0].value == "unavailable"
    assert invalid.cases[0].failed_checks == "unassessed: basic"
    assert invalid.dimensions[0].passed == "0/0 (1 unassessed)"


def test_summary_and_progress_lines() -> None:
    assert summary_line({"score": 0.925, "status": "failed", "resolved": False}) == (
        "Score: 0.9250 | Status: failed | Resolved: false")
    assert summary_line({"score": None, "status": "environment_error", "resolved": False}) == (
        "Score: unavailable | Status: environment_error | Resolved: false")
    event = {"event": "case_completed", "case_number": 7, "total_cases": 45, "seed": 41,
             "case_id": "cas-type-sensitivity", "status": "failed", "duration_seconds": 0.4321}
    assert progress_line(event) == "[ 7/45] seed 41 cas-type-sensitivity: failed (0.43 s)"
    assert progress_line({"event": "case_started"}) is None
