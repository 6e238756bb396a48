"""Nothing half-written on any signal: SIGINT, SIGTERM or SIGHUP while a writing command is
writing ends with exit 130, ``evalarc: cancelled``, nothing beside the output (no output, no
``.NAME.*.partial`` staging folder or file) and nothing in the command's TMPDIR.

Every writing command is signalled in each of its writing phases with each of the three signals:
``diff`` (``--output``, ``--junit``, ``--markdown``), ``eval-health``, ``hillclimb-review``,
``trajectory``, ``site build``, ``evaluate``, ``audit``, ``demo`` (its last phase here; every
phase in tests/test_cancel.py), ``init`` and ``hillclimb-run`` (whose output folder is a
record of the loop: it stays, marked failed, with no temporary file in it). A phase is a file
appearing in the staging folder (or the staging folder itself). The command runs as a real
process in its own process group; once the phase is seen, the group is stopped (SIGSTOP), the
phase is checked to be still under way (the output is not yet published), the signal is sent
(SIGINT to the group, as Ctrl-C does; SIGTERM and SIGHUP to the process, as ``kill`` and a
closed terminal do) and the group is continued. So the signal always lands inside the phase,
however loaded the machine is; a run that got past the phase before it was stopped is repeated.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "recordings" / "examples"
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
ATTEMPTS = 8


def _bench_site() -> ModuleType:
    name = "evalarc_bench_site"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "site.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def evalarc(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 20,000-case JUnit pair, a split of it, a diff folder of it and a candidate workspace."""
    root = tmp_path_factory.mktemp("inputs")
    baseline, current = _bench_site().write_junit_pair(root, 20_000)
    assert (baseline, current) == (root / "baseline.xml", root / "current.xml")
    (root / "split.json").write_text(
        json.dumps({"schema_version": "evalarc.case-split.v1", "held_out": ["*1"]}),
        encoding="utf-8",
    )
    (root / "reports").mkdir()
    done = evalarc("diff", baseline, current, "--output", root / "reports" / "big-diff")
    assert done.returncode in (0, 1), done.stderr
    done = evalarc("init", root / "candidate", "--task", "support-routing", "--reference")
    assert done.returncode == 0, done.stderr
    return root


LATE = "evalarc: a cancel arrived after the output was published: its result stands"


def _staging(parent: Path, name: str) -> Path | None:
    for entry in parent.iterdir() if parent.is_dir() else ():
        if entry.name.startswith(f".{name}.") and entry.name.endswith(".partial"):
            return entry
    return None


def _as_from_a_terminal() -> None:
    """The child starts with the cancelling signals at their defaults and unblocked, as a shell
    starts a command, whatever earlier tests left in this pytest worker (a disposition left
    ignored there is inherited; tests/test_cancel_rules.py checks EvalArc leaves none)."""
    for number in SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def _send(process: subprocess.Popen[bytes], signum: int) -> None:
    if signum == signal.SIGINT:
        os.killpg(process.pid, signum)  # Ctrl-C: the terminal signals the whole group
    else:
        process.send_signal(signum)


def _finish(process: subprocess.Popen[bytes]) -> str:
    try:
        _, stderr = process.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the command still ran 240 s after the signal (a hang): killed")
    return stderr.decode("utf-8", "replace")


