"""The rules of a cancel (``evalarc/cancel.py``), each shown on a real ``evalarc`` process: the
probe commands of ``tests/probes/cancel_probe.py`` run inside the real command group, started as
``python -m`` (as tests/test_signals.py starts every command), and send the signal to their own
process at the point each rule is about, so every run hits it (no timing involved).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

import pytest

from evalarc.cancel import (
    CANCELLING_SIGNALS,
    Cancelled,
    end,
    install,
    signals_held,
    temporary_folder,
)

PROBES = Path(__file__).resolve().parent / "probes"
NAMES = ["SIGINT", "SIGTERM", "SIGHUP"]


def _with_probes() -> str:
    """PYTHONPATH with the probes first, keeping what the caller set (a worktree run as
    ``PYTHONPATH=$PWD``: the probes must use that evalarc, not an installed one)."""
    return os.pathsep.join(filter(None, [str(PROBES), os.environ.get("PYTHONPATH")]))


def _as_from_a_terminal() -> None:
    """The probe starts with the cancelling signals at their defaults and unblocked, as a shell
    starts a command, whatever this test process inherited (see tests/test_signals.py)."""
    for number in CANCELLING_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, CANCELLING_SIGNALS)


def probe(command: str, name: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    temp = tmp_path / "tmp"
    temp.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    return subprocess.run(
        [sys.executable, "-m", "cancel_probe", command, name, "out"],
        cwd=work,
        env={**os.environ, "PYTHONPATH": _with_probes(), "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
        preexec_fn=_as_from_a_terminal,
    )


def left(tmp_path: Path) -> list[str]:
    return sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))


@pytest.mark.parametrize("name", NAMES)
def test_a_cancel_inside_a_string_exec_exits_130(name: str, tmp_path: Path) -> None:
    # CPython records a bare KeyboardInterrupt leaving a string exec as unhandled even once it
    # is caught, and a program started with `python -m` then kills itself with SIGINT: CI saw
    # 'evalarc: cancelled' followed by returncode -2.
    done = probe("in-exec", name, tmp_path)
    assert (done.returncode, done.stderr) == (130, "evalarc: cancelled\n")
    assert left(tmp_path) == ["tmp", "work"]


@pytest.mark.parametrize("name", NAMES)
def test_a_cancel_python_had_to_drop_still_cancels(name: str, tmp_path: Path) -> None:
    # Raised inside __del__ (or a weakref callback), the exception cannot propagate: Python
    # printed it as ignored and the command went on to publish its folder and exit 0.
    done = probe("in-finalizer", name, tmp_path)
    assert (done.returncode, done.stderr) == (130, "evalarc: cancelled\n")
    assert left(tmp_path) == ["tmp", "work"]


@pytest.mark.parametrize("name", NAMES)
def test_a_cancel_during_class_creation_exits_130(name: str, tmp_path: Path) -> None:
    # Python wraps it in "RuntimeError: Error calling __set_name__": the command exited 1 with
    # a traceback (seen once in 80 demo runs by bench/cancel_loop.py).
    done = probe("in-class-creation", name, tmp_path)
    assert (done.returncode, done.stderr) == (130, "evalarc: cancelled\n")
    assert left(tmp_path) == ["tmp", "work"]


@pytest.mark.parametrize("name", NAMES)
def test_a_cancel_after_the_output_is_published_keeps_the_result(name: str, tmp_path: Path) -> None:
    done = probe("after-publishing", name, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout == "published; the result is 1\n"
    assert done.stderr == (
        "evalarc: a cancel arrived after the output was published: its result stands\n"
    )
    assert left(tmp_path) == ["tmp", "work", "work/out", "work/out/report.txt"]


@pytest.mark.parametrize("name", NAMES)
def test_a_cancel_after_an_intermediate_folder_cancels_the_command(
    name: str, tmp_path: Path
) -> None:
    # The demo publishes its reports into a scratch folder before it builds the site: a cancel
    # arriving right after one of them must cancel the demo, not wait for the site.
    done = probe("after-intermediate", name, tmp_path)
    assert (done.returncode, done.stderr) == (130, "evalarc: cancelled\n")
    assert left(tmp_path) == ["tmp", "work"]


@pytest.mark.parametrize("name", NAMES)
def test_a_cancel_after_the_result_of_a_command_that_publishes_nothing_changes_nothing(
    name: str, tmp_path: Path
) -> None:
    # A Ctrl-C right after `verify` printed its result killed the process by SIGINT (returncode
    # -2) under load: the command had ended, its handlers stayed, and Python restores the
    # default disposition while it shuts down. The program ignores cancels once it only exits.
    done = probe("after-the-result", name, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "verified\n", "")
    assert left(tmp_path) == ["tmp", "work"]


@pytest.mark.parametrize("signum", CANCELLING_SIGNALS)
def test_a_held_signal_is_delivered_when_the_step_ends(signum: int) -> None:
    install()
    try:
        reached = False
        with pytest.raises(Cancelled) as cancelled, signals_held() as arrived:
            signal.raise_signal(signum)
            assert arrived()
            reached = True  # the step ran to its end first
        assert reached
        assert cancelled.value.signum == signum
    finally:
        assert end() == []
    # The command has ended: its cancel is not raised again in later library calls.
    with signals_held():
        pass


def test_an_ignored_signal_stays_ignored(tmp_path: Path) -> None:
    # A background job of a shell (or nohup) starts with SIGINT ignored: the command keeps it so
    # (SIGTERM still cancels it).
    script = (
        "import os, signal, sys\n"
        "from evalarc.cancel import install\n"
        "install()\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "print('ignored', file=sys.stderr)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "for _ in range(3):\n"
        "    pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert done.returncode == 1
    assert done.stderr.startswith("ignored\nTraceback")
    assert done.stderr.rstrip().endswith("evalarc.cancel.Cancelled: SIGTERM")


def test_a_command_run_in_process_leaves_the_signal_dispositions_as_it_found_them(
    tmp_path: Path,
) -> None:
    # The program ignores further cancels while it exits after a published result; a process
    # that runs a command and goes on must not: an ignored disposition is inherited by every
    # process it starts afterwards, which could then never be cancelled.
    from click.testing import CliRunner

    from evalarc.cli import main

    examples = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "results-diff"
    before = {number: signal.getsignal(number) for number in CANCELLING_SIGNALS}
    result = CliRunner().invoke(
        main,
        [
            "diff",
            str(examples / "inspect" / "baseline.json"),
            str(examples / "inspect" / "current.json"),
            "--output",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert (tmp_path / "out" / "diff.json").is_file()
    assert {number: signal.getsignal(number) for number in CANCELLING_SIGNALS} == before
    child = subprocess.run(
        [sys.executable, "-c", "print(open('/proc/self/status').read())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    ignored = next(line for line in child.stdout.splitlines() if line.startswith("SigIgn:"))
    mask = int(ignored.split()[1], 16)
    assert [number for number in CANCELLING_SIGNALS if mask & (1 << (number - 1))] == []


# -- temporary folders: a signal at every line of making, using and removing one --------------

_TRACED = ("evalarc/cancel.py", "/contextlib.py", "/tempfile.py", "/shutil.py", __file__)


def _use_a_temporary_folder(temp: Path) -> None:
    with temporary_folder("evalarc-verify-", parent=temp) as work:
        for number in range(3):
            (work / f"file-{number}").write_text("x", encoding="ascii")
        (work / "sub").mkdir()
        (work / "sub" / "file").write_text("y", encoding="ascii")


def _signal_at_line(signum: int, at: int | None, temp: Path) -> tuple[int, bool, str]:
    """Run :func:`_use_a_temporary_folder` inside a command, raising ``signum`` at the ``at``-th
    line executed in the traced files (None: never); return the lines counted, whether the
    command was cancelled and where the signal was raised. The signal is a real one: its
    handler runs at the interpreter's next check, a few bytecodes on, as a Ctrl-C would."""
    seen = 0
    where = ""

    def local(frame: FrameType, event: str, arg: object) -> object:
        nonlocal seen, where
        if event == "line":
            if seen == at:
                code = frame.f_code
                where = f"{Path(code.co_filename).name}:{frame.f_lineno} ({code.co_name})"
                signal.raise_signal(signum)
            seen += 1
        return local

    def scope(frame: FrameType, event: str, arg: object) -> object:
        return local if frame.f_code.co_filename.endswith(_TRACED) else None

    # As a terminal starts a command, whatever this process inherited (a test run in the
    # background or under nohup ignores SIGINT or SIGHUP, and the command keeps an ignored one).
    inherited = signal.signal(signum, signal.SIG_DFL)
    install()
    cancelled = False
    try:
        sys.settrace(scope)
        try:
            _use_a_temporary_folder(temp)
        finally:
            sys.settrace(None)
    except Cancelled:
        cancelled = True
    finally:
        end()
        signal.signal(signum, inherited)
    return seen, cancelled, where


