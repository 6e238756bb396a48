"""`evalarc demo` builds the whole demo from bundled recordings and examples, with no Docker, and
the site it writes recomputes with `evalarc verify`."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalarc.cli import main


def test_demo_site_is_complete_and_verifies(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = CliRunner().invoke(main, ["demo", "--output", str(site), "--quiet"])
    assert result.exit_code == 0, result.output
    reports = sorted(path.name for path in (site / "reports").iterdir())
    assert reports == [
        "audit-durable-kv",
        "audit-robot-evidence-review",
        "audit-support-routing",
        "diff-inspect-refund-policy",
        "diff-support-regression",
        "eval-health-refund-policy",
        "evaluation-support-close-unresolved",
        "evaluation-support-new-key-on-retry",
        "hillclimb-ticket-routing",
        "trajectory-durable-kv",
    ]
    regression = json.loads(
        (site / "reports/diff-support-regression/diff.json").read_text(encoding="utf-8")
    )
    assert regression["baseline"]["headline"]["value"] == 0.9
    assert regression["current"]["headline"]["value"] == 0.9375
    kinds = sorted((row["kind"], row["case_id"], row["check"]) for row in regression["changes"])
    assert kinds == [
        ("improved", "17/retry-before-commit", "closure"),
        ("improved", "17/route-open-ticket", "closure"),
        ("regressed", "17/retry-after-commit", "notes"),
    ]
    assert regression["gate_passed"] is False
    expected = {
        "durable-kv": (8, ["accept-nonstring-keys", "boolean-equals-one", "partial-batch"]),
        "support-routing": (7, ["new-key-on-retry", "skip-retry"]),
        "robot-evidence-review": (6, ["assume-complete"]),
    }
    for task, (faults, single_case) in expected.items():
        audit = json.loads((site / f"reports/audit-{task}/audit.json").read_text(encoding="utf-8"))
        assert (audit["killed"], audit["total"], audit["passed"]) == (faults, faults, True)
        assert audit["detection"]["weakest_margin"] == 1
        assert sorted(audit["detection"]["single_case_detections"]) == single_case
    verified = CliRunner().invoke(main, ["verify", str(site), "--json"])
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["verified"] is True
    # In words: the records are consistent, and separately, which verdicts are failing gates.
    plain = CliRunner().invoke(main, ["verify", str(site)])
    assert plain.exit_code == 0, plain.output
    lines = plain.stdout.splitlines()
    # The docs are counted apart from the evidence: prose, not recomputed.
    files = json.loads(verified.stdout)["files"]
    prose = sum(1 for row in files.values() if row["role"] == "prose")
    assert prose > 0
    assert lines[0] == f"Verified site: {len(files) - prose} evidence files and {prose} files " + (
        "of docs (prose, not recomputed); the records are consistent."
    )
    assert lines[-1].startswith("Verdicts: 5 of the site's 10 reports are failing gates")
    assert "diff-support-regression" in lines[-1] and "audit-durable-kv" not in lines[-1]


def test_demo_refuses_an_existing_output(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--output", str(tmp_path)])
    assert result.exit_code == 2
    assert "already exists" in result.stderr


def _build_demo(where: Path) -> Path:
    """Run the real `evalarc demo` from inside ``where`` (a folder of its own)."""
    where.mkdir()
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000", "TMPDIR": str(where)}
    subprocess.run(
        [str(Path(sys.executable).parent / "evalarc"), "demo", "--output", "site", "--quiet"],
        cwd=where,
        env=env,
        check=True,
        capture_output=True,
    )
    return where / "site"


def _tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.mark.slow
def test_two_demo_builds_are_byte_identical_and_hold_no_machine_path(tmp_path: Path) -> None:
    first = _tree(_build_demo(tmp_path / "first"))
    second = _tree(_build_demo(tmp_path / "elsewhere-second"))
    assert len(first) > 500
    assert sorted(first) == sorted(second)
    differing = [name for name in first if first[name] != second[name]]
    assert differing == []

    repo = Path(__file__).resolve().parents[1]
    machine = {
        str(tmp_path.resolve()),
        str(tmp_path),
        str(repo),
        str(Path(sys.executable).parent),
        str(Path.home()),
    }
    needles = [text.encode() for text in machine if len(text) > 1]
    host = socket.gethostname()
    word = re.compile(rb"(?<![A-Za-z0-9_.-])" + re.escape(host.encode()) + rb"(?![A-Za-z0-9_-])")
    found = []
    for name, data in first.items():
        found.extend(f"{name}: {needle.decode()}" for needle in needles if needle in data)
        if name.endswith((".json", ".jsonl", ".html", ".md", ".txt", ".xml")) and word.search(data):
            found.append(f"{name}: host name {host}")
    assert found == []


def test_demo_script_refuses_an_existing_folder_and_deletes_nothing(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[1] / "scripts" / "demo.sh"
    mine = tmp_path / "my-site"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine", encoding="utf-8")
    for argument in (str(mine), "my-site"):
        result = subprocess.run(
            ["bash", str(script), argument], cwd=tmp_path, capture_output=True, text=True
        )
        assert result.returncode == 2, result.stderr
        assert "already exists" in result.stderr
        assert (mine / "keep.txt").read_text(encoding="utf-8") == "mine"
        assert sorted(path.name for path in tmp_path.iterdir()) == ["my-site"]
