"""The one in-memory model every reader produces: run -> case -> check -> attempts.

Readers (``inspect``, ``promptfoo``, ``junit``) turn another tool's result file into a
:class:`Run`. Review code (``evalarc.review``) only ever sees this model, so a rule such as
"errors are unassessed, not failures" is applied once, by the reader, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

FormatName = str
"""The name of the reader that made a run: one of
:data:`evalarc.formats.registry.FORMAT_NAMES` (the one list of formats)."""

EVIDENCE_LIMIT = 500
"""Evidence text is cut to this many characters plus an ellipsis."""

USAGE_METRICS: tuple[str, ...] = (
    "cost_usd",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "duration_seconds",
)
"""Usage metrics a reader may record per attempt, in report order."""


def cut_evidence(text: object) -> str | None:
    """Stringify evidence and cut it to EVIDENCE_LIMIT characters (plus an ellipsis)."""
    if text is None:
        return None
    value = text if isinstance(text, str) else str(text)
    if len(value) > EVIDENCE_LIMIT:
        return value[:EVIDENCE_LIMIT] + "…"
    return value


@dataclass(frozen=True, slots=True)
class Attempt:
    """One graded attempt of one check (an Inspect epoch, a promptfoo repeat, a JUnit rerun)."""

    passed: bool | None
    """True pass, False fail, None unassessed (error, skip, unknown score)."""
    value: Any = None
    """The raw score as the source tool wrote it ("C", 0.75, true, ...), or None."""
    evidence: str | None = None
    """The tool's explanation or failure message, already cut to EVIDENCE_LIMIT."""
    output_sha256: str | None = None
    """SHA-256 of the output this attempt graded, when the tool records one."""
    rerun: bool = False
    """True when this attempt only ran because the one before it failed (a JUnit rerun plugin's
    retry): it adds evidence about the test, not coverage of it."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"passed": self.passed}
        if self.value is not None:
            data["value"] = self.value
        if self.evidence is not None:
            data["evidence"] = self.evidence
        return data


@dataclass(frozen=True, slots=True)
class Source:
    """Where a run came from: the file's base name and the SHA-256 of its raw bytes."""

    name: str
    sha256: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "sha256": self.sha256}


@dataclass(frozen=True, slots=True)
class Headline:
    """The source tool's own headline metric, e.g. ``match accuracy`` 0.625."""

    name: str
    value: float | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value}


@dataclass(slots=True)
class SampleMeta:
    """Per-attempt facts about one case row (an Inspect sample, a promptfoo result row,
    a JUnit testcase element): what it cost and what it produced."""

    usage: dict[str, float] = field(default_factory=dict)
    """Metric name (see USAGE_METRICS) -> finite non-negative number; missing = unknown."""
    output_sha256: str | None = None
    output_text: str | None = None
    """The first 20,000 characters of the output, when the tool records one."""
    stop_reason: str | None = None
    truncated: bool = False
    limit: str | None = None
    verdicts: dict[str, bool | None] = field(default_factory=dict)
    """Check name -> passed, for this attempt."""


@dataclass(frozen=True, slots=True)
class Material:
    """Case text that must not leak into a harness: an input or an expected answer."""

    role: Literal["input", "expected"]
    text: str


@dataclass(frozen=True, slots=True)
class MatrixKey:
    """What identifies a promptfoo case whatever else its matrix holds: the test (description,
    else vars, else index), its vars as JSON, the provider and the prompt label."""

    test: str
    vars: str
    provider: str
    prompt: str


@dataclass(slots=True)
class Graders:
    subject_models: list[str] = field(default_factory=list)
    grader_models: list[str] = field(default_factory=list)
    self_graded: list[str] = field(default_factory=list)
    default_grader_checks: list[str] = field(default_factory=list)
    model_graded_checks: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Run:
    """One result file, read into the shared model."""

    format: FormatName
    source: Source
    threshold: float
    cases: Mapping[str, Mapping[str, Sequence[Attempt]]]
    """case id -> check name -> attempts in the order the tool wrote them. Read-only once the
    run is read: readers share one value among equal cases (a JUnit file of half a million bare
    testcases holds one), so nothing may write into it."""
    identity: dict[str, Any] = field(default_factory=dict)
    """Format-specific identity: Inspect task/model/status/epochs, promptfoo description/
    providers/version, JUnit suites."""
    headline: Headline | None = None
    incomplete: bool = False
    """True when the producing tool says the run did not finish (Inspect status != success)."""
    material: dict[str, list[Material]] = field(default_factory=dict)
    samples: Mapping[str, Sequence[SampleMeta]] = field(default_factory=dict)
    """case id -> one SampleMeta per attempt row, in order (read-only, as ``cases``)."""
    generate_config: dict[str, Any] = field(default_factory=dict)
    graders: Graders = field(default_factory=Graders)
    matrix: dict[str, MatrixKey] = field(default_factory=dict)
    """promptfoo: case id -> its matrix key, so two files are paired on test, provider and
    prompt (ids are recomputed over both files; see ``formats.promptfoo.align_matrix``)."""

    def with_source(self, source: Source) -> Run:
        """The same run under another recorded source (used when verifying renamed copies)."""
        return replace(self, source=source)
