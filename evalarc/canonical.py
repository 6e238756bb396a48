"""Canonical JSON and SHA-256 helpers behind every fingerprint and every comparison.

Canonical text: object keys sorted, ASCII escapes, the default ``", "``/``": "`` separators and
no NaN/Infinity; it is the text the spec's fingerprints and transcript hashes are defined on.
Two JSON values are equal for EvalArc iff their canonical texts are identical, so ``true`` never
equals ``1`` and ``1`` never equals ``1.0``.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

JSONValue = Any
"""A value made only of dict/list/str/int/float/bool/None (mypy cannot express recursion well)."""

_CHUNK = 1 << 20


def canonical_json(value: JSONValue) -> str:
    """Return the canonical text of ``value`` (raises ValueError for non-finite numbers)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=False)


def canonical_bytes(value: JSONValue) -> bytes:
    return canonical_json(value).encode("ascii")


def compact_json(value: JSONValue) -> str:
    """Canonical but without spaces: used for JSON lines where size matters."""
    return json.dumps(
        value, sort_keys=True, ensure_ascii=True, allow_nan=False, separators=(",", ":")
    )


def json_equal(left: JSONValue, right: JSONValue) -> bool:
    return canonical_json(left) == canonical_json(right)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: JSONValue) -> str:
    """SHA-256 of the canonical text of ``value``."""
    return sha256_bytes(canonical_bytes(value))


def sha256_file(path: Path) -> tuple[str, int]:
    """Stream a file through SHA-256; return (hex digest, byte count)."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def pretty_json(value: JSONValue) -> str:
    """The on-disk form of reports: indent 2, sorted keys off (schema order kept), non-ASCII kept,
    NaN forbidden, trailing newline."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def is_finite_number(value: object) -> bool:
    """True for int/float that are finite, never for bool."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not allowed")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _parse_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text[:40]} overflows")
    return number


def strict_loads(text: str | bytes) -> JSONValue:
    """Parse JSON refusing NaN/Infinity, overflowing floats and duplicate keys.

    Raises ValueError (json.JSONDecodeError is a subclass) with the position of the problem.
    """
    return json.loads(
        text,
        parse_constant=_reject_constant,
        parse_float=_parse_float,
        object_pairs_hook=_reject_duplicates,
    )
