"""The eval-health report (``evalarc.eval-health.v1``, health.json) as typed values: one frozen
dataclass per part, fields in schema order, and the one place the schema is written and read.

``to_json()`` gives exactly the object ``evalarc eval-health`` writes (key order included, an
optional key left out where the writer leaves it out); ``from_json(value, name)`` reads one back,
refusing a newer schema version (naming the file and both versions) and any malformed field with
one line naming the file and the field. Numbers are kept as read, so
``to_json(from_json(x)) == x``.

Two parts stay plain JSON objects (:data:`evalarc.canonical.JSONValue`) because no reader takes
them apart: a run's ``identity`` (its reader's own facts) and its ``generate_config`` (the
source tool's settings); both are only shown whole.

:class:`Noise` (sampling noise of one run's pooled counts) is shared with the hillclimb review.

Pure: no file is read or written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalarc import schemas
from evalarc.canonical import JSONValue
from evalarc.formats.model import Source
from evalarc.review.model_json import Fields, report_fields

HEALTH_SCHEMA = schemas.EVAL_HEALTH

WARNING = "warning"
INFO = "info"
SEVERITIES = (WARNING, INFO)

TRIAGE_CATEGORIES: tuple[str, ...] = (
    "pipeline",
    "truncated",
    "grader_inconsistent",
    "regressed",
    "never_passes",
    "variable",
    "consistent_failure",
)
"""Failure triage categories; the first that applies to a failing case wins."""


def _interval_json(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


@dataclass(frozen=True, slots=True)
class Noise:
    """How large a pass-rate change one run's pooled counts can resolve at 95%."""

    assessed_attempts: int
    pass_rate: float | None
    resolvable_change: float
    attempts_for_min_effect: int | None = None
    """Only with a minimum effect (the key is left out otherwise)."""

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {
            "assessed_attempts": self.assessed_attempts,
            "pass_rate": self.pass_rate,
            "resolvable_change": self.resolvable_change,
        }
        if self.attempts_for_min_effect is not None:
            data["attempts_for_min_effect"] = self.attempts_for_min_effect
        return data

    @classmethod
    def read(cls, part: Fields) -> Noise:
        part.only("assessed_attempts", "pass_rate", "resolvable_change", "attempts_for_min_effect")
        return cls(
            assessed_attempts=part.count("assessed_attempts"),
            pass_rate=part.opt_number("pass_rate"),
            resolvable_change=part.number("resolvable_change"),
            attempts_for_min_effect=part.count("attempts_for_min_effect")
            if part.has("attempts_for_min_effect")
            else None,
        )


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One result file's totals."""

    source: Source
    identity: Mapping[str, JSONValue]
    """The reader's facts about the run (task, model, status, ...): plain JSON, shown whole."""
    incomplete: bool
    cases: int
    checks: int
    repeated_checks: int
    max_attempts: int
    passed: int
    assessed: int
    attempts: int
    pass_rate: float | None
    interval_95: tuple[float, float] | None
    mean_duration_seconds: float | None
    mean_cost_usd: float | None
    total_duration_seconds: float | None
    total_cost_usd: float | None
    generate_config: Mapping[str, JSONValue]
    """The source tool's generation settings: plain JSON, shown whole."""
    truncated_attempts: int

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "source": self.source.to_json(),
            "identity": dict(self.identity),
            "incomplete": self.incomplete,
            "cases": self.cases,
            "checks": self.checks,
            "repeated_checks": self.repeated_checks,
            "max_attempts": self.max_attempts,
            "passed": self.passed,
            "assessed": self.assessed,
            "attempts": self.attempts,
            "pass_rate": self.pass_rate,
            "interval_95": _interval_json(self.interval_95),
            "mean_duration_seconds": self.mean_duration_seconds,
            "mean_cost_usd": self.mean_cost_usd,
            "total_duration_seconds": self.total_duration_seconds,
            "total_cost_usd": self.total_cost_usd,
            "generate_config": dict(self.generate_config),
            "truncated_attempts": self.truncated_attempts,
        }

    @classmethod
    def read(cls, part: Fields) -> RunSummary:
        part.only(
            "source",
            "identity",
            "incomplete",
            "cases",
            "checks",
            "repeated_checks",
            "max_attempts",
            "passed",
            "assessed",
            "attempts",
            "pass_rate",
            "interval_95",
            "mean_duration_seconds",
            "mean_cost_usd",
            "total_duration_seconds",
            "total_cost_usd",
            "generate_config",
            "truncated_attempts",
        )
        return cls(
            source=part.source(),
            identity=part.json_object("identity"),
            incomplete=part.flag("incomplete"),
            cases=part.count("cases"),
            checks=part.count("checks"),
            repeated_checks=part.count("repeated_checks"),
            max_attempts=part.count("max_attempts"),
            passed=part.count("passed"),
            assessed=part.count("assessed"),
            attempts=part.count("attempts"),
            pass_rate=part.opt_number("pass_rate"),
            interval_95=part.interval("interval_95"),
            mean_duration_seconds=part.opt_number("mean_duration_seconds"),
            mean_cost_usd=part.opt_number("mean_cost_usd"),
            total_duration_seconds=part.opt_number("total_duration_seconds"),
            total_cost_usd=part.opt_number("total_cost_usd"),
            generate_config=part.json_object("generate_config"),
            truncated_attempts=part.count("truncated_attempts"),
        )


