"""The one way EvalArc reads a small input file a user names (a split, a case manifest, a
harness file, a checkpoints file): a regular file, never followed through a symbolic link, read
with one bounded read, and parsed strictly when it is JSON. Every refusal is an InputError of
one line naming the path as the user gave it.

Result files (Inspect, promptfoo, JUnit) stream through their own readers in this package.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from evalarc.canonical import JSONValue, strict_loads
from evalarc.errors import InputError


def read_input_file(path: Path, *, what: str, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes (``what`` names the kind
    of file in messages, e.g. ``"split file"``)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist") from None
    except OSError as error:
        raise InputError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{what} {path} is not a regular file")
    if info.st_size > limit:
        raise InputError(f"{what} {path} exceeds {limit:,} bytes")
    try:
        # O_NOFOLLOW: a link swapped in after the check is refused, not followed.
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InputError(f"{what} {path} is not a regular file") from None
        raise InputError(f"cannot read {what} {path}: {error.strerror or error}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InputError(f"{what} {path} is not a regular file")
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise InputError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise InputError(f"{what} {path} exceeds {limit:,} bytes")
    return data


def parse_json_input(data: bytes, name: str) -> JSONValue:
    """Strict JSON (no duplicate keys, NaN or overflowing numbers); errors name ``name``."""
    try:
        return strict_loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{name} is not valid JSON: {error}") from None
    except RecursionError:
        raise InputError(f"{name} is not valid JSON: nested too deeply") from None
