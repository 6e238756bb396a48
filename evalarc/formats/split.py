"""Held-out case split files (``evalarc.case-split.v1``): read and validate one. Partitioning
cases and judging generalization is :mod:`evalarc.review.split`'s (pure) job."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalarc import schemas
from evalarc.canonical import sha256_bytes
from evalarc.errors import InputError
from evalarc.formats.input_file import parse_json_input, read_input_file
from evalarc.formats.model import Source

SPLIT_SCHEMA = schemas.CASE_SPLIT


MAX_SPLIT_BYTES = 4 * 1024 * 1024


MAX_HELD_OUT = 10_000


_ALLOWED_KEYS = frozenset({"schema_version", "held_out", "description"})


@dataclass
class CaseSplit:
    """A loaded split file: the held-out entries (ids or globs), its description and source."""

    held_out: tuple[str, ...]
    description: str | None
    source: Source


def load_split(path: Path) -> CaseSplit:
    """Read and validate an ``evalarc.case-split.v1`` file (InputError naming the file)."""
    data = read_input_file(path, what="split file", limit=MAX_SPLIT_BYTES)
    document = parse_json_input(data, path.name)
    return parse_split(document, Source(name=path.name, sha256=sha256_bytes(data)))


def parse_split(document: object, source: Source) -> CaseSplit:
    """Validate a parsed split document; errors name ``source.name``."""
    name = source.name
    if not isinstance(document, dict):
        raise InputError(f"{name} must hold a JSON object ({SPLIT_SCHEMA})")
    unknown = sorted(set(document) - _ALLOWED_KEYS)
    if unknown:
        listed = ", ".join(repr(key[:40]) for key in unknown[:5])
        raise InputError(f"{name} has unknown fields: {listed}")
    schema = document.get("schema_version")
    if schema != SPLIT_SCHEMA:
        raise InputError(
            f"{name} has schema_version {str(schema)[:60]!r}; expected {SPLIT_SCHEMA!r}"
        )
    held_out = document.get("held_out")
    if (
        not isinstance(held_out, list)
        or not 1 <= len(held_out) <= MAX_HELD_OUT
        or not all(isinstance(entry, str) and entry for entry in held_out)
    ):
        raise InputError(
            f"{name}: held_out must list 1 to {MAX_HELD_OUT:,} non-empty case id strings"
        )
    seen: set[str] = set()
    for entry in held_out:
        if entry in seen:
            raise InputError(f"{name}: held_out lists {entry[:80]!r} twice")
        seen.add(entry)
    description = document.get("description")
    if "description" in document and not isinstance(description, str):
        raise InputError(f"{name}: description must be a string")
    return CaseSplit(held_out=tuple(held_out), description=description, source=source)