@dataclass(frozen=True, slots=True)
class CapabilityStep:
    """Two neighbouring files under ``--ordered``: the later one is declared stronger."""

    weaker: str
    stronger: str
    delta: float | None
    within_sampling_noise: bool

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "weaker": self.weaker,
            "stronger": self.stronger,
            "delta": self.delta,
            "within_sampling_noise": self.within_sampling_noise,
        }

    @classmethod
    def read(cls, part: Fields) -> CapabilityStep:
        part.only("weaker", "stronger", "delta", "within_sampling_noise")
        return cls(
            part.text("weaker"),
            part.text("stronger"),
            part.opt_number("delta"),
            part.flag("within_sampling_noise"),
        )


@dataclass(frozen=True, slots=True)
class Graders:
    """Which models were graded and which graded, over every file."""

    subject_models: tuple[str, ...]
    grader_models: tuple[str, ...]
    self_graded: tuple[str, ...]

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "subject_models": list(self.subject_models),
            "grader_models": list(self.grader_models),
            "self_graded": list(self.self_graded),
        }

    @classmethod
    def read(cls, part: Fields) -> Graders:
        part.only("subject_models", "grader_models", "self_graded")
        return cls(
            part.texts("subject_models"), part.texts("grader_models"), part.texts("self_graded")
        )


@dataclass(frozen=True, slots=True)
class TriageEntry:
    """One failing case of the last file and the first triage category that applies."""

    case_id: str
    category: str
    """One of :data:`TRIAGE_CATEGORIES`."""
    checks: tuple[str, ...]
    """Its failing checks."""

    def to_json(self) -> dict[str, JSONValue]:
        return {"case_id": self.case_id, "category": self.category, "checks": list(self.checks)}

    @classmethod
    def read(cls, part: Fields) -> TriageEntry:
        part.only("case_id", "category", "checks")
        return cls(
            part.text("case_id"),
            part.choice("category", TRIAGE_CATEGORIES),
            part.texts("checks"),
        )


