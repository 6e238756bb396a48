"""Run as ``python -m cancel_probe COMMAND SIGNAL OUTPUT`` (with this folder on ``PYTHONPATH``):
the real ``evalarc`` program with extra commands that write OUTPUT as every writing command does
(a staged folder, published by one rename) and send SIGNAL to their own process at a chosen
point. Started by ``tests/test_cancel_rules.py``.
"""

from __future__ import annotations

import atexit
import os
import signal
import tempfile
from pathlib import Path

import click

from evalarc.bundle import staged_folder
from evalarc.cli import main, run
from evalarc.cli_emit import Outcome, emit
from evalarc.cli_options import command_output
from evalarc.errors import ExitCode

LOOP = "for _ in range(3):\n    pass\n"
OUTPUT = click.argument("output", type=click.Path(path_type=Path), callback=command_output)


def _send(name: str) -> None:
    os.kill(os.getpid(), getattr(signal, name))
    for _ in range(3):  # the handler runs at the next check of the interpreter loop: here
        pass


@main.command("in-exec")
@click.argument("name")
@OUTPUT
def in_exec(name: str, output: Path) -> None:
    """SIGNAL lands inside a string exec, as when ``dataclasses`` defines a class's methods for
    a module imported lazily while the output is written."""
    with staged_folder(output) as folder:
        (folder / "half.txt").write_text("written before the signal\n", encoding="utf-8")
        exec(f"import os, signal\nos.kill(os.getpid(), signal.{name})\n" + LOOP)
    emit(Outcome(ExitCode.ACCEPTED, ["not cancelled"]))


class _Finalized:
    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        _send(self.name)


@main.command("in-finalizer")
@click.argument("name")
@OUTPUT
def in_finalizer(name: str, output: Path) -> None:
    """SIGNAL lands inside ``__del__`` (as in a weakref callback of the import machinery), where
    Python cannot raise: it prints the exception as ignored and goes on."""
    with staged_folder(output) as folder:
        (folder / "half.txt").write_text("written before the signal\n", encoding="utf-8")
        _Finalized(name)  # dropped at once: __del__ runs here
        (folder / "rest.txt").write_text("written after the signal\n", encoding="utf-8")
    emit(Outcome(ExitCode.ACCEPTED, ["not cancelled"]))


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name

    def __set_name__(self, owner: type, attribute: str) -> None:
        _send(self.name)


@main.command("in-class-creation")
@click.argument("name")
@OUTPUT
def in_class_creation(name: str, output: Path) -> None:
    """SIGNAL lands while a class is being created (``__set_name__`` of a dataclass field, in a
    module imported lazily): Python 3.11 turns the KeyboardInterrupt into a RuntimeError."""
    with staged_folder(output) as folder:
        (folder / "half.txt").write_text("written before the signal\n", encoding="utf-8")
        type("Made", (), {"field": _Named(name)})
    emit(Outcome(ExitCode.ACCEPTED, ["not cancelled"]))


@main.command("after-publishing")
@click.argument("name")
@OUTPUT
def after_publishing(name: str, output: Path) -> None:
    """SIGNAL arrives once OUTPUT (the command's declared output) is published, before the
    command has shown its result: the result stands."""
    with staged_folder(output) as folder:
        (folder / "report.txt").write_text("complete\n", encoding="utf-8")
    _send(name)
    emit(Outcome(ExitCode.REJECTED, ["published; the result is 1"]))


@main.command("after-intermediate")
@click.argument("name")
@OUTPUT
def after_intermediate(name: str, output: Path) -> None:
    """SIGNAL arrives once an intermediate folder (inside a scratch folder, as the demo's
    reports are) is published: it cancels the command, which never writes OUTPUT."""
    with tempfile.TemporaryDirectory(prefix="probe-") as scratch:
        with staged_folder(Path(scratch) / "report") as folder:
            (folder / "report.txt").write_text("complete\n", encoding="utf-8")
        _send(name)
        with staged_folder(output) as folder:
            (folder / "site.txt").write_text("not cancelled\n", encoding="utf-8")
    emit(Outcome(ExitCode.ACCEPTED, ["not cancelled"]))


@main.command("after-the-result")
@click.argument("name")
@OUTPUT
def after_the_result(name: str, output: Path) -> None:
    """SIGNAL arrives while the program exits after a command that publishes nothing (as
    ``verify``) has shown its result: from an ``atexit`` callback, the last Python code before
    the interpreter puts the default dispositions back (a signal a moment later would kill the
    process by that signal)."""
    del output
    atexit.register(_send, name)
    emit(Outcome(ExitCode.ACCEPTED, ["verified"]))


if __name__ == "__main__":
    run()
