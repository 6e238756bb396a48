"""Cancelling a command: SIGINT (Ctrl-C), SIGTERM and SIGHUP.

* :func:`install` (called as each command starts) makes every cancelling signal whose disposition
  is the default raise :class:`Cancelled` in the main thread, so the command's cleanup runs and it
  exits 130. A signal the program was started with ignored (a background job, ``nohup``) stays
  ignored.
* :func:`signals_held` holds the signals around a step a cancel must not cut in half (creating or
  removing a staging folder, the scheduler's thread pool) and delivers them when it ends.
* A cancel is never lost: one raised where Python cannot propagate an exception (a weakref
  callback or ``__del__`` running during an import: Python prints "Exception ignored" and drops
  it) is remembered and raised again when a held step ends, before anything is published and
  before the command's result is shown (:func:`check`).
* Publishing the command's own output (a folder declared with :func:`declare_output`) is the
  point of no return (:func:`publishing`): a cancel that arrives afterwards is held until the
  command ends (:func:`end`), so the published result and its exit code stand.
* Every temporary folder is made by :func:`new_temporary_folder` (or :func:`temporary_folder`):
  created and registered with the signals held, removed with the signals held, and whatever a
  cancel still left registered (one landing between a ``finally:`` and its held removal) is
  removed when the command ends (:func:`end`). A ``mkdtemp`` followed by ``try:`` has a window
  between the two, and an ``rmtree`` in a ``finally`` can itself be cut short by a signal: both
  left ``evalarc-verify-*`` folders behind under load.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

CANCELLING_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Signals that cancel a command (each ends as :class:`Cancelled`: clean up, exit 130)."""

Handler = Any
"""What :func:`signal.signal` returns: a function, ``SIG_DFL``/``SIG_IGN``, or None."""


class Cancelled(KeyboardInterrupt):
    """A cancelling signal, raised in the main thread; every ``except KeyboardInterrupt`` cleanup
    catches it.

    Never a bare KeyboardInterrupt: CPython records a bare KeyboardInterrupt that leaves a string
    ``exec``/``eval`` (e.g. ``dataclasses`` defining a class's methods while a module is imported
    lazily) as *unhandled*, even when a caller catches it afterwards, and a program started as
    ``python -m`` then ends by killing itself with SIGINT instead of exiting 130. That record
    compares the exception's type exactly, so a subclass never sets it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class _Command:
    """The cancel state of the command being run (one per process at a time)."""

    running: bool = False
    """Between :func:`install` and :func:`end` (library calls outside a command have none)."""
    outputs: set[str] = field(default_factory=set)
    """Absolute paths of the folders the command publishes as its result."""
    requested: list[int] = field(default_factory=list)
    """Signals whose :class:`Cancelled` was raised (one may have been swallowed)."""
    published: bool = False
    late: list[int] = field(default_factory=list)
    """Signals that arrived after the command's output was published."""
    unraisablehook: Callable[[Any], object] | None = None
    previous: dict[int, Handler] = field(default_factory=dict)
    """The dispositions :func:`install` replaced, put back by :func:`end` in a process that
    goes on after the command."""
    temporaries: set[Path] = field(default_factory=set)
    """Temporary folders made and not yet removed (:func:`new_temporary_folder`)."""


_COMMAND = _Command()
_PROGRAM_EXITS = False
"""Whether the process ends with the command (the ``evalarc`` program): only then may the
cancelling signals stay ignored after it. An ignored disposition is inherited by every process
started afterwards, so a Python program that runs a command in-process and then starts
``evalarc`` (or anything) would hand it signals it can never receive."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _cancel(signum: int, frame: FrameType | None) -> None:
    _COMMAND.requested.append(signum)
    raise Cancelled(signum)


def _quiet_unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook`` while a command runs: a Cancelled that Python had to drop (raised
    inside a finalizer) is not printed; :func:`check` raises it again at the next safe point."""
    if isinstance(unraisable.exc_value, Cancelled):
        return
    previous = _COMMAND.unraisablehook or sys.__unraisablehook__
    previous(unraisable)


