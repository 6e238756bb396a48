"""Case views of a diff page: both sides' evidence per case, in content-addressed chunk files.

A 20,000-case diff cannot carry every case view inline, so the evidence goes into chunk files
beside the page (``case-views/<sha256>.js``), each holding up to CHUNK_BYTES of cases. The page
holds only an index (case id -> chunk) and loads a chunk with a dynamically inserted
``<script src>`` when a case is opened: that works from ``file://`` and on any static host,
without a server or Range requests. Under the page's policy (``'strict-dynamic'`` beside the
hash of the page's own script) only scripts inserted by that script run.

A chunk has one fixed shape, ``evalarcChunk(<JSON>);`` plus a newline: data, never code; the
JSON is escaped so that ``<``, ``>``, ``&`` and the line separators are \\u escapes. Chunks are
rendered outputs like pages: the same evidence gives the same bytes, and ``verify`` renders
them again and compares them byte for byte.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from evalarc.canonical import sha256_bytes
from evalarc.evidence.model import TEXT_BYTES, CaseEvidence, SideEvidence, mark_divergence

CHUNK_DIR = "case-views"
CHUNK_BYTES = 192 * 1024
"""A chunk closes once it holds this many bytes of evidence (one case may exceed it alone)."""
CHUNK_PREFIX = b"evalarcChunk("
CHUNK_SUFFIX = b");\n"
CHUNK_NAME = re.compile(rf"{CHUNK_DIR}/[0-9a-f]{{64}}\.js")
_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_ESCAPE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
"""Markup characters, JavaScript line separators and lone surrogates (a case id read from a
JSON input may hold one; UTF-8 cannot encode it, a ``\\uXXXX`` escape carries it exactly)."""


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return _ESCAPE.sub(_escape, text)


def chunk_bytes(cases: dict[str, Any]) -> bytes:
    """One chunk file's bytes for ``cases`` (case id -> both sides)."""
    return CHUNK_PREFIX + _json({"cases": cases}).encode("utf-8") + CHUNK_SUFFIX


def parse_chunk(data: bytes) -> dict[str, Any] | None:
    """The cases of a chunk file, or None when it does not have the fixed shape."""
    if not data.startswith(CHUNK_PREFIX) or not data.endswith(CHUNK_SUFFIX):
        return None
    try:
        value = json.loads(data[len(CHUNK_PREFIX) : -len(CHUNK_SUFFIX)])
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or set(value) != {"cases"}:
        return None
    cases = value["cases"]
    return cases if isinstance(cases, dict) else None


@dataclass(frozen=True)
class CaseViews:
    """The chunk files of one page and the index the page carries."""

    files: dict[str, bytes]
    """Relative path (``case-views/<sha256>.js``) -> bytes."""
    index: dict[str, Any]
    """``{"chunks": [path, ...], "cases": [case id, ...], "chunk_of": [chunk number, ...],
    "sides": [baseline file, current file]}``: case ids sorted."""

    @property
    def empty(self) -> bool:
        return not self.files


def _side_json(side: SideEvidence | None) -> dict[str, Any] | None:
    return None if side is None else side.to_json()


def build_case_views(
    case_ids: list[str],
    baseline: CaseEvidence,
    current: CaseEvidence,
    side_names: tuple[str, str],
) -> CaseViews:
    """Chunk the evidence of ``case_ids`` (sorted here), marking each transcript's first
    divergence; a case neither file has evidence for still gets an (empty) entry."""
    files: dict[str, bytes] = {}
    chunks: list[str] = []
    ordered = sorted(set(case_ids))
    chunk_of: list[int] = []
    pending: dict[str, Any] = {}
    size = 0

    def close() -> None:
        nonlocal pending, size
        if not pending:
            return
        data = chunk_bytes(pending)
        name = f"{CHUNK_DIR}/{sha256_bytes(data)}.js"
        files[name] = data
        chunks.append(name)
        pending, size = {}, 0

    for case_id in ordered:
        base, cur = baseline.get(case_id), current.get(case_id)
        mark_divergence(base, cur)
        entry = {"baseline": _side_json(base), "current": _side_json(cur)}
        pending[case_id] = entry
        chunk_of.append(len(chunks))
        size += len(_json(entry))
        if size >= CHUNK_BYTES:
            close()
    close()
    index = {
        "chunks": chunks,
        "cases": ordered,
        "chunk_of": chunk_of,
        "sides": list(side_names),
        "text_bytes": TEXT_BYTES,
    }
    return CaseViews(files, index)
