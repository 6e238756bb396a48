"""Load one result file into a :class:`~evalarc.formats.model.Run`, detecting its format."""

from __future__ import annotations

import math
from pathlib import Path

from evalarc.canonical import sha256_file, strict_loads
from evalarc.errors import InputError, UsageError
from evalarc.formats.evaluation import is_evaluation, read_evaluation, resolve_evaluation_path
from evalarc.formats.inspect import top_level_member_types
from evalarc.formats.model import FORMATS, Run, Source

MAX_RESULT_BYTES = 512 * 1024 * 1024
"""A result file larger than this is refused before it is read."""

ZIP_MAGIC = b"PK\x03\x04"


def detect_format(path: Path, head: bytes) -> str:
    """Name the format of ``path`` from its suffix and first bytes (JSON is parsed only when the
    cheap signals do not decide)."""
    if path.suffix == ".eval" or head.startswith(ZIP_MAGIC):
        return "inspect"
    if path.suffix == ".xml" or head.lstrip().startswith(b"<"):
        return "junit"
    # Stream the top-level members instead of parsing a (possibly huge) log twice: an Inspect
    # log names its `eval` object in its first few keys, so detection stops there.
    saw_results = saw_schema = False
    for key, kind in top_level_member_types(path):
        if key == "eval" and kind is dict:
            return "inspect"
        saw_results = saw_results or (key == "results" and kind is dict)
        saw_schema = saw_schema or (key == "schema_version" and kind is str)
    if saw_schema and is_evaluation(_parse_json_file(path)):
        return "evaluation"
    if saw_results:
        return "promptfoo"
    raise InputError(f"cannot detect the format of {path.name}; pass --format")


def _parse_json_file(path: Path) -> object:
    try:
        return strict_loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{path.name} is not JSON: {error}") from None


def load_results(path: Path, format: str = "auto", threshold: float = 1.0) -> Run:
    """Read ``path`` as ``format`` (or detect it) into the shared model.

    Raises InputError naming the file for anything unusable; never returns a run without cases.
    """
    if format != "auto" and format not in FORMATS:
        raise UsageError(
            f"unknown format {format!r}; use auto, inspect, promptfoo, junit or evaluation"
        )
    if not math.isfinite(threshold):
        raise UsageError("--threshold must be a finite number")
    path = resolve_evaluation_path(path)
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if path.is_symlink() or not path.is_file():
        raise InputError(f"{path} is not a regular file")
    size = path.stat().st_size
    if size > MAX_RESULT_BYTES:
        raise InputError(f"{path.name} exceeds {MAX_RESULT_BYTES} bytes")
    digest, _ = sha256_file(path)
    source = Source(name=path.name, sha256=digest)
    with path.open("rb") as handle:
        head = handle.read(64)
    chosen = detect_format(path, head) if format == "auto" else format

    if chosen == "inspect":
        from evalarc.formats.inspect import read_inspect

        run = read_inspect(path, source, threshold)
    elif chosen == "evaluation":
        run = read_evaluation(path, source, threshold)
    elif chosen == "promptfoo":
        from evalarc.formats.promptfoo import read_promptfoo

        run = read_promptfoo(path, source, threshold)
    else:
        from evalarc.formats.junit import read_junit

        run = read_junit(path, source, threshold)
    if not run.cases:
        raise InputError(f"{path.name} contains no scored cases")
    return run