@dataclass(frozen=True, slots=True)
class Size:
    """How big the evaluation is per configuration, from the last file."""

    configurations: int
    cases: int
    attempts_per_case: int
    case_attempts_per_configuration: int
    mean_seconds_per_attempt: float | None
    recorded_seconds_per_configuration: float | None
    recorded_cost_usd_per_configuration: float | None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "configurations": self.configurations,
            "cases": self.cases,
            "attempts_per_case": self.attempts_per_case,
            "case_attempts_per_configuration": self.case_attempts_per_configuration,
            "mean_seconds_per_attempt": self.mean_seconds_per_attempt,
            "recorded_seconds_per_configuration": self.recorded_seconds_per_configuration,
            "recorded_cost_usd_per_configuration": self.recorded_cost_usd_per_configuration,
        }

    @classmethod
    def read(cls, part: Fields) -> Size:
        part.only(
            "configurations",
            "cases",
            "attempts_per_case",
            "case_attempts_per_configuration",
            "mean_seconds_per_attempt",
            "recorded_seconds_per_configuration",
            "recorded_cost_usd_per_configuration",
        )
        return cls(
            configurations=part.count("configurations"),
            cases=part.count("cases"),
            attempts_per_case=part.count("attempts_per_case"),
            case_attempts_per_configuration=part.count("case_attempts_per_configuration"),
            mean_seconds_per_attempt=part.opt_number("mean_seconds_per_attempt"),
            recorded_seconds_per_configuration=part.opt_number(
                "recorded_seconds_per_configuration"
            ),
            recorded_cost_usd_per_configuration=part.opt_number(
                "recorded_cost_usd_per_configuration"
            ),
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """What a planned run would take (``--plan-attempts`` / ``--plan-configs``)."""

    cases: int
    attempts_per_case: int
    configurations: int
    case_attempts: int
    serial_seconds: float | None
    cost_usd: float | None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "cases": self.cases,
            "attempts_per_case": self.attempts_per_case,
            "configurations": self.configurations,
            "case_attempts": self.case_attempts,
            "serial_seconds": self.serial_seconds,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def read(cls, part: Fields) -> Plan:
        part.only(
            "cases",
            "attempts_per_case",
            "configurations",
            "case_attempts",
            "serial_seconds",
            "cost_usd",
        )
        return cls(
            cases=part.count("cases"),
            attempts_per_case=part.count("attempts_per_case"),
            configurations=part.count("configurations"),
            case_attempts=part.count("case_attempts"),
            serial_seconds=part.opt_number("serial_seconds"),
            cost_usd=part.opt_number("cost_usd"),
        )


@dataclass(frozen=True, slots=True)
class Provenance:
    """What the case manifest declares about the recorded cases."""

    manifest: Source
    counts: Mapping[str, int]
    """Declared source -> cases, in the manifest schema's source order; zeros left out."""
    declared: int
    undeclared: tuple[str, ...]
    real: int
    unexplained_model_failures: tuple[str, ...]
    scope: str

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "manifest": self.manifest.to_json(),
            "counts": dict(self.counts),
            "declared": self.declared,
            "undeclared": list(self.undeclared),
            "real": self.real,
            "unexplained_model_failures": list(self.unexplained_model_failures),
            "scope": self.scope,
        }

    @classmethod
    def read(cls, part: Fields) -> Provenance:
        part.only(
            "manifest",
            "counts",
            "declared",
            "undeclared",
            "real",
            "unexplained_model_failures",
            "scope",
        )
        return cls(
            manifest=part.source("manifest"),
            counts=part.counts("counts"),
            declared=part.count("declared"),
            undeclared=part.texts("undeclared"),
            real=part.count("real"),
            unexplained_model_failures=part.texts("unexplained_model_failures"),
            scope=part.text("scope"),
        )


