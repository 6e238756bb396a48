"""Nothing half-written on any signal: SIGINT, SIGTERM or SIGHUP while a writing command is
writing (its private ``.NAME.*.partial`` staging folder exists, or a given file has appeared in
it) ends with exit 130, no output folder, no staging folder and no temporary folder left.

Each command runs as a real process; the signal is sent the moment the phase is seen on disk.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "recordings" / "examples"


def _bench_site() -> ModuleType:
    name = "evalarc_bench_site"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "site.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    baseline, current = _bench_site().write_junit_pair(tmp_path_factory.mktemp("pair"), 20_000)
    return baseline, current


def _staging(parent: Path, name: str) -> Path | None:
    for entry in parent.iterdir() if parent.is_dir() else ():
        if entry.name.startswith(f".{name}.") and entry.name.endswith(".partial"):
            return entry
    return None


def interrupt_while_writing(
    argv: list[str], output: Path, signum: int, tmp_path: Path, *, inside: str | None = None
) -> None:
    """Run ``evalarc argv``; once its staging folder for ``output`` exists (and holds
    ``inside``, when given), send ``signum``; then check that nothing is left."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    parent_before = {path.name for path in output.parent.iterdir()}
    env = dict(os.environ, TMPDIR=str(temp))
    process = subprocess.Popen(
        [sys.executable, "-m", "evalarc.cli", *argv],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Its own process group, as a shell runs a command: only the signal this test sends
        # reaches it, never one meant for the test runner's group.
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    signalled = False
    while time.monotonic() < deadline and process.poll() is None:
        staging = _staging(output.parent, output.name)
        if staging is not None and (inside is None or (staging / inside).exists()):
            process.send_signal(signum)
            signalled = True
            break
        time.sleep(0.002)
    _, stderr = process.communicate(timeout=120)
    assert signalled, f"the writing phase was never seen: {stderr.decode()[-500:]}"
    assert process.returncode == 130, stderr.decode()[-500:]
    assert stderr.decode().strip().endswith("evalarc: cancelled")
    assert {path.name for path in output.parent.iterdir()} == parent_before
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize(
    ("signum", "inside"),
    [
        (signal.SIGINT, None),
        (signal.SIGTERM, None),
        (signal.SIGHUP, None),
        (signal.SIGTERM, "diff.json"),
        (signal.SIGHUP, "summary.md"),
    ],
)
def test_diff_output(
    pair: tuple[Path, Path], tmp_path: Path, signum: int, inside: str | None
) -> None:
    out = tmp_path / "diff-out"
    interrupt_while_writing(
        ["diff", str(pair[0]), str(pair[1]), "--output", str(out)],
        out,
        signum,
        tmp_path,
        inside=inside,
    )


def test_eval_health_output(pair: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "health-out"
    interrupt_while_writing(
        ["eval-health", str(pair[0]), str(pair[1]), "--output", str(out)],
        out,
        signal.SIGTERM,
        tmp_path,
        inside="health.json",
    )


def test_site_build(pair: tuple[Path, Path], tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalarc.cli",
            "diff",
            str(pair[0]),
            str(pair[1]),
            "--output",
            str(reports / "big-diff"),
        ],
        capture_output=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    out = tmp_path / "site"
    interrupt_while_writing(
        ["site", "build", str(reports), "--output", str(out)],
        out,
        signal.SIGHUP,
        tmp_path,
        inside="reports",
    )


def test_evaluate_output(tmp_path: Path) -> None:
    candidate = tmp_path / "candidate"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalarc.cli",
            "init",
            str(candidate),
            "--task",
            "support-routing",
            "--reference",
        ],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "evaluation"
    interrupt_while_writing(
        [
            "evaluate",
            str(candidate),
            "--task",
            "support-routing",
            "--backend",
            "local",
            "--trust-local",
            "--seeds",
            "17",
            "41",
            "97",
            "--quiet",
            "--output",
            str(out),
        ],
        out,
        signal.SIGTERM,
        tmp_path,
        inside="candidate",
    )


def test_demo(tmp_path: Path) -> None:
    out = tmp_path / "demo-site"
    interrupt_while_writing(
        ["demo", "--quiet", "--output", str(out)],
        out,
        signal.SIGHUP,
        tmp_path,
    )


def test_audit_output(tmp_path: Path) -> None:
    out = tmp_path / "audit"
    interrupt_while_writing(
        [
            "audit",
            "--task",
            "support-routing",
            "--backend",
            "local",
            "--trust-local",
            "--seeds",
            "17",
            "--quiet",
            "--output",
            str(out),
        ],
        out,
        signal.SIGINT,
        tmp_path,
    )