def install(*, program_exits: bool = False) -> None:
    """Start a command: a cancelling signal whose disposition is the default (Python's own
    KeyboardInterrupt handler for SIGINT) raises :class:`Cancelled` from now on.
    ``program_exits``: the process ends when the command does (else :func:`end` puts the
    dispositions back)."""
    global _COMMAND, _PROGRAM_EXITS
    if not _main_thread():
        return
    _PROGRAM_EXITS = program_exits
    hook = sys.unraisablehook
    _COMMAND = _Command(running=True, unraisablehook=None if hook is _quiet_unraisable else hook)
    for number in CANCELLING_SIGNALS:
        current = signal.getsignal(number)
        _COMMAND.previous[number] = current
        if current in (signal.SIG_DFL, signal.default_int_handler, _cancel):
            signal.signal(number, _cancel)
    sys.unraisablehook = _quiet_unraisable


def declare_output(path: Path) -> None:
    """Name ``path`` as a folder the running command publishes as its result (the CLI declares
    ``--output``): once :func:`publishing` has published it, no cancel can undo the result."""
    _COMMAND.outputs.add(os.path.abspath(path))


def ignore() -> None:
    """Ignore the cancelling signals from now on: the program is exiting with a decided code, and
    another Ctrl-C (users press it again) must not turn it into a death by signal. Only in the
    ``evalarc`` program (see :data:`_PROGRAM_EXITS`); a process that goes on keeps its own."""
    if _main_thread() and _PROGRAM_EXITS:
        for number in CANCELLING_SIGNALS:
            signal.signal(number, signal.SIG_IGN)


def end() -> list[int]:
    """The command has ended: restore ``sys.unraisablehook``, forget its cancel state, remove
    what a cancel left of its temporary folders and return the signals that arrived after its
    output was published (held, so its result stands). In the ``evalarc`` program, which from here
    on only exits with the command's decided code, further cancelling signals are ignored: Python
    puts their default disposition back while it shuts down, and a Ctrl-C landing then killed
    the process by SIGINT after a finished ``verify`` had printed its result (seen under load).
    In a process that goes on (a command run in-process), the dispositions the command replaced
    are put back."""
    global _COMMAND
    if _PROGRAM_EXITS:
        ignore()
    command, _COMMAND = _COMMAND, _Command()
    late = list(dict.fromkeys(command.late))
    if sys.unraisablehook is _quiet_unraisable:
        sys.unraisablehook = command.unraisablehook or sys.__unraisablehook__
    if not _PROGRAM_EXITS and _main_thread():
        for number, disposition in command.previous.items():
            if disposition is not None and disposition is not _cancel:
                signal.signal(number, disposition)
    # Last: a signal held during the removal is delivered to the dispositions restored above.
    _remove_all(command.temporaries)
    return late


def requested() -> bool:
    """Whether a cancel has been raised during this command."""
    return bool(_COMMAND.requested)


def check() -> None:
    """Raise :class:`Cancelled` again for a cancel that was raised but swallowed (nothing is
    unwinding from it now): a cancel is never lost, whatever code it landed in."""
    command = _COMMAND
    if command.running and command.requested and not command.published and not sys.exc_info()[1]:
        raise Cancelled(command.requested[-1])


