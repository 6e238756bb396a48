"""The replay backend: recorded transcripts of real candidate processes fed back through today's
grader. The recordings are made here by the local backend (real processes); the bundled Docker
recordings are replayed in test_audit.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

from evalarc.canonical import sha256_bytes
from evalarc.errors import InputError
from evalarc.packs import materialize_workspace
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from evalarc.runtime.protocol import Transcript
from evalarc.runtime.recording import RecordingIndex, RunKey, load_index, save_index
from evalarc.runtime.replay import (
    STORE_SCHEMA,
    StoredRun,
    open_store,
    parse_bundle,
    split_label,
    write_store,
)

TASK = "support-routing"
SUPPORT_LABELS = ["17/route-open-ticket", "17/close-resolved-ticket", "17/retry-before-commit",
                  "17/retry-after-commit"]  # fmt: skip
VOLATILE = {"created_at", "duration_seconds", "evaluation_seconds"}


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    temp = cwd / "tmp"
    temp.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TMPDIR": str(temp)},
    )


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _report(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))


def _local(workspace: Path, output: Path, **limits: float) -> dict[str, Any]:
    options = EvaluateOptions(task=TASK, backend="local", trust_local=True, seeds=(17,),
                              **limits)  # type: ignore[arg-type]
    return run_evaluate(workspace, output, options).report


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A live local evaluation of the Python support-routing reference at seed 17."""
    root = tmp_path_factory.mktemp("recorded")
    materialize_workspace(TASK, "python", reference=True, fault=None, dest=root / "ws")
    report = _local(root / "ws", root / "live")
    assert report["resolved"] is True
    return root


def _copy_recordings(recorded: Path, dest: Path) -> Path:
    target = dest / "store"
    shutil.copytree(recorded / "live" / "recordings", target)
    return target


def _replay(cwd: Path, workspace: Path, store: Path, *extra: str,
            output: str = "replayed") -> subprocess.CompletedProcess[str]:
    return _cli("evaluate", workspace, "--task", TASK, "--backend", "replay", "--recordings",
                store, "--seeds", "17", "--output", output, "--quiet", *extra, cwd=cwd)


def _rewrite(store: Path, label: str, edit: Any) -> str:
    """Replace the recording of ``label`` by ``edit(events)``, saved under its own new hash."""
    index = load_index(store / "index.json")
    seed, case_id = split_label(label)
    (key,) = [k for k in index.entries if (k.seed, k.case_id) == (seed, case_id)]
    events = [json.loads(line) for line in
              (store / f"{index.entries[key]}.jsonl").read_text().splitlines()]
    transcript = Transcript(edit(events))
    data = transcript.jsonl().encode("ascii")
    name = sha256_bytes(data)
    (store / f"{name}.jsonl").write_bytes(data)
    index.entries[key] = name
    save_index(index, store / "index.json")
    return name


# -- faithful replays ------------------------------------------------------------------------


def test_replay_reproduces_the_live_evaluation(recorded: Path, tmp_path: Path) -> None:
    done = _replay(tmp_path, recorded / "ws", recorded / "live" / "recordings")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Score: 1.0000 | Status: passed | Resolved: true\nreplayed\n"
    live, replayed = _report(recorded / "live"), _report(tmp_path / "replayed")
    assert _strip(replayed) == _strip(live)
    assert replayed["runtime"]["backend"] == "local"  # the runtime the recording was made under
    # The replay's own transcripts are the recordings, byte for byte.
    live_files = sorted(p.name for p in (recorded / "live" / "recordings").glob("*.jsonl"))
    assert sorted(p.name for p in (tmp_path / "replayed" / "recordings").glob("*.jsonl")) == \
        live_files
    params = json.loads((tmp_path / "replayed" / "params.json").read_text())
    assert (params["backend"], params["image"]) == ("replay", None)
    assert params["replay_recordings"] == "recordings"  # the folder's name, not its path
    # A replay reports its recording's durations, not its own timing: replaying again gives the
    # same report (created_at aside), and each case lasts as long as its recording's last event.
    again = _replay(tmp_path, recorded / "ws", recorded / "live" / "recordings", output="again")
    assert again.returncode == 0, again.stderr
    assert {**_report(tmp_path / "again"), "created_at": None} == {**replayed, "created_at": None}
    for case in replayed["cases"]:
        events = (tmp_path / "replayed" / "recordings" / f"{case['recording_sha256']}.jsonl")
        last = json.loads(events.read_text(encoding="utf-8").splitlines()[-1])
        assert case["duration_seconds"] == last["t"]
    assert replayed["evaluation_seconds"] == round(
        sum(case["duration_seconds"] for case in replayed["cases"]), 6
    )
    assert list((tmp_path / "tmp").iterdir()) == []


