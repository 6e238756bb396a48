"""Read a JSON Lines result file (lm-eval samples, OpenAI Evals record logs) one line at a time.

Each line is parsed strictly (no NaN, no duplicate keys) and must be an object; a line longer
than the cap, more lines than the cap, or a line that is not JSON is refused with one line
naming the file as given and the line number. Blank lines are skipped, as both producers'
readers do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalarc.canonical import strict_loads
from evalarc.errors import InputError

MAX_LINE_BYTES = 64 * 1024 * 1024
"""One line (one sample, one event) larger than this is refused before it is parsed."""
MAX_LINES = 2_000_000
"""A file with more lines is refused: each is kept as part of an attempt."""


def json_lines(path: Path, *, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of ``path``; ``what`` names the kind
    of file in messages ("lm-eval samples file")."""
    name = str(path)
    try:
        handle = path.open("rb")
    except OSError as error:
        raise InputError(f"{name} cannot be read: {error.strerror or error}") from None
    with handle:
        number = 0
        while True:
            try:
                line = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as error:
                raise InputError(f"{name} cannot be read: {error.strerror or error}") from None
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise InputError(f"{name}: line {number} is longer than {MAX_LINE_BYTES} bytes")
            if number > MAX_LINES:
                raise InputError(f"{name} has more than {MAX_LINES:,} lines (the cap on one file)")
            if not line.strip():
                continue
            try:
                value = strict_loads(line)
            except (ValueError, UnicodeDecodeError) as error:
                raise InputError(
                    f"{name}: line {number} is not JSON ({str(error)[:200]}); "
                    f"a {what} holds one JSON object per line"
                ) from None
            except RecursionError:
                raise InputError(f"{name}: line {number} is nested too deeply") from None
            if not isinstance(value, dict):
                raise InputError(f"{name}: line {number} is not a JSON object ({what})")
            yield number, value
