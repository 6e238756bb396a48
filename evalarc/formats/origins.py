"""Where a private copy of an input came from, for the readers that look beside their input.

``verify``, ``site build`` and ``diff`` parse private copies of the files they are given (the
exact bytes they hashed, see :func:`evalarc.bundle.private_reads`). A reader that cross-checks
its file against a sibling the producer wrote beside it (lm-eval's ``results_<stamp>.json``
beside its samples) asks here for the folder the user's file is in; the sibling itself is only
a check, never an input the report keeps.
"""

from __future__ import annotations

from pathlib import Path

_ORIGINS: dict[str, Path] = {}


def note_origin(copy: Path, original: Path) -> None:
    """Record that ``copy`` holds the bytes of the user's file ``original``."""
    _ORIGINS[str(copy)] = original


def forget_origin(copy: Path) -> None:
    """Drop ``copy`` (its private folder is being removed)."""
    _ORIGINS.pop(str(copy), None)


def origin_of(path: Path) -> Path:
    """The user's file a private copy was made from, else ``path`` itself."""
    return _ORIGINS.get(str(path), path)