BAD_POLICIES = {
    # A reply that is not JSON: today's protocol code must reject the recorded bytes again.
    "garbage": "import sys\nsys.stdin.readline()\nprint('hello there', flush=True)\n",
    # A clean finish, then a non-zero exit after EOF.
    "crash": ("import sys\nsys.stdin.readline()\nprint('{\"finish\": true}', flush=True)\n"
              "sys.stdin.read()\nsys.exit(3)\n"),
    # A finish, then no exit after EOF: the recorded timeout must come back as the same fault.
    "linger": ("import sys, time\nsys.stdin.readline()\nprint('{\"finish\": true}', flush=True)\n"
               "sys.stdin.read()\ntime.sleep(20)\n"),
}


@pytest.mark.parametrize("behaviour", sorted(BAD_POLICIES))
def test_replay_reproduces_recorded_agent_faults(tmp_path: Path, behaviour: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "main.py").write_text(BAD_POLICIES[behaviour], encoding="utf-8")
    live = _local(workspace, tmp_path / "live", timeout=1.0, case_timeout=5.0)
    assert live["valid"] is True and live["resolved"] is False
    errors = {case["error"] for case in live["cases"]}
    expected = {"garbage": "response is not finite JSON",
                "crash": "candidate exited with code 3",
                "linger": "candidate did not exit after EOF"}[behaviour]
    assert errors == {expected}
    done = _replay(tmp_path, workspace, tmp_path / "live" / "recordings", "--timeout", "1",
                   "--case-timeout", "5")
    assert done.returncode == 1, done.stderr
    assert _strip(_report(tmp_path / "replayed")) == _strip(live)


# -- what replay refuses -----------------------------------------------------------------------


