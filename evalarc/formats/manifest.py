"""Case manifest files (``evalarc.case-manifest.v1``): read and validate one. A manifest is a
list of rules ``{match, source, difficulty?, note?}``; ``match`` is an exact case id or a
case-sensitive glob (``*``, ``?``, ``[``). Matching cases to rules is
:mod:`evalarc.review.manifest`'s (pure) job."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from evalarc import schemas
from evalarc.canonical import sha256_bytes
from evalarc.errors import InputError
from evalarc.formats.input_file import parse_json_input, read_input_file
from evalarc.formats.model import Source

MANIFEST_SCHEMA = schemas.CASE_MANIFEST


MAX_MANIFEST_BYTES = 4 * 1024 * 1024


MAX_RULES = 10_000


CASE_SOURCES: tuple[str, ...] = (
    "production",
    "bug_report",
    "support_ticket",
    "user_traffic",
    "manual",
    "synthetic",
    "model_failure",
)
"""Every declarable source, in report order."""


REAL_SOURCES = frozenset({"production", "bug_report", "support_ticket", "user_traffic"})
"""Sources that come from what real users did or hit (as opposed to written or mined cases)."""


_TOP_KEYS = frozenset({"schema_version", "cases", "description"})


_RULE_KEYS = frozenset({"match", "source", "difficulty", "note"})


GLOB_CHARS = frozenset("*?[")
"""Characters that make a ``match`` a glob."""


_SCHEMA_PATTERN = re.compile(r"evalarc\.case-manifest\.v(\d+)")


@dataclass(frozen=True, slots=True)
class CaseRule:
    """One manifest entry: which cases it covers and what it declares about them."""

    match: str
    """An exact case id, or a case-sensitive glob when it contains ``*``, ``?`` or ``[``."""
    source: str
    """One of CASE_SOURCES."""
    difficulty: str | None = None
    """Why a case is hard; expected for ``model_failure`` cases (otherwise they look mined)."""
    note: str | None = None

    @property
    def is_glob(self) -> bool:
        return any(char in GLOB_CHARS for char in self.match)


@dataclass(frozen=True)
class CaseManifest:
    """A validated manifest and the file it came from (name and SHA-256 of its bytes)."""

    rules: tuple[CaseRule, ...]
    source: Source
    description: str | None = None

    def with_source(self, source: Source) -> CaseManifest:
        """The same rules under another recorded source (verify restores the original name)."""
        return replace(self, source=source)


def load_manifest(path: Path) -> CaseManifest:
    """Read and validate a case manifest file (InputError naming the file)."""
    data = read_input_file(path, what="case manifest", limit=MAX_MANIFEST_BYTES)
    document = parse_json_input(data, path.name)
    return parse_manifest(document, Source(name=path.name, sha256=sha256_bytes(data)))


def _short(value: object) -> str:
    return repr(str(value)[:60])


def parse_manifest(document: object, source: Source) -> CaseManifest:
    """Validate a parsed manifest document; every error names ``source.name``."""
    name = source.name
    if not isinstance(document, dict):
        raise InputError(f"{name} must hold a JSON object ({MANIFEST_SCHEMA})")
    schema = document.get("schema_version")
    if schema != MANIFEST_SCHEMA:
        newer = isinstance(schema, str) and _SCHEMA_PATTERN.fullmatch(schema)
        if newer and int(newer.group(1)) > 1:
            raise InputError(
                f"{name} uses {schema}, newer than {MANIFEST_SCHEMA} which this EvalArc reads"
            )
        raise InputError(f"{name} has schema_version {_short(schema)}; expected {MANIFEST_SCHEMA}")
    unknown = sorted(set(document) - _TOP_KEYS)
    if unknown:
        raise InputError(f"{name} has unknown fields: {', '.join(_short(k) for k in unknown[:5])}")
    description = document.get("description")
    if description is not None and not isinstance(description, str):
        raise InputError(f"{name}: description must be a string")
    entries = document.get("cases")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{name}: cases must be a non-empty list of rules")
    if len(entries) > MAX_RULES:
        raise InputError(f"{name}: cases lists more than {MAX_RULES:,} rules")
    rules = tuple(_parse_rule(entry, index, name) for index, entry in enumerate(entries, 1))
    return CaseManifest(rules=rules, source=source, description=description)


def _parse_rule(entry: object, index: int, name: str) -> CaseRule:
    where = f"{name}: cases[{index}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be an object")
    unknown = sorted(set(entry) - _RULE_KEYS)
    if unknown:
        raise InputError(f"{where} has unknown fields: {', '.join(_short(k) for k in unknown[:5])}")
    match = entry.get("match")
    if not isinstance(match, str) or not match:
        raise InputError(f"{where}: match must be a non-empty case id or glob")
    source = entry.get("source")
    if source not in CASE_SOURCES:
        raise InputError(
            f"{where}: source {_short(source)} is not one of {', '.join(CASE_SOURCES)}"
        )
    difficulty = entry.get("difficulty")
    if "difficulty" in entry and (not isinstance(difficulty, str) or not difficulty.strip()):
        raise InputError(f"{where}: difficulty must be a non-empty string")
    note = entry.get("note")
    if "note" in entry and not isinstance(note, str):
        raise InputError(f"{where}: note must be a string")
    return CaseRule(match=match, source=str(source), difficulty=difficulty, note=note)
