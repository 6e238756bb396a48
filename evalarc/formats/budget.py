"""A memory budget for reading one result file: the backstop behind every reader's own caps.

The readers cap what a file may hold (elements, rows, nesting, containers, member sizes), but a
cap counts one kind of thing, and a hostile file amplifies through the kinds that are not
counted: millions of short keys or strings in one value, a scorer list spread over every errored
sample, an archive member that inflates to tiny strings. Whatever the shape, reading a file may
hold at most **twice the bytes read plus 64 MiB** above what the process held when it began:
the bytes on disk, and for an archive also every byte decompressed from its members (what the
reader really has to parse). With the interpreter's own start-up (about 30 MiB) a command's
peak so stays within 2 x its input + 100 MB. A read that needs more is refused with exit 2
naming the file and the budget, and nothing of it is kept (``bench/amplification.py`` measures
the shapes).

How: on Linux the soft ``RLIMIT_DATA`` (private writable memory, which is where every Python
object lives) is lowered to the budget while the file is read and put back afterwards; an
allocation past it fails, Python raises ``MemoryError``, and :func:`reading_budget` turns that
into an :class:`~evalarc.errors.InputError` once the partial objects are released. Archive
readers widen the budget as they decompress (:func:`note_read`). Where the limit cannot
be set (another system, another thread than the main one, a lower limit already in force) the
budget is not applied and the readers' own caps remain.
"""

from __future__ import annotations

import resource
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from evalarc.errors import InputError

MIB = 1024 * 1024
HEADROOM = 64 * MIB
"""What a read may hold beyond twice its input: the model's fixed costs, imports made while
reading (a reader's module, zstandard), the decoder's buffers. With the interpreter's start-up
it keeps a command within 100 MB beyond twice its input."""
FACTOR = 2
"""Bytes of memory a read may hold per byte it read."""

_LIMIT = getattr(resource, "RLIMIT_DATA", None)


@dataclass(slots=True)
class _Budget:
    name: str
    """The file being read, as given."""
    allowed: int
    """Bytes above ``start`` the read may hold now."""
    start: int
    """The process's data size when the read began."""
    saved: tuple[int, int]
    """The limit in force before (restored afterwards)."""


_STACK: list[_Budget] = []
"""Budgets in force, innermost last (a reader may read another file inside its own read)."""


def data_size() -> int | None:
    """The process's private writable memory (``VmData``) in bytes, or None where unknown."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _set_soft(limit: int) -> bool:
    if _LIMIT is None:
        return False
    _, hard = resource.getrlimit(_LIMIT)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(_LIMIT, (limit, hard))
    except (ValueError, OSError):
        return False
    return True


def _apply(budget: _Budget) -> None:
    target = budget.start + budget.allowed
    if _STACK[:-1]:
        outer = _STACK[-2]
        target = min(target, outer.start + outer.allowed)
    saved_soft = budget.saved[0]
    if saved_soft != resource.RLIM_INFINITY:
        target = min(target, saved_soft)
    _set_soft(target)


@contextmanager
def reading_budget(name: str, size: int) -> Iterator[None]:
    """Hold the read of the file ``name`` (``size`` bytes on disk) to twice what it reads plus
    :data:`HEADROOM`; a read that needs more raises InputError naming the file and the budget.
    A no-op where the limit cannot be applied (see the module docstring)."""
    start = data_size()
    if _LIMIT is None or start is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    budget = _Budget(name, FACTOR * size + HEADROOM, start, resource.getrlimit(_LIMIT))
    _STACK.append(budget)
    refused = False
    try:
        _apply(budget)
        yield
    except MemoryError as error:
        # Release the partial objects the reader's finished frames still hold.
        traceback.clear_frames(error.__traceback__)
        refused = True
    finally:
        _STACK.pop()
        resource.setrlimit(_LIMIT, budget.saved)
    if refused:
        # Raised here, after the frames that held the partial objects are gone.
        raise InputError(
            f"{name}: reading it needs more memory than its budget of "
            f"{budget.allowed / MIB:,.0f} MiB (twice the bytes read and decompressed, "
            f"plus {HEADROOM // MIB} MiB); a file of this shape is refused"
        )


def note_read(count: int) -> None:
    """Widen the innermost budget by what reading ``count`` more bytes allows: bytes
    decompressed from an archive member, or the files of a folder read as one input (a SWE-bench
    run folder), which are input the reader must parse though the path given is smaller."""
    if not _STACK or threading.current_thread() is not threading.main_thread():
        return
    budget = _STACK[-1]
    budget.allowed += FACTOR * count
    _apply(budget)