def signal_in_phase(
    argv: list[str | Path],
    signum: int,
    cwd: Path,
    under_way: Callable[[], bool],
    reset: Callable[[], None],
) -> tuple[subprocess.Popen[bytes], str, Path]:
    """Run ``evalarc argv`` in ``cwd`` with an empty TMPDIR; once ``under_way()`` holds, stop
    the group, check it still holds, send ``signum`` and continue the group. A run that got past
    the phase first is finished, ``reset()`` and repeated. Returns the process, its stderr and
    its TMPDIR."""
    temp = cwd / "tmp"
    for _ in range(ATTEMPTS):
        temp.mkdir()
        process = subprocess.Popen(
            [sys.executable, "-m", "evalarc.cli", *map(str, argv)],
            env={**os.environ, "TMPDIR": str(temp), "SOURCE_DATE_EPOCH": "1700000000"},
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_as_from_a_terminal,
        )
        deadline = time.monotonic() + 240
        while process.poll() is None and time.monotonic() < deadline:
            if under_way():
                os.killpg(process.pid, signal.SIGSTOP)
                if under_way():
                    _send(process, signum)
                    os.killpg(process.pid, signal.SIGCONT)
                    stderr = _finish(process)
                    if not stderr.endswith(f"{LATE}\n"):
                        return process, stderr, temp
                    # Stopped inside the publishing step (the staging folder still there, the
                    # rename already decided): the output stands, as tests/test_cancel_rules.py
                    # requires, and this run never reached the phase under test. Again.
                    assert process.returncode in (0, 1), stderr[-800:]
                    break
                os.killpg(process.pid, signal.SIGCONT)
                break
            time.sleep(0.001)
        if process.returncode is None or (process.stderr and not process.stderr.closed):
            _finish(process)
        shutil.rmtree(temp)
        reset()
    pytest.fail(f"the phase was never caught under way in {ATTEMPTS} runs")


def assert_cancelled(process: subprocess.Popen[bytes], stderr: str, temp: Path) -> None:
    assert process.returncode == 130, stderr[-800:]
    assert stderr.endswith("evalarc: cancelled\n"), stderr[-800:]
    assert list(temp.iterdir()) == []


def interrupt_staged(
    argv: list[str | Path],
    output: Path,
    signum: int,
    *,
    inside: str | None = None,
    beside: tuple[Path, ...] = (),
) -> None:
    """Signal ``evalarc argv`` while its staging folder for ``output`` exists (and holds
    ``inside``, when given); then nothing may be left beside ``output`` or in TMPDIR, and the
    files ``beside`` (other outputs of the command) must be as they were."""
    parent = output.parent
    before = {path.name for path in parent.iterdir()} | {"tmp"}
    kept = {path: path.read_bytes() if path.exists() else None for path in beside}

    def under_way() -> bool:
        staging = _staging(parent, output.name)
        return staging is not None and (inside is None or (staging / inside).exists())

    def reset() -> None:
        for path in parent.iterdir():
            if path.name not in before:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        for path, data in kept.items():
            if data is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(data)

    process, stderr, temp = signal_in_phase(argv, signum, parent, under_way, reset)
    assert_cancelled(process, stderr, temp)
    assert {path.name for path in parent.iterdir()} == before
    for path, data in kept.items():
        assert (path.read_bytes() if path.exists() else None) == data, path


# -- diff ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("inside", [None, "diff.json", "summary.md"])
def test_diff_output(inputs: Path, tmp_path: Path, signum: int, inside: str | None) -> None:
    # Staged: the input copies, the report, the summary, then the page (rendered, then written).
    interrupt_staged(
        ["diff", inputs / "baseline.xml", inputs / "current.xml", "--output", tmp_path / "out"],
        tmp_path / "out",
        signum,
        inside=inside,
    )


@pytest.mark.parametrize("signum", SIGNALS)
def test_diff_output_with_junit_and_markdown(inputs: Path, tmp_path: Path, signum: int) -> None:
    # Every requested output is written or none is: no folder, no JUnit file (nor its staged
    # temporary file), the Markdown file as it was.
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier steps\n", encoding="utf-8")
    interrupt_staged(
        [
            "diff",
            inputs / "baseline.xml",
            inputs / "current.xml",
            "--output",
            tmp_path / "out",
            "--junit",
            tmp_path / "junit.xml",
            "--markdown",
            summary,
        ],
        tmp_path / "out",
        signum,
        inside="diff.json",
        beside=(summary, tmp_path / "junit.xml"),
    )