@pytest.mark.parametrize("signum", CANCELLING_SIGNALS)
def test_a_signal_at_any_line_leaves_no_temporary_folder(signum: int, tmp_path: Path) -> None:
    # CI under load found an evalarc-verify-* folder in TMPDIR after a Ctrl-C: mkdtemp() then
    # `try:` has a window between the two, and the rmtree in `finally` could itself be cut
    # short. Here the signal lands after each line of making, filling and removing the folder
    # (tempfile, shutil and contextlib included); the command's end removes what was left.
    temp = tmp_path / "tmp"
    temp.mkdir()
    _signal_at_line(signum, None, temp)  # first calls run one-off code (tempfile's name source)
    lines, cancelled, _ = _signal_at_line(signum, None, temp)
    assert not cancelled and lines > 50 and list(temp.iterdir()) == []
    for at in range(lines):
        _, cancelled, where = _signal_at_line(signum, at, temp)
        assert list(temp.iterdir()) == [], f"left after a signal at {where}"
        assert cancelled, f"a signal at {where} did not cancel"


def test_every_temporary_folder_is_made_through_evalarc_cancel() -> None:
    # The folders a cancel could leave behind: each is made by evalarc.cancel (created and
    # registered with the signals held). The exceptions remove theirs some other way: the state
    # folders of local runs live inside the run's own work folder; a Ray worker's folders are
    # swept by owner (evalarc.runtime.owner); `site serve` removes its workspace itself.
    allowed = {"cancel.py", "runtime/local.py", "ray_executor.py", "site/serve.py"}
    source = Path(__file__).resolve().parents[1] / "evalarc"
    found = []
    for path in sorted(source.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if re.search(r"\bmkdtemp\(|TemporaryDirectory\(", text):
            found.append(path.relative_to(source).as_posix())
    assert set(found) <= allowed, sorted(set(found) - allowed)