def test_a_request_that_differs_from_the_recording_is_divergent(recorded: Path,
                                                                 tmp_path: Path) -> None:
    store = _copy_recordings(recorded, tmp_path)

    def change_first_request(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first = next(e for e in events if e["event"] == "send")
        first["line"] = first["line"].replace('"start"', '"restart"')
        return events

    name = _rewrite(store, "17/retry-after-commit", change_first_request)
    done = _replay(tmp_path, recorded / "ws", store)
    assert done.returncode == 2
    assert f"evalarc: divergent recording {name[:12]} of 17/retry-after-commit" in done.stderr
    assert "the grader sends" in done.stderr and "restart" in done.stderr
    assert done.stdout.startswith("Score: unavailable | Status: environment_error")
    report = _report(tmp_path / "replayed")
    (case,) = [c for c in report["cases"] if c["case_id"] == "retry-after-commit"]
    assert case["status"] == "environment_error" and "replay divergence" in case["error"]
    assert set(case["checks"].values()) == {None}
    assert (report["valid"], report["score"]) == (False, None)
    others = [c for c in report["cases"] if c["case_id"] != "retry-after-commit"]
    assert all(c["status"] == "passed" for c in others)


def test_a_recording_that_goes_on_after_the_grader_stopped_is_divergent(
        recorded: Path, tmp_path: Path) -> None:
    store = _copy_recordings(recorded, tmp_path)

    def add_a_session(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        last = events[-1]["t"]
        return [*events, {"event": "start", "session": 1, "t": last, "argv": ["python3"]}]

    _rewrite(store, "17/route-open-ticket", add_a_session)
    done = _replay(tmp_path, recorded / "ws", store)
    assert done.returncode == 2
    assert "17/route-open-ticket" in done.stderr
    assert "the recording continues with a 'start' event of session 1" in done.stderr


def test_a_recorded_response_that_today_s_code_rejects_is_divergent(
        recorded: Path, tmp_path: Path) -> None:
    store = _copy_recordings(recorded, tmp_path)

    def corrupt_response(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first = next(e for e in events if e["event"] == "recv")
        first["line"] = "{not json"
        return events

    _rewrite(store, "17/close-resolved-ticket", corrupt_response)
    done = _replay(tmp_path, recorded / "ws", store)
    assert done.returncode == 2
    assert "today's protocol code rejects response 1 (response is not finite JSON) but the " \
        "recording does not" in done.stderr


def test_missing_recordings_exit_2_listing_them(recorded: Path, tmp_path: Path) -> None:
    store = _copy_recordings(recorded, tmp_path)
    index = load_index(store / "index.json")
    dropped = ("retry-before-commit", "route-open-ticket")
    for key in [k for k in index.entries if k.case_id in dropped]:
        del index.entries[key]
    save_index(index, store / "index.json")
    done = _replay(tmp_path, recorded / "ws", store)
    assert done.returncode == 2
    assert done.stderr.startswith(f"evalarc: 2 recording(s) missing from {store}: ")
    assert "17/route-open-ticket, 17/retry-before-commit" in done.stderr
    assert not (tmp_path / "replayed").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_another_candidate_has_no_recordings(recorded: Path, tmp_path: Path) -> None:
    materialize_workspace(TASK, "python", reference=True, fault="skip-retry", dest=tmp_path / "f")
    done = _replay(tmp_path, tmp_path / "f", recorded / "live" / "recordings")
    assert done.returncode == 2
    assert "4 recording(s) missing" in done.stderr
    assert "no recording of candidate" in done.stderr
    assert all(label in done.stderr for label in SUPPORT_LABELS)


def test_a_deleted_recording_file_is_listed_as_missing(recorded: Path, tmp_path: Path) -> None:
    store = _copy_recordings(recorded, tmp_path)
    index = load_index(store / "index.json")
    (key,) = [k for k in index.entries if k.case_id == "close-resolved-ticket"]
    (store / f"{index.entries[key]}.jsonl").unlink()
    done = _replay(tmp_path, recorded / "ws", store)
    assert done.returncode == 2
    assert "1 recording(s) missing" in done.stderr and "17/close-resolved-ticket" in done.stderr


def test_an_altered_recording_is_refused(recorded: Path, tmp_path: Path) -> None:
    store = _copy_recordings(recorded, tmp_path)
    victim = sorted(store.glob("*.jsonl"))[0]
    victim.write_bytes(victim.read_bytes().replace(b'"t":0.0', b'"t":0.1', 1))
    done = _replay(tmp_path, recorded / "ws", store)
    assert done.returncode == 2
    assert "content hashes to" in done.stderr and victim.name in done.stderr
    assert not (tmp_path / "replayed").exists()


def test_other_limits_are_another_runtime(recorded: Path, tmp_path: Path) -> None:
    done = _replay(tmp_path, recorded / "ws", recorded / "live" / "recordings",
                   "--timeout", "5")
    assert done.returncode == 2
    assert "the recordings have response_timeout_seconds 10.0, the options ask for 5.0" in \
        done.stderr


def test_recordings_of_another_grader_are_replayed_through_today_s(
        recorded: Path, tmp_path: Path) -> None:
    store = _copy_recordings(recorded, tmp_path)
    index = load_index(store / "index.json")
    moved = RecordingIndex(runtimes=index.runtimes)
    for key, recording in index.entries.items():
        old = RunKey(key.candidate_sha256, key.pack, "0" * 64, key.seed, key.case_id,
                     key.runtime_sha256)
        moved.add(old, recording)
    save_index(moved, store / "index.json")
    done = _replay(tmp_path, recorded / "ws", store)
    assert done.returncode == 0, done.stderr
    assert "replayed recordings made under grader 000000000000 through today's grader" in \
        done.stderr
    assert _report(tmp_path / "replayed")["grader_sha256"] == \
        _report(recorded / "live")["grader_sha256"]


# -- the bundled store format ----------------------------------------------------------------


def _bundle_inputs(recorded: Path) -> tuple[list[StoredRun], dict[str, bytes]]:
    folder = recorded / "live" / "recordings"
    index = load_index(folder / "index.json")
    transcripts = {name: (folder / f"{name}.jsonl").read_bytes()
                   for name in index.entries.values()}
    (runtime,) = index.runtimes.values()
    key = next(iter(index.entries))
    cases = {f"{k.seed}/{k.case_id}": v for k, v in index.entries.items()}
    run = StoredRun(key.candidate_sha256, key.pack, key.grader_sha256, runtime, cases,
                    "python reference")
    # The same transcripts under a second (made-up) candidate: stored once, indexed twice.
    twin = StoredRun("e" * 64, key.pack, key.grader_sha256, runtime, cases, "twin")
    return [run, twin], transcripts


def test_store_round_trip_shares_identical_transcripts(recorded: Path, tmp_path: Path) -> None:
    runs, transcripts = _bundle_inputs(recorded)
    total = write_store(tmp_path / "store", runs, {"support.python.jsonl.zst": transcripts})
    files = sorted(p.name for p in (tmp_path / "store").iterdir())
    assert files == ["index.json", "support.python.jsonl.zst"]
    assert total == sum(p.stat().st_size for p in (tmp_path / "store").iterdir())
    packed = (tmp_path / "store" / "support.python.jsonl.zst").read_bytes()
    content = zstandard.ZstdDecompressor().decompress(packed)
    assert parse_bundle(content, "bundle") == transcripts  # each transcript once
    assert len(packed) < sum(map(len, transcripts.values())) / 3
    store = open_store(tmp_path / "store")
    assert len(store.index.entries) == 2 * len(SUPPORT_LABELS)
    index = json.loads((tmp_path / "store" / "index.json").read_text())
    assert index["schema_version"] == STORE_SCHEMA
    assert [run["label"] for run in index["runs"]] == ["python reference", "twin"]
    for key, recording in store.index.entries.items():
        events = store.events(recording)
        assert Transcript(events).jsonl().encode("ascii") == transcripts[recording]
        assert key.candidate_sha256 in (runs[0].candidate_sha256, "e" * 64)
    # The twin replays like the original: it is the same evidence under another key.
    done = _replay(tmp_path, recorded / "ws", tmp_path / "store")
    assert done.returncode == 0, done.stderr


def test_store_refuses_tampered_bundles(recorded: Path, tmp_path: Path) -> None:
    runs, transcripts = _bundle_inputs(recorded)
    write_store(tmp_path / "store", runs, {"s.jsonl.zst": transcripts})
    bundle = tmp_path / "store" / "s.jsonl.zst"
    content = zstandard.ZstdDecompressor().decompress(bundle.read_bytes())
    bundle.write_bytes(zstandard.ZstdCompressor().compress(content.replace(b"review", b"REVIEW")))
    store = open_store(tmp_path / "store")
    with pytest.raises(InputError, match="content differs from the index"):
        store.events(next(iter(store.index.entries.values())))
    with pytest.raises(InputError, match="does not match its hash"):
        parse_bundle(content.replace(b"review", b"REVIEW"), "bundle")
    with pytest.raises(InputError, match="malformed entry"):
        parse_bundle(b"not a header\n", "bundle")
    with pytest.raises(InputError, match="truncated"):
        parse_bundle(content[:-10], "bundle")
    with pytest.raises(ValueError, match="in no bundle"):
        write_store(tmp_path / "other", runs, {"s.jsonl.zst": {}})
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "index.json").write_text('{"schema_version": "evalarc.other.v9"}')
    with pytest.raises(InputError, match="is not supported"):
        open_store(tmp_path / "odd")
