"""Recordings by content hash, their verification, and the run-key index."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from evalarc.errors import InputError
from evalarc.runtime.local import LocalBackend
from evalarc.runtime.protocol import Limits, Transcript
from evalarc.runtime.recording import (
    INDEX_SCHEMA,
    RecordingIndex,
    RunKey,
    load_index,
    read_recording,
    recording_path,
    runtime_fingerprint,
    save_index,
    write_recording,
)

CANDIDATE = Path(__file__).parent / "candidates" / "behaviours"


def sample() -> Transcript:
    transcript = Transcript()
    transcript.add("start", 0, 0.0001, argv=["python3", "main.py"])
    transcript.add("send", 0, 0.01234, line='{"op": "get", "key": "\\u00e9"}')
    transcript.add("recv", 0, 0.02, line='{"ok":true,"found":false}')
    transcript.add("kill", 0, 0.03)
    transcript.add("exit", 0, 0.031, code=-9)
    return transcript


def test_write_names_the_file_by_the_hash_of_its_bytes(tmp_path: Path) -> None:
    transcript = sample()
    sha = write_recording(transcript, tmp_path / "rec")
    path = tmp_path / "rec" / f"{sha}.jsonl"
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == sha == transcript.sha256()
    lines = data.decode().splitlines()
    assert len(lines) == 5
    assert json.loads(lines[1]) == {"event": "send", "session": 0, "t": 0.012,
                                    "line": '{"op": "get", "key": "\\u00e9"}'}
    assert lines[0] == '{"argv":["python3","main.py"],"event":"start","session":0,"t":0.0}'
    assert [name for name in os.listdir(tmp_path / "rec")] == [f"{sha}.jsonl"]
    assert write_recording(transcript, tmp_path / "rec") == sha
    assert len(os.listdir(tmp_path / "rec")) == 1


def test_round_trip(tmp_path: Path) -> None:
    transcript = sample()
    sha = write_recording(transcript, tmp_path)
    assert read_recording(tmp_path, sha).events == transcript.events
    empty = write_recording(Transcript(), tmp_path)
    assert empty == hashlib.sha256(b"").hexdigest()
    assert read_recording(tmp_path, empty).events == []


def test_tampered_recording_is_refused(tmp_path: Path) -> None:
    sha = write_recording(sample(), tmp_path)
    path = recording_path(tmp_path, sha)
    path.write_bytes(path.read_bytes().replace(b"-9", b"-7"))
    with pytest.raises(InputError, match="hashes to"):
        read_recording(tmp_path, sha)


def test_non_canonical_bytes_are_refused_even_with_a_matching_name(tmp_path: Path) -> None:
    data = b'{"event": "kill", "session": 0, "t": 0.0}\n'
    sha = hashlib.sha256(data).hexdigest()
    (tmp_path / f"{sha}.jsonl").write_bytes(data)
    with pytest.raises(InputError, match="canonical"):
        read_recording(tmp_path, sha)


@pytest.mark.parametrize("line", [
    b"[1]", b'{"event":"dance","session":0,"t":0}', b'{"event":"kill","session":-1,"t":0}',
    b'{"event":"kill","session":true,"t":0}', b'{"event":"kill","session":0}', b"{",
    b'{"event":"kill","event":"kill","session":0,"t":0}',
])
def test_malformed_events_are_refused(tmp_path: Path, line: bytes) -> None:
    data = line + b"\n"
    sha = hashlib.sha256(data).hexdigest()
    (tmp_path / f"{sha}.jsonl").write_bytes(data)
    with pytest.raises(InputError, match="line 1"):
        read_recording(tmp_path, sha)


def test_size_bound_symlink_and_missing(tmp_path: Path) -> None:
    sha = write_recording(sample(), tmp_path)
    with pytest.raises(InputError, match="larger than 100 bytes"):
        read_recording(tmp_path, sha, max_bytes=100)
    other = tmp_path / "other"
    other.mkdir()
    (other / f"{sha}.jsonl").symlink_to(recording_path(tmp_path, sha))
    with pytest.raises(InputError, match="cannot open"):
        read_recording(other, sha)
    with pytest.raises(InputError, match="cannot open"):
        read_recording(tmp_path, "0" * 64)
    with pytest.raises(InputError, match="not a SHA-256"):
        read_recording(tmp_path, "../" + sha[3:])


def test_a_real_local_run_records_and_replays_its_bytes(tmp_path: Path) -> None:
    limits = Limits(response_timeout=2.0, case_timeout=5.0)
    command = ["{python}", "-I", "-B", "main.py", "serve", "{state}"]
    backend = LocalBackend(CANDIDATE, command, limits, tmp_path / "work")
    with backend.open_case("17/recorded") as run:
        session = run.start_session()
        session.exchange({"op": "put", "key": "k", "value": "ü"})
        session.stop_eof()
    sha = write_recording(run.transcript, tmp_path / "recordings")
    loaded = read_recording(tmp_path / "recordings", sha)
    assert loaded.events == run.transcript.events
    assert [event["event"] for event in loaded.events] == [
        "start", "send", "recv", "eof", "exit", "stderr"]

    key = RunKey(candidate_sha256="a" * 64, pack="durable-kv@0.1.0", grader_sha256="b" * 64,
                 seed=17, case_id="recorded",
                 runtime_sha256=runtime_fingerprint(backend.runtime()))
    index = RecordingIndex()
    index.add(key, sha, backend.runtime())
    save_index(index, tmp_path / "recordings" / "index.json")
    reloaded = load_index(tmp_path / "recordings" / "index.json")
    assert reloaded.lookup(key) == sha
    assert reloaded.runtimes[key.runtime_sha256]["backend"] == "local"


def key(seed: int = 17, case_id: str = "read-write-delete") -> RunKey:
    return RunKey(candidate_sha256="1" * 64, pack="durable-kv@0.1.0", grader_sha256="2" * 64,
                  seed=seed, case_id=case_id, runtime_sha256="3" * 64)


def test_index_round_trip_is_sorted_and_stable(tmp_path: Path) -> None:
    index = RecordingIndex()
    index.add(key(97), "c" * 64)
    index.add(key(17, "z"), "d" * 64)
    index.add(key(17, "a"), "e" * 64)
    path = tmp_path / "index.json"
    save_index(index, path)
    first = path.read_bytes()
    document = json.loads(first)
    assert document["schema_version"] == INDEX_SCHEMA
    assert [(entry["seed"], entry["case_id"]) for entry in document["entries"]] == [
        (17, "a"), (17, "z"), (97, "read-write-delete")]
    loaded = load_index(path)
    assert loaded.entries == index.entries
    save_index(loaded, path)
    assert path.read_bytes() == first
    assert loaded.lookup(key(41)) is None


def test_rerecording_replaces_the_hash() -> None:
    index = RecordingIndex()
    index.add(key(), "a" * 64)
    index.add(key(), "b" * 64)
    assert index.lookup(key()) == "b" * 64 and len(index.entries) == 1


def test_missing_index_is_empty(tmp_path: Path) -> None:
    assert load_index(tmp_path / "nothing.json").entries == {}


def test_runtime_must_match_its_fingerprint() -> None:
    runtime = {"backend": "local", "command": ["{python}", "main.py"]}
    assert runtime_fingerprint(runtime) == hashlib.sha256(
        b'{"backend": "local", "command": ["{python}", "main.py"]}').hexdigest()
    with pytest.raises(ValueError, match="runtime_sha256"):
        RecordingIndex().add(key(), "a" * 64, runtime)


@pytest.mark.parametrize("change", [
    {"candidate_sha256": "A" * 64}, {"pack": "durable-kv"}, {"seed": True}, {"case_id": ""},
    {"runtime_sha256": "3" * 63},
])
def test_invalid_keys_are_refused(change: dict[str, object]) -> None:
    fields = {**key().to_json(), **change}
    with pytest.raises(ValueError):
        RunKey.from_json(fields)


def test_newer_or_broken_index_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    path.write_text(json.dumps({"schema_version": "evalarc.recording-index.v2",
                                "entries": [], "runtimes": {}}))
    with pytest.raises(InputError, match=r"recording-index\.v2"):
        load_index(path)
    good = RecordingIndex()
    good.add(key(), "a" * 64)
    document = good.to_json()
    document["entries"][0]["recording"] = "not-a-hash"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match="entry 0"):
        load_index(path)
    path.write_text(json.dumps({**good.to_json(), "runtimes": {"3" * 64: {"backend": "x"}}}))
    with pytest.raises(InputError, match="does not match"):
        load_index(path)
