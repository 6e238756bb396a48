"""A cancelled ``verify`` leaves nothing in TMPDIR (issue 24, item 1: the private copies).

``verify`` streams each file it reads into a private folder ``evalarc-private-*`` in TMPDIR
(:func:`evalarc.bundle.private_reads`). The signal is sent once that folder exists, while the
copies are being made and parsed; the command must end with exit 130 and an empty TMPDIR.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EVALARC = [sys.executable, "-c", "from evalarc.cli import run; run()"]
CASES = 30_000


def _junit(path: Path, fail_every: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuite name="s">\n')
        for index in range(CASES):
            name = f'classname="pkg.mod{index % 50}" name="test_{index}" time="0.01"'
            if fail_every and index % fail_every == 0:
                handle.write(f'<testcase {name}><failure message="boom">no</failure></testcase>\n')
            else:
                handle.write(f"<testcase {name}/>\n")
        handle.write("</testsuite>\n")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A diff folder of two 30,000-case JUnit files (made by this test: the shape pytest
    writes), large enough for ``verify`` to take a while."""
    root = tmp_path_factory.mktemp("verify-cancel")
    _junit(root / "baseline.xml", 0)
    _junit(root / "current.xml", 97)
    out = root / "diff"
    done = subprocess.run(
        [*EVALARC, "diff", str(root / "baseline.xml"), str(root / "current.xml"), "--output",
         str(out)],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert done.returncode == 1, done.stderr
    return out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_cancelled_verify_leaves_no_private_copy(
    folder: Path, tmp_path: Path, signum: int
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    process = subprocess.Popen(
        [*EVALARC, "verify", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join(sys.path)},
        start_new_session=True,
    )
    deadline = time.monotonic() + 120

    def private() -> list[str]:
        return [e.name for e in temp.iterdir() if e.name.startswith("evalarc-private-")]

    while not private() and process.poll() is None:
        assert time.monotonic() < deadline, "verify never made its private folder"
        time.sleep(0.005)
    assert process.poll() is None, "verify finished before it could be cancelled"
    os.kill(process.pid, signum)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert list(temp.iterdir()) == []
