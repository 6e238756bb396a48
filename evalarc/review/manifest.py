"""Case manifests (``evalarc.case-manifest.v1``, read by :mod:`evalarc.formats.manifest`):
where each evaluation case came from.

A manifest is a list of rules ``{match, source, difficulty?, note?}``. ``match`` is an exact case
id or a case-sensitive glob (``*``, ``?``, ``[``); the first rule that matches a case decides its
source. ``eval-health`` uses the result to say whether an evaluation rests on real traffic and
failures or on cases someone invented.

Matching is pure.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from evalarc.errors import InputError
from evalarc.formats.manifest import CaseManifest, CaseRule


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
