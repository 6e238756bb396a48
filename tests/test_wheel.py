"""The wheel carries packs, templates, assets and recordings, and renders a report when installed
outside the checkout (the bundled folders are found the same way from a wheel)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_installed_wheel_renders_a_report(tmp_path: Path, corpus: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = dist.glob("evalarc-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "evalarc/_bundled/site_templates/diff.html.j2" in names
    assert "evalarc/_bundled/assets/evalarc.css" in names
    assert "evalarc/_bundled/site_templates/_blocks.html.j2" in names
    for pack in ("durable-kv", "robot-evidence-review", "support-routing"):
        assert f"evalarc/_bundled/packs/{pack}/views.toml" in names

    target = tmp_path / "site-packages"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
    )
    # The dependencies come from this interpreter's environment; evalarc itself only from the
    # wheel: the working directory and PYTHONPATH keep the checkout out of sys.path.
    env = {**os.environ, "PYTHONPATH": str(target), "PYTHONSAFEPATH": "1"}
    out = tmp_path / "report"
    script = (
        "import sys, evalarc; from evalarc.cli import main; "
        "assert 'site-packages' in evalarc.__file__, evalarc.__file__; "
        "sys.argv[0] = 'evalarc'; main()"
    )
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "diff",
            str(corpus / "junit/pytest/baseline.xml"),
            str(corpus / "junit/pytest/current.xml"),
            "--output",
            str(out),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 1, completed.stderr
    # The packs' trace views are read from the wheel's own copy of packs/.
    views = subprocess.run(
        [sys.executable, "-c",
         "from evalarc.packs import pack_trace_view as v; "
         "print(v('support-routing').view, v('robot-evidence-review').view, "
         "v('durable-kv').view)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )
    assert views.stdout.split() == ["episode", "report-fields", "transcript"]
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Content-Security-Policy" in page
    assert "tests.test_calc::test_sub" in page