# -- the other reviews of result files ------------------------------------------------------------


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("inside", [None, "health.json", "summary.md"])
def test_eval_health_output(inputs: Path, tmp_path: Path, signum: int, inside: str | None) -> None:
    interrupt_staged(
        [
            "eval-health",
            inputs / "baseline.xml",
            inputs / "current.xml",
            "--output",
            tmp_path / "o",
        ],
        tmp_path / "o",
        signum,
        inside=inside,
    )


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("inside", [None, "split.json", "hillclimb.json"])
def test_hillclimb_review_output(
    inputs: Path, tmp_path: Path, signum: int, inside: str | None
) -> None:
    interrupt_staged(
        [
            "hillclimb-review",
            inputs / "baseline.xml",
            inputs / "current.xml",
            "--held-out",
            inputs / "split.json",
            "--output",
            tmp_path / "o",
        ],
        tmp_path / "o",
        signum,
        inside=inside,
    )


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("inside", [None, "trajectory.json"])
def test_trajectory_output(tmp_path: Path, signum: int, inside: str | None) -> None:
    interrupt_staged(
        [
            "trajectory",
            EXAMPLES / "trajectory" / "checkpoints.json",
            "--budget-seconds",
            "3600",
            "--output",
            tmp_path / "o",
        ],
        tmp_path / "o",
        signum,
        inside=inside,
    )


# -- the site, runs of candidates, the demo, a new workspace ------------------------------------


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("inside", [None, "reports/big-diff", "reports/big-diff/index.html"])
def test_site_build(inputs: Path, tmp_path: Path, signum: int, inside: str | None) -> None:
    interrupt_staged(
        ["site", "build", inputs / "reports", "--output", tmp_path / "site"],
        tmp_path / "site",
        signum,
        inside=inside,
    )


RUN = ["--task", "support-routing", "--backend", "local", "--trust-local", "--quiet"]


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("inside", ["candidate", "recordings", "evaluation.json"])
def test_evaluate_output(inputs: Path, tmp_path: Path, signum: int, inside: str) -> None:
    # The candidate copy, then the cases (each recording as it ends), then the report.
    interrupt_staged(
        [
            "evaluate",
            inputs / "candidate",
            *RUN,
            "--seeds",
            "17",
            "41",
            "97",
            "--output",
            tmp_path / "evaluation",
        ],
        tmp_path / "evaluation",
        signum,
        inside=inside,
    )


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("inside", [None, "recordings", "evaluations"])
def test_audit_output(tmp_path: Path, signum: int, inside: str | None) -> None:
    interrupt_staged(
        ["audit", *RUN, "--seeds", "17", "--output", tmp_path / "audit"],
        tmp_path / "audit",
        signum,
        inside=inside,
    )


@pytest.mark.parametrize("signum", SIGNALS)
def test_demo_site(tmp_path: Path, signum: int) -> None:
    # The demo's last phase (its site); every earlier phase is in tests/test_cancel.py.
    interrupt_staged(["demo", "--quiet", "--output", tmp_path / "site"], tmp_path / "site", signum)


@pytest.mark.parametrize("signum", SIGNALS)
def test_init(tmp_path: Path, signum: int) -> None:
    interrupt_staged(
        ["init", tmp_path / "ws", "--task", "support-routing", "--reference"],
        tmp_path / "ws",
        signum,
    )


# -- hillclimb-run: an output folder that records the loop ----------------------------------------


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize("phase", ["steps/00", "steps/02", "steps/05"])
def test_hillclimb_run(tmp_path: Path, signum: int, phase: str) -> None:
    # The loop writes its folder as it goes (a record of what it did to the workspace): a cancel
    # leaves it with loop.json marked failed, the workspace at its last kept version and no
    # temporary file anywhere.
    climb = tmp_path / "climb"
    out = tmp_path / "run"
    files = sorted(path.name for path in (EXAMPLES / "hillclimb-run" / "workspace").iterdir())

    def reset() -> None:
        shutil.rmtree(climb, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(EXAMPLES / "hillclimb-run", climb)

    reset()
    process, stderr, temp = signal_in_phase(
        ["hillclimb-run", climb / "config.toml", "--output", out, "--trust-local"],
        signum,
        tmp_path,
        lambda: (out / phase).exists() and not (out / "hillclimb.json").exists(),
        reset,
    )
    assert_cancelled(process, stderr, temp)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["climb", "run", "tmp"]
    assert [path for path in out.rglob("*") if ".partial" in path.name] == []
    loop = json.loads((out / "loop.json").read_text(encoding="utf-8"))
    assert (loop["status"], loop["error"]) == ("failed", "Cancelled")
    assert sorted(path.name for path in (climb / "workspace").iterdir()) == files
