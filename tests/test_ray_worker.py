"""What a Ray worker runs for a case (``run_case_on_node``), called in-process with the real
Docker engine: the snapshot arrives as a blob and is checked, a worker keeps a bounded number
of candidates' backends however many candidates a sweep sends it, and a node's sweep removes
the snapshot copies no case holds (a run's own as it ends, any other once idle) but never one
a case runs from."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evalarc import ray_executor
from evalarc.errors import EnvironmentFailure
from evalarc.packs import load_pack, materialize_workspace
from evalarc.runtime.snapshot import snapshot_candidate

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")


def _snapshots(tmp_path: Path, faults: list[str | None]) -> list[tuple[bytes, str]]:
    pack = load_pack("durable-kv")
    made = []
    for number, fault in enumerate(faults):
        workspace = tmp_path / f"w{number}"
        materialize_workspace(
            "durable-kv", "python", reference=True, fault=fault, dest=workspace, contract=False
        )
        snapshot = snapshot_candidate(workspace, tmp_path / f"s{number}", pack.default_command)
        made.append((ray_executor.snapshot_blob(snapshot), snapshot.sha256))
    return made


def test_a_worker_keeps_a_bounded_number_of_backends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "node"))
    (tmp_path / "node").mkdir()
    monkeypatch.setattr(ray_executor.tempfile, "tempdir", None)
    monkeypatch.setattr(ray_executor, "MAX_BACKENDS", 2)
    monkeypatch.setattr(ray_executor, "_BACKENDS", ray_executor.OrderedDict())
    pack = load_pack("durable-kv")
    controls = _snapshots(tmp_path, [None, "memory-only", "delete-noop"])
    statuses = []
    for blob, sha256 in [*controls, controls[0]]:
        header, transcript = ray_executor.run_case_on_node(
            "durable-kv", blob, sha256, 17, "read-write-delete", pack.limits, IMAGE
        )
        statuses.append(header["record"]["status"])
        # The header names the snapshot run and the size of the transcript sent beside it.
        assert header["candidate_sha256"] == sha256
        assert header["transcript_bytes"] == len(transcript) > 0
        assert len(ray_executor._BACKENDS) <= 2
        assert next(reversed(ray_executor._BACKENDS))[0] == sha256
    assert statuses[0] == statuses[3] == "passed"
    assert [key[0] for key in ray_executor._BACKENDS] == [controls[2][1], controls[0][1]]
    for backend in ray_executor._BACKENDS.values():
        backend.client.close()


def test_a_snapshot_that_arrives_altered_is_refused(tmp_path: Path) -> None:
    pack = load_pack("durable-kv")
    (blob, _), (_, other) = _snapshots(tmp_path, [None, "memory-only"])
    with pytest.raises(EnvironmentFailure, match="arrived as"):
        ray_executor.unpack_snapshot(blob, other, list(pack.default_command), tmp_path)


def test_a_sweep_removes_the_copies_no_case_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = tmp_path / "node"
    node.mkdir()
    monkeypatch.setenv("TMPDIR", str(node))
    monkeypatch.setattr(ray_executor.tempfile, "tempdir", None)
    monkeypatch.setattr(ray_executor, "_BACKENDS", ray_executor.OrderedDict())
    pack = load_pack("durable-kv")
    (blob, mine), (other_blob, other) = _snapshots(tmp_path, [None, "memory-only"])
    for data, sha256 in ((blob, mine), (other_blob, other)):
        ray_executor.unpack_snapshot(data, sha256, list(pack.default_command), node)
    killed = node / f"evalarc-worker-unpack-{mine[:32]}-killed"  # a worker killed mid-unpack
    killed.mkdir()
    held = ray_executor.hold_copy(node, mine)  # as a case running from the copy does
    assert held is not None
    try:
        # The run of ``mine`` ends: its leftovers go, but not the copy a case still holds; the
        # other run's copy, used just now, stays too.
        ray_executor.sweep_node([mine])
        assert not killed.exists()
        assert ray_executor.copy_folder(node, mine).is_dir()
        assert ray_executor.copy_folder(node, other).is_dir()
        # Past the idle bound (0 s here) the copy nobody holds goes; the held one stays.
        ray_executor.sweep_node([], idle_seconds=0)
        assert ray_executor.copy_folder(node, mine).is_dir()
        assert not ray_executor.copy_folder(node, other).exists()
    finally:
        os.close(held)
    ray_executor.sweep_node([], idle_seconds=0)
    assert sorted(entry.name for entry in node.iterdir()) == []
    # A worker that finds its copy swept unpacks (and checks) a new one and holds it.
    header, _ = ray_executor.run_case_on_node(
        "durable-kv", blob, mine, 17, "read-write-delete", pack.limits, IMAGE)
    assert header["record"]["status"] == "passed"
    copy = ray_executor.copy_folder(node, mine)
    assert (copy / "snapshot" / "main.py").is_file() and (copy / ray_executor.LOCK_FILE).is_file()
    ray_executor.sweep_node([mine])  # nothing holds it once the case ended
    assert not copy.exists()
    for backend in ray_executor._BACKENDS.values():
        backend.client.close()
    shutil.rmtree(node, ignore_errors=True)