@dataclass(frozen=True, slots=True)
class FindingItem:
    """One (file, case, check) a finding points at, with its counts."""

    case_id: str
    check: str
    passed: int
    assessed: int
    attempts: int
    file: str | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {}
        if self.file is not None:
            data["file"] = self.file
        data.update(
            case_id=self.case_id,
            check=self.check,
            passed=self.passed,
            assessed=self.assessed,
            attempts=self.attempts,
        )
        if self.detail is not None:
            data["detail"] = self.detail
        return data

    @classmethod
    def read(cls, part: Fields) -> FindingItem:
        part.only("file", "case_id", "check", "passed", "assessed", "attempts", "detail")
        return cls(
            case_id=part.text("case_id"),
            check=part.text("check"),
            passed=part.count("passed"),
            assessed=part.count("assessed"),
            attempts=part.count("attempts"),
            file=part.text("file") if part.has("file") else None,
            detail=part.text("detail") if part.has("detail") else None,
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding as recorded: ``items`` as kept (at most the compute's limit) and
    ``items_total`` only when the list was cut."""

    id: str
    severity: str
    """``warning`` (counts against ``healthy``) or ``info``."""
    message: str
    value: float | None = None
    items: tuple[FindingItem, ...] = ()
    items_total: int | None = None

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
        }
        if self.value is not None:
            data["value"] = self.value
        if self.items:
            data["items"] = [item.to_json() for item in self.items]
            if self.items_total is not None:
                data["items_total"] = self.items_total
        return data

    @classmethod
    def read(cls, part: Fields) -> Finding:
        part.only("id", "severity", "message", "value", "items", "items_total")
        items = part.objects("items", FindingItem.read) if part.has("items") else ()
        if part.has("items") and not items:
            raise part.fail("items", "is written only when it lists something")
        total = part.count("items_total") if part.has("items_total") else None
        if total is not None and not items:
            raise part.fail("items_total", "is written only beside items")
        return cls(
            id=part.text("id"),
            severity=part.choice("severity", SEVERITIES),
            message=part.text("message"),
            value=part.number("value") if part.has("value") else None,
            items=items,
            items_total=total,
        )

    @property
    def total(self) -> int:
        """Items found, including those cut from the report."""
        return len(self.items) if self.items_total is None else self.items_total


@dataclass(frozen=True, slots=True)
class HealthReport:
    """health.json: can these saved results support decisions?"""

    schema_version: str
    created_at: str
    format: str
    numeric_pass_threshold: float
    saturation: float
    min_effect: float | None
    ordered: bool
    runs: tuple[RunSummary, ...]
    noise: Noise
    """Of the last file."""
    capability_order: tuple[CapabilityStep, ...]
    graders: Graders
    recorded_outputs: int
    triage: tuple[TriageEntry, ...]
    size: Size
    plan: Plan | None
    """Only with a planned run (the key is left out otherwise)."""
    provenance: Provenance | None
    findings: tuple[Finding, ...]
    warnings: int
    healthy: bool
    scope: str

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema_version": self.schema_version,
            "created_at": self.created_at,
            "format": self.format,
            "numeric_pass_threshold": self.numeric_pass_threshold,
            "saturation": self.saturation,
            "min_effect": self.min_effect,
            "ordered": self.ordered,
            "runs": [run.to_json() for run in self.runs],
            "noise": self.noise.to_json(),
            "capability_order": [step.to_json() for step in self.capability_order],
            "graders": self.graders.to_json(),
            "recorded_outputs": self.recorded_outputs,
            "triage": [entry.to_json() for entry in self.triage],
            "size": self.size.to_json(),
        }
        if self.plan is not None:
            data["plan"] = self.plan.to_json()
        data.update(
            provenance=None if self.provenance is None else self.provenance.to_json(),
            findings=[finding.to_json() for finding in self.findings],
            warnings=self.warnings,
            healthy=self.healthy,
            scope=self.scope,
        )
        return data

    @classmethod
    def from_json(cls, value: object, name: str) -> HealthReport:
        """Read health.json (``name`` is the file as the user gave it)."""
        report = report_fields(value, HEALTH_SCHEMA, name)
        report.only(
            "schema_version",
            "created_at",
            "format",
            "numeric_pass_threshold",
            "saturation",
            "min_effect",
            "ordered",
            "runs",
            "noise",
            "capability_order",
            "graders",
            "recorded_outputs",
            "triage",
            "size",
            "plan",
            "provenance",
            "findings",
            "warnings",
            "healthy",
            "scope",
        )
        runs = report.objects("runs", RunSummary.read)
        if not runs:
            raise report.fail("runs", "is empty")
        provenance = report.opt_obj("provenance")
        return cls(
            schema_version=report.text("schema_version"),
            created_at=report.text("created_at"),
            format=report.text("format"),
            numeric_pass_threshold=report.number("numeric_pass_threshold"),
            saturation=report.number("saturation"),
            min_effect=report.opt_number("min_effect"),
            ordered=report.flag("ordered"),
            runs=runs,
            noise=Noise.read(report.obj("noise")),
            capability_order=report.objects("capability_order", CapabilityStep.read),
            graders=Graders.read(report.obj("graders")),
            recorded_outputs=report.count("recorded_outputs"),
            triage=report.objects("triage", TriageEntry.read),
            size=Size.read(report.obj("size")),
            plan=Plan.read(report.obj("plan")) if report.has("plan") else None,
            provenance=None if provenance is None else Provenance.read(provenance),
            findings=report.objects("findings", Finding.read),
            warnings=report.count("warnings"),
            healthy=report.flag("healthy"),
            scope=report.text("scope"),
        )
