"""What a Ray worker runs for a case (``run_case_on_node``), called in-process with the real
Docker engine: the snapshot arrives as a blob and is checked, and a worker keeps a bounded number
of candidates' backends however many candidates a sweep sends it."""

from __future__ import annotations

import os
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
        answer = ray_executor.run_case_on_node(
            "durable-kv", blob, sha256, 17, "read-write-delete", pack.limits, IMAGE
        )
        statuses.append(answer["record"]["status"])
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