@contextlib.contextmanager
def signals_held() -> Iterator[Callable[[], bool]]:
    """Hold the cancelling signals back for the duration (a step that a Ctrl-C, SIGTERM or
    SIGHUP must not cut in half, such as creating the staging folder or removing it), then
    deliver any that arrived to the handler that was in place, and raise a cancel that was
    swallowed meanwhile (:func:`check`). A no-op outside the main thread, where Python delivers
    no signals anyway.

    Yields a function telling whether a signal has arrived, so a long step can poll it and stop
    at a point of its own choosing: a KeyboardInterrupt raised at an arbitrary point of the main
    thread can leave a lock of ``threading`` or ``concurrent.futures`` held forever (the
    ``with`` statement's exit is not guaranteed against asynchronous exceptions)."""
    if not _main_thread():
        yield lambda: False
        return
    arrived: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    previous: dict[int, Handler] = {}
    try:
        # One at a time inside the try: a signal delivered while the handlers are being swapped
        # must not leave one of them swapped for good.
        for number in CANCELLING_SIGNALS:
            previous[number] = signal.signal(number, remember)
        yield lambda: bool(arrived)
    finally:
        for held, handler in previous.items():
            if handler is not None:
                signal.signal(held, handler)
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)
    check()


@contextlib.contextmanager
def publishing(dest: Path) -> Iterator[None]:
    """Publish ``dest`` in the body (one rename) with the cancelling signals held. A cancel
    raised before and swallowed is raised instead, so nothing is published after a cancel. When
    ``dest`` is the command's declared output, every cancelling signal from the rename on is held
    until the command ends: its result stands (:func:`end` tells which arrived). Any other folder
    (the demo's intermediate reports) gets signals that arrived meanwhile right after."""
    if not _main_thread():
        yield
        return
    check()
    if _COMMAND.published or os.path.abspath(dest) not in _COMMAND.outputs:
        with signals_held():
            yield
        return
    late = _COMMAND.late

    def remember_late(signum: int, frame: FrameType | None) -> None:
        late.append(signum)

    previous: dict[int, Handler] = {}
    try:
        for number in CANCELLING_SIGNALS:
            previous[number] = signal.signal(number, remember_late)
        yield
    except BaseException:
        # Not published: the handlers go back and what arrived is delivered (a cancel wins).
        for held, handler in previous.items():
            if handler is not None:
                signal.signal(held, handler)
        arrived = list(dict.fromkeys(late))
        late.clear()
        for signum in arrived:
            signal.raise_signal(signum)
        raise
    _COMMAND.published = True


# -- temporary folders --------------------------------------------------------------------------


def new_temporary_folder(prefix: str, *, suffix: str = "", parent: Path | None = None) -> Path:
    """``tempfile.mkdtemp`` (``parent``: default the system temporary folder) with the cancelling
    signals held, registered for removal before any signal can land: if the caller's own clean-up
    is cut short (a signal between its ``finally:`` and :func:`remove_temporary_folder`), the
    folder goes when the command ends (:func:`end`). Raises OSError as ``mkdtemp`` does."""
    with signals_held():
        path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
        _COMMAND.temporaries.add(path)
    return path


def remove_temporary_folder(path: Path) -> None:
    """Remove a folder of :func:`new_temporary_folder` (whatever it holds), with the cancelling
    signals held so a second Ctrl-C cannot stop the removal half-way, and forget it."""
    with signals_held():
        shutil.rmtree(path, ignore_errors=True)
        _COMMAND.temporaries.discard(path)


def keep_temporary_folder(path: Path) -> None:
    """Forget ``path`` without removing it (a staging folder just renamed into its place)."""
    _COMMAND.temporaries.discard(path)


@contextlib.contextmanager
def temporary_folder(prefix: str, *, parent: Path | None = None) -> Iterator[Path]:
    """A new temporary folder for the body, removed however the body ends (a cancel included):
    :func:`new_temporary_folder` and :func:`remove_temporary_folder`."""
    path = new_temporary_folder(prefix, parent=parent)
    try:
        yield path
    finally:
        remove_temporary_folder(path)


def _remove_all(paths: set[Path]) -> None:
    """What a cancel left registered, removed with the signals held."""
    if not paths:
        return
    with signals_held():
        for path in sorted(paths):
            shutil.rmtree(path, ignore_errors=True)
        paths.clear()
