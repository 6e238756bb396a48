"""Case manifests (``evalarc.case-manifest.v1``): where each evaluation case came from.

A manifest is a list of rules ``{match, source, difficulty?, note?}``. ``match`` is an exact case
id or a case-sensitive glob (``*``, ``?``, ``[``); the first rule that matches a case decides its
source. ``eval-health`` uses the result to say whether an evaluation rests on real traffic and
failures or on cases someone invented.

Loading validates everything up front and names the file in every error; matching is pure.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from evalarc import schemas
from evalarc.canonical import sha256_bytes, strict_loads
from evalarc.errors import InputError
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
_GLOB_CHARS = frozenset("*?[")
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
        return any(char in _GLOB_CHARS for char in self.match)


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
    name = path.name
    if not path.exists():
        raise InputError(f"case manifest {path} does not exist")
    if path.is_symlink() or not path.is_file():
        raise InputError(f"case manifest {path} is not a regular file")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as error:
        raise InputError(f"cannot read {name}: {error.strerror or error}") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise InputError(f"{name} exceeds {MAX_MANIFEST_BYTES} bytes")
    try:
        document = strict_loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{name} is not valid JSON: {error}") from None
    except RecursionError:
        raise InputError(f"{name} is not valid JSON: nested too deeply") from None
    return parse_manifest(document, Source(name=name, sha256=sha256_bytes(data)))


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


def assign_rules(manifest: CaseManifest, case_ids: Iterable[str]) -> dict[str, CaseRule | None]:
    """Map every case id to the first rule that matches it (None when no rule does).

    Every rule must match at least one recorded case: a rule that matches nothing is a typo or a
    manifest written for another evaluation, so it is refused (InputError naming the rule).
    """
    cases = sorted(set(case_ids))
    exact_first: dict[str, int] = {}
    glob_rules: list[tuple[int, CaseRule]] = []
    for index, rule in enumerate(manifest.rules):
        if rule.is_glob:
            glob_rules.append((index, rule))
        else:
            exact_first.setdefault(rule.match, index)
    first_glob = _first_glob_matcher(glob_rules)
    assigned: dict[str, CaseRule | None] = {}
    used: set[int] = set()
    for case in cases:
        candidates = [
            index for index in (exact_first.get(case), first_glob(case)) if index is not None
        ]
        if candidates:
            winner = min(candidates)
            used.update(candidates)
            assigned[case] = manifest.rules[winner]
        else:
            assigned[case] = None
    known = set(cases)
    for index, rule in enumerate(manifest.rules):
        if index in used:
            continue
        if rule.is_glob:
            pattern = re.compile(fnmatch.translate(rule.match))
            matched = any(pattern.match(case) for case in known)
        else:
            matched = rule.match in known
        if not matched:
            raise InputError(
                f"{manifest.source.name}: rule {index + 1} ({rule.match[:80]!r}) "
                "matches no recorded case"
            )
    return assigned


def _first_glob_matcher(glob_rules: list[tuple[int, CaseRule]]) -> _GlobMatcher:
    """A function giving the rule index of the first glob (in manifest order) matching a case.

    All globs go into one alternation; Python's regex engine tries alternatives left to right,
    so the alternative that matches is the earliest matching glob. Group names are our own
    (``rule<N>``) and fnmatch patterns contain no named groups, so the lookup is unambiguous.
    """
    if not glob_rules:
        return _GlobMatcher(None, {})
    names = {f"rule{position}": index for position, (index, _) in enumerate(glob_rules)}
    combined = re.compile(
        "|".join(
            f"(?P<rule{position}>{fnmatch.translate(rule.match)})"
            for position, (_, rule) in enumerate(glob_rules)
        )
    )
    return _GlobMatcher(combined, names)


@dataclass(frozen=True)
class _GlobMatcher:
    pattern: re.Pattern[str] | None
    names: dict[str, int]

    def __call__(self, case: str) -> int | None:
        if self.pattern is None:
            return None
        found = self.pattern.match(case)
        if found is None:
            return None
        if found.lastgroup in self.names:
            return self.names[found.lastgroup]
        for name, index in self.names.items():
            if found.group(name) is not None:
                return index
        return None  # pragma: no cover - a match always sets one alternative's group
