"""Task packs: load a pack folder, write its workspaces, and evaluate a candidate against it.

A pack folder (``packs/<task-id>/``) holds ``pack.toml`` (identity, dimensions and weights,
limits, default command, languages, declared faults), the contract handed to agents, the grader
module (imported by file path) and the reference and starter workspaces. This module knows
nothing about any one task: the grader module generates cases, runs one case through a backend's
:class:`~evalarc.runtime.protocol.CaseRun` and scores case records; :func:`evaluate` strings
those together into the ``evalarc.evaluation.v2`` object.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from evalarc import __version__, schemas
from evalarc.bundle import staged_folder
from evalarc.errors import EnvironmentFailure, InputError, OutputError, UsageError
from evalarc.resources import bundled_dir
from evalarc.runtime.protocol import Backend, CaseRun, Limits, Transcript

PACK_SCHEMA = schemas.PACK
EVALUATION_SCHEMA = schemas.EVALUATION
PACK_FILE = "pack.toml"
VIEWS_FILE = "views.toml"
"""How the pages show a pack's cases; outside the grader fingerprint (it changes no grade)."""
GUIDE_NAME = "RUNTIME.md"
_WEIGHT_TOLERANCE = 1e-9
_SKIPPED_PARTS = frozenset({"__pycache__", ".git", ".venv"})
_EVALARC_DIR = Path(__file__).resolve().parent
# The shared grading code whose behaviour every pack's result depends on, in hashing order.
_SHARED_GRADER_FILES = (
    _EVALARC_DIR / "canonical.py",
    _EVALARC_DIR / "scoring.py",
    _EVALARC_DIR / "runtime" / "protocol.py",
    _EVALARC_DIR / "runtime" / "jsonl.py",
)

EventSink = Callable[[dict[str, Any]], None]
"""Receives progress events (``event`` plus fields, without ``created_at``)."""


# -- what a grader module provides -----------------------------------------------------------


class PackCase(Protocol):
    """One generated case of one seed."""

    @property
    def seed(self) -> int: ...

    @property
    def case_id(self) -> str: ...

    def manifest(self) -> dict[str, Any]:
        """The case's entry in the fingerprinted cases manifest."""
        ...


class CaseOutcome(Protocol):
    """What running one case established."""

    def record(
        self, duration_seconds: float, recording_sha256: str | None, stderr_tail_limit_bytes: int
    ) -> dict[str, Any]:
        """The case's entry in ``cases`` of evaluation.json."""
        ...


class Grader(Protocol):
    """The functions a pack's grader module defines at module level."""

    def generate_cases(self, seed: int) -> Sequence[PackCase]: ...

    def cases_sha256(self, cases: Sequence[Any]) -> str: ...

    def run_case(self, case: Any, case_run: CaseRun) -> CaseOutcome: ...

    def unassessed_case(self, case: Any, message: str) -> CaseOutcome: ...

    def summarize(
        self, cases: Sequence[Mapping[str, Any]], dimensions: Sequence[tuple[str, float]]
    ) -> dict[str, Any]: ...


_GRADER_FUNCTIONS = ("generate_cases", "cases_sha256", "run_case", "unassessed_case", "summarize")


# -- the pack model --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dimension:
    id: str
    weight: float


@dataclass(frozen=True, slots=True)
class FaultEdit:
    """The one textual change that turns a language's reference into a faulty variant."""

    file: str
    anchor: str
    """Text that must occur exactly once in ``file``."""
    replacement: str


@dataclass(frozen=True, slots=True)
class Fault:
    """A declared fault model: a defective variant the pack's checks must detect."""

    name: str
    target_dimension: str
    """The only dimension in which a failure counts as detecting this fault."""
    summary: str
    expected_seed17_score: float | None
    expected_seed17_failing: tuple[str, ...]
    edits: Mapping[str, FaultEdit]
    """Language name to the edit for that language's reference."""


@dataclass(frozen=True, slots=True)
class Language:
    name: str
    entry: str
    reference: Path
    starter: Path
    guide: Path | None
    """Runtime guidance copied into workspaces as RUNTIME.md (None when the language needs none)."""


@dataclass(frozen=True, slots=True)
class Pack:
    """A loaded task pack."""

    id: str
    version: str
    domain: str
    description: str
    split: str
    root: Path
    contract: Path
    grader_path: Path
    grader: Grader
    default_command: tuple[str, ...]
    default_seeds: tuple[int, ...]
    dimensions: tuple[Dimension, ...]
    limits: Limits
    languages: Mapping[str, Language]
    faults: tuple[Fault, ...]

    def task_json(self) -> dict[str, str]:
        return {"id": self.id, "version": self.version, "domain": self.domain, "split": self.split}

    def weights(self) -> list[tuple[str, float]]:
        return [(dimension.id, dimension.weight) for dimension in self.dimensions]

    def language(self, name: str) -> Language:
        try:
            return self.languages[name]
        except KeyError:
            known = ", ".join(sorted(self.languages))
            raise UsageError(
                f"task {self.id} has no language {name!r} (choose from {known})"
            ) from None

    def fault(self, name: str) -> Fault:
        for fault in self.faults:
            if fault.name == name:
                return fault
        known = ", ".join(fault.name for fault in self.faults)
        raise UsageError(f"task {self.id} declares no fault {name!r} (declared: {known})")


# -- loading ---------------------------------------------------------------------------------


def packs_root() -> Path:
    return bundled_dir("packs")


def list_packs() -> list[Pack]:
    """Every bundled pack, sorted by task id."""
    root = packs_root()
    if not root.is_dir():
        return []
    return [
        load_pack(folder.name)
        for folder in sorted(root.iterdir())
        if (folder / PACK_FILE).is_file()
    ]


@cache
def load_pack(task_id: str) -> Pack:
    """Read ``packs/<task_id>/pack.toml`` and import its grader module."""
    root = packs_root()
    folder = root / task_id
    if "/" in task_id or task_id.startswith(".") or not (folder / PACK_FILE).is_file():
        known = (
            ", ".join(sorted(p.name for p in root.iterdir() if (p / PACK_FILE).is_file()))
            if root.is_dir()
            else ""
        )
        raise UsageError(f"unknown task {task_id!r} (available: {known or 'none'})")
    path = folder / PACK_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{path}: cannot read pack manifest: {error}") from None
    return _build_pack(path, data)


def _build_pack(path: Path, data: dict[str, Any]) -> Pack:
    reader = _TableReader(path, data)
    if reader.text("schema_version") != PACK_SCHEMA:
        raise InputError(f"{path}: schema_version must be {PACK_SCHEMA}")
    folder = path.parent
    dimensions = tuple(
        Dimension(
            _TableReader(path, item, "dimensions").text("id"),
            _TableReader(path, item, "dimensions").number("weight"),
        )
        for item in reader.tables("dimensions")
    )
    if not dimensions or len({d.id for d in dimensions}) != len(dimensions):
        raise InputError(f"{path}: dimensions must be non-empty with unique ids")
    if not math.isclose(sum(d.weight for d in dimensions), 1.0, abs_tol=_WEIGHT_TOLERANCE) or any(
        not 0.0 <= d.weight <= 1.0 for d in dimensions
    ):
        raise InputError(f"{path}: dimension weights must lie in [0, 1] and sum to 1")
    limits_table = _TableReader(path, reader.table("limits"), "limits")
    limits = Limits(
        response_timeout=limits_table.number("response_timeout_seconds"),
        case_timeout=limits_table.number("case_timeout_seconds"),
        startup_timeout=limits_table.number("startup_timeout_seconds"),
        session_output_limit_bytes=limits_table.integer("session_output_limit_bytes"),
        request_limit_bytes=limits_table.integer("request_limit_bytes"),
    )
    languages = {
        name: _language(path, folder, name, table)
        for name, table in reader.table("languages").items()
    }
    dimension_ids = {d.id for d in dimensions}
    faults = tuple(
        _fault(path, item, dimension_ids, languages)
        for item in reader.tables("faults", required=False)
    )
    if len({fault.name for fault in faults}) != len(faults):
        raise InputError(f"{path}: fault names must be unique")
    grader_path = folder / reader.text("grader")
    pack_id = reader.text("id")
    if pack_id != folder.name:
        raise InputError(f"{path}: id {pack_id!r} does not match its folder {folder.name!r}")
    version = reader.text("version")
    seeds = tuple(reader.integers("default_seeds"))
    validate_seeds(seeds)
    return Pack(
        id=pack_id,
        version=version,
        domain=reader.text("domain"),
        description=reader.text("description"),
        split=reader.text("split"),
        root=folder,
        contract=_existing(path, folder / reader.text("contract")),
        grader_path=grader_path,
        grader=_import_grader(grader_path, pack_id, version),
        default_command=tuple(reader.texts("default_command")),
        default_seeds=seeds,
        dimensions=dimensions,
        limits=limits,
        languages=languages,
        faults=faults,
    )


def _language(path: Path, folder: Path, name: str, table: Any) -> Language:
    reader = _TableReader(path, table, f"languages.{name}")
    guide = reader.optional_text("guide")
    return Language(
        name=name,
        entry=reader.text("entry"),
        reference=_existing(path, folder / reader.text("reference")),
        starter=_existing(path, folder / reader.text("starter")),
        guide=_existing(path, folder / guide) if guide is not None else None,
    )


def _fault(
    path: Path, table: Any, dimension_ids: set[str], languages: Mapping[str, Language]
) -> Fault:
    reader = _TableReader(path, table, "faults")
    name = reader.text("name")
    target = reader.text("target_dimension")
    if target not in dimension_ids:
        raise InputError(f"{path}: fault {name} targets unknown dimension {target!r}")
    edits: dict[str, FaultEdit] = {}
    for language in languages:
        edit = _TableReader(path, reader.table(language), f"faults.{name}.{language}")
        edits[language] = FaultEdit(
            edit.text("file"), edit.text("anchor"), edit.text("replacement")
        )
    score = reader.optional_number("expected_seed17_score")
    return Fault(
        name,
        target,
        reader.text("summary"),
        score,
        tuple(reader.texts("expected_seed17_failing", required=False)),
        edits,
    )


# -- how pages show a pack's cases (views.toml) ----------------------------------------------

TRACE_VIEWS = ("transcript", "episode", "report-fields")
"""The trace views a pack can declare for its cases:

* ``transcript``: the case's recording, requests and responses per candidate process, with the
  restarts and kills between them and expected against actual at the first mismatch;
* ``episode``: the case record's ``trace`` of tool calls, their results, errors and retries,
  with the state each call changed and the record's initial and final state;
* ``report-fields``: each field of the report in the last response against the case record's
  ``expected`` value and the rule it had to meet.
"""
Oracle = Callable[[dict[str, Any], Any], Any]
"""``(state, request) -> response``: the contract's answer to a request; updates ``state``."""


@dataclass(frozen=True, slots=True)
class EpisodeLabels:
    """The words an ``episode`` view needs from its pack."""

    subject_argument: str
    """The tool-call argument naming the record a call acts on (``ticket_id``)."""
    subject_label: str
    """The heading of the column of those records (``Ticket``)."""
    idempotency_argument: str
    """The tool-call argument that carries the idempotency key (``request_id``)."""
    scored_state: str
    """What the verifier reads, in words (``the final ticket state``)."""


@dataclass(frozen=True, slots=True)
class PackTraceView:
    """How a pack's cases are shown step by step: ``[trace]`` of its ``views.toml``, with the
    grader's values it names. A pack without one shows the recording (``transcript``)."""

    view: str = "transcript"
    """One of :data:`TRACE_VIEWS`."""
    expected_response: Oracle | None = None
    """``transcript``: the grader's oracle, replayed over the recorded requests."""
    field_dimensions: Mapping[str, str] = field(default_factory=dict)
    """``report-fields``: the dimension each report field is scored in."""
    absolute_tolerance: float | None = None
    relative_tolerance: float | None = None
    """``report-fields``: the tolerances a float field must meet (either suffices)."""
    episode: EpisodeLabels | None = None
    """``episode``: the words the view uses."""


_TRACE_KEYS: dict[str, frozenset[str]] = {
    "transcript": frozenset({"view", "oracle"}),
    "episode": frozenset(
        {"view", "subject_argument", "subject_label", "idempotency_argument", "scored_state"}
    ),
    "report-fields": frozenset(
        {"view", "field_dimensions", "absolute_tolerance", "relative_tolerance"}
    ),
}


@cache
def pack_trace_view(task_id: str) -> PackTraceView:
    """The trace view ``packs/<task_id>/views.toml`` declares; the default ``transcript`` view
    when there is no such bundled pack or it declares none. A declaration that cannot be read,
    or names a grader value that is missing or of the wrong type, is refused naming the file."""
    folder = packs_root() / task_id
    path = folder / VIEWS_FILE
    if "/" in task_id or task_id.startswith(".") or not (folder / PACK_FILE).is_file():
        return PackTraceView()
    if not path.is_file():
        return PackTraceView()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{path}: cannot read pack views: {error}") from None
    schemas.check_schema(data, schemas.PACK_VIEWS, str(path))
    reader = _TableReader(path, data)
    unknown = sorted(set(data) - {"schema_version", "trace"})
    if unknown:
        raise InputError(f"{path}: unknown field {unknown[0]}")
    trace = _TableReader(path, reader.table("trace"), "trace")
    view = trace.text("view")
    if view not in _TRACE_KEYS:
        raise InputError(f"{path}: trace.view must be one of {', '.join(TRACE_VIEWS)}")
    unknown = sorted(set(reader.table("trace")) - _TRACE_KEYS[view])
    if unknown:
        raise InputError(f"{path}: trace.{unknown[0]} does not apply to a {view} view")
    grader = _GraderValues(path, task_id)
    if view == "episode":
        labels = EpisodeLabels(
            subject_argument=trace.text("subject_argument"),
            subject_label=trace.text("subject_label"),
            idempotency_argument=trace.text("idempotency_argument"),
            scored_state=trace.text("scored_state"),
        )
        return PackTraceView(view, episode=labels)
    if view == "report-fields":
        return PackTraceView(
            view,
            field_dimensions=grader.dimensions(trace.optional_text("field_dimensions")),
            absolute_tolerance=grader.number(trace.optional_text("absolute_tolerance")),
            relative_tolerance=grader.number(trace.optional_text("relative_tolerance")),
        )
    return PackTraceView(view, expected_response=grader.oracle(trace.optional_text("oracle")))


class _GraderValues:
    """The grader values a ``views.toml`` names, checked; the grader is imported on first use."""

    def __init__(self, path: Path, task_id: str) -> None:
        self._path = path
        self._task_id = task_id

    def _value(self, name: str) -> object:
        grader = load_pack(self._task_id).grader
        if not hasattr(grader, name):
            raise InputError(f"{self._path}: the grader has no {name}")
        value: object = getattr(grader, name)
        return value

    def oracle(self, name: str | None) -> Oracle | None:
        if name is None:
            return None
        value = self._value(name)
        if not callable(value):
            raise InputError(f"{self._path}: the grader's {name} is not a function")
        return cast(Oracle, value)

    def dimensions(self, name: str | None) -> dict[str, str]:
        if name is None:
            return {}
        value = self._value(name)
        if not isinstance(value, Mapping) or not all(
            isinstance(key, str) and isinstance(item, str) for key, item in value.items()
        ):
            raise InputError(f"{self._path}: the grader's {name} is not a table of names")
        return dict(value)

    def number(self, name: str | None) -> float | None:
        if name is None:
            return None
        value = self._value(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{self._path}: the grader's {name} is not a number")
        return float(value)


def _existing(manifest: Path, target: Path) -> Path:
    resolved = target.resolve()
    if not resolved.is_relative_to(manifest.parent.resolve()) or not resolved.exists():
        raise InputError(f"{manifest}: {target.name} is missing from the pack folder")
    return resolved


class _TableReader:
    """Typed access to one TOML table with errors naming the manifest and the field."""

    def __init__(self, path: Path, table: Any, where: str = "") -> None:
        if not isinstance(table, dict):
            raise InputError(f"{path}: {where or 'manifest'} must be a table")
        self._path = path
        self._table: dict[str, Any] = table
        self._where = where

    def _fail(self, name: str, what: str) -> InputError:
        field = f"{self._where}.{name}" if self._where else name
        return InputError(f"{self._path}: {field} must be {what}")

    def _get(self, name: str, required: bool = True) -> Any:
        if name not in self._table and required:
            raise self._fail(name, "present")
        return self._table.get(name)

    def text(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str) or not value:
            raise self._fail(name, "a non-empty string")
        return value

    def optional_text(self, name: str) -> str | None:
        return self.text(name) if name in self._table else None

    def texts(self, name: str, required: bool = True) -> list[str]:
        value = self._get(name, required)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self._fail(name, "a list of non-empty strings")
        return list(value)

    def number(self, name: str) -> float:
        value = self._get(name)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise self._fail(name, "a finite number")
        return float(value)

    def optional_number(self, name: str) -> float | None:
        return self.number(name) if name in self._table else None

    def integer(self, name: str) -> int:
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(name, "an integer")
        return value

    def integers(self, name: str) -> list[int]:
        value = self._get(name)
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self._fail(name, "a list of integers")
        return list(value)

    def table(self, name: str) -> dict[str, Any]:
        value = self._get(name)
        if not isinstance(value, dict):
            raise self._fail(name, "a table")
        return value

    def tables(self, name: str, required: bool = True) -> list[Any]:
        value = self._get(name, required)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._fail(name, "an array of tables")
        return value


def _import_grader(path: Path, pack_id: str, version: str) -> Grader:
    """Import the grader module by file path under a name unique to the pack and version."""
    safe = "".join(ch if ch.isalnum() else "_" for ch in f"{pack_id}_{version}")
    module_name = f"evalarc_pack_{safe}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"{path}: cannot import grader module")
    module: ModuleType = importlib.util.module_from_spec(spec)
    # Registered before running it: dataclasses look their module up while the module executes.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    missing = [name for name in _GRADER_FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        raise InputError(f"{path}: grader module lacks {', '.join(missing)}")
    return cast(Grader, module)


def grader_sha256(pack: Pack) -> str:
    """SHA-256 over each grading source file's name followed by its bytes (no separators).

    Covers the shared grading code and the pack's manifest and grader module, so any change to
    how cases are made, run or scored changes the fingerprint.
    """
    digest = hashlib.sha256()
    for path in (*_SHARED_GRADER_FILES, pack.root / PACK_FILE, pack.grader_path):
        digest.update(path.name.encode("utf-8"))
        digest.update(path.read_bytes())
    return digest.hexdigest()


def validate_seeds(seeds: Sequence[object]) -> list[int]:
    """Seeds must be a non-empty list of distinct plain integers (booleans are refused)."""
    if not seeds:
        raise UsageError("give at least one seed")
    result: list[int] = []
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise UsageError(f"seed {seed!r} is not an integer")
        result.append(seed)
    if len(set(result)) != len(result):
        raise UsageError("do not repeat seeds")
    return result


# -- workspaces ------------------------------------------------------------------------------


def materialize_workspace(
    task_id: str,
    language: str,
    *,
    reference: bool,
    fault: str | None,
    dest: Path,
    contract: bool = True,
) -> list[str]:
    """Write a new workspace folder ``dest``: the starter, the reference, or a faulty reference.

    ``contract`` adds TASK.md (and the language's RUNTIME.md guidance): what ``evalarc init``
    hands an agent. Audits pass ``contract=False`` so the workspace holds only the program (and
    its command manifest). The folder is staged beside ``dest`` and published only when
    complete; an existing ``dest`` (even a dangling symlink) is refused untouched. Returns the
    relative paths written, sorted.
    """
    pack = load_pack(task_id)
    chosen = pack.language(language)
    if fault is not None and not reference:
        raise UsageError("a fault variant is made from the reference; pass reference=True")
    files = _workspace_files(chosen.reference if reference else chosen.starter)
    if fault is not None:
        _apply_fault(pack.fault(fault), chosen, files)
    if contract:
        files["TASK.md"] = pack.contract.read_bytes()
        if chosen.guide is not None:
            files[GUIDE_NAME] = chosen.guide.read_bytes()
    _publish(files, dest)
    return sorted(files)


def _workspace_files(source: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if _SKIPPED_PARTS.intersection(relative.parts) or not path.is_file():
            continue
        files[relative.as_posix()] = path.read_bytes()
    return files


def _apply_fault(fault: Fault, language: Language, files: dict[str, bytes]) -> None:
    edit = fault.edits.get(language.name)
    if edit is None:
        raise UsageError(f"fault {fault.name} has no {language.name} variant")
    text = files.get(edit.file, b"").decode("utf-8")
    count = text.count(edit.anchor)
    if count != 1:
        raise InputError(
            f"fault {fault.name}: anchor {edit.anchor!r} occurs {count} times in {edit.file}, "
            "expected exactly once"
        )
    files[edit.file] = text.replace(edit.anchor, edit.replacement).encode("utf-8")


def _publish(files: Mapping[str, bytes], dest: Path) -> None:
    if os.path.lexists(dest):
        raise OutputError(f"{dest} already exists")
    parent = dest.parent
    if not parent.is_dir():
        raise OutputError(f"{dest}: parent folder {parent} does not exist")
    # Staged beside dest and published by one rename: a failure or a cancel leaves nothing.
    with staged_folder(dest) as staging:
        for relative, content in files.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            target.write_bytes(content)
            target.chmod(0o644)


# -- evaluation ------------------------------------------------------------------------------


class CandidateSnapshot(Protocol):
    """What :func:`evaluate` needs of a snapshot (``evalarc.runtime.snapshot.Snapshot``)."""

    @property
    def sha256(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CaseRecording:
    """The transcript of one executed case, for the caller to save as a recording."""

    seed: int
    case_id: str
    sha256: str
    transcript: Transcript


@dataclass(frozen=True, slots=True)
class EvaluationRun:
    report: dict[str, Any]
    """The ``evalarc.evaluation.v2`` object."""
    recordings: list[CaseRecording]
    """One per case that produced transcript events, in execution order."""


def evaluate(
    pack: Pack,
    snapshot: CandidateSnapshot,
    backend: Backend,
    seeds: Sequence[int],
    limits: Limits,
    *,
    on_event: EventSink | None = None,
    now: Callable[[], datetime] | None = None,
) -> EvaluationRun:
    """Run every case of every seed (seed-major) and build the evaluation report.

    Candidate failures are data in the report. An environment failure makes its case unassessed
    and the evaluation invalid (score null) but the report is still complete. Only misuse
    (bad seeds) raises.
    """
    seed_list = validate_seeds(seeds)
    emit = on_event or _ignore
    clock = now or _utc_now
    created_at = clock().isoformat()
    started = time.monotonic()
    cases = plan_cases(pack, seed_list)
    runtime = case_runtime(backend, limits)
    emit(
        {
            "event": "evaluation_started",
            "task": pack.id,
            "candidate_sha256": snapshot.sha256,
            "total_cases": len(cases),
        }
    )
    records: list[dict[str, Any]] = []
    recordings: list[CaseRecording] = []
    for number, case in enumerate(cases, start=1):
        emit(case_started_event(pack, case, number, len(cases)))
        record, recording = run_case(pack.grader, backend, case, limits)
        records.append(record)
        if recording is not None:
            recordings.append(recording)
        emit(case_completed_event(pack, case, number, len(cases), record))
    report = evaluation_report(
        pack,
        snapshot.sha256,
        runtime,
        seed_list,
        cases,
        records,
        created_at=created_at,
        seconds=time.monotonic() - started,
        replayed=backend.name == "replay",
    )
    emit(evaluation_completed_event(pack, report))
    return EvaluationRun(report, recordings)


def plan_cases(pack: Pack, seeds: Sequence[int]) -> list[PackCase]:
    """Every case of every seed, seed-major: the order of a report's ``cases``."""
    return [case for seed in seeds for case in pack.grader.generate_cases(seed)]


def case_runtime(backend: Backend, limits: Limits) -> dict[str, Any]:
    """The runtime object a backend reports, completed with the limits it does not name, keys
    in sorted order: the order a recording keeps it in, so the evaluation a live run writes and
    the one ``verify`` replays from its recordings are the same bytes."""
    runtime = backend.runtime()
    for name, value in limits.to_json().items():
        runtime.setdefault(name, value)
    return dict(sorted(runtime.items()))


def case_started_event(pack: Pack, case: PackCase, number: int, total: int) -> dict[str, Any]:
    return {
        "event": "case_started",
        "task": pack.id,
        "seed": case.seed,
        "case_id": case.case_id,
        "case_number": number,
        "total_cases": total,
    }


def case_completed_event(
    pack: Pack, case: PackCase, number: int, total: int, record: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "event": "case_completed",
        "task": pack.id,
        "seed": case.seed,
        "case_id": case.case_id,
        "case_number": number,
        "total_cases": total,
        "status": record["status"],
        "duration_seconds": record["duration_seconds"],
    }


def evaluation_completed_event(pack: Pack, report: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "event": "evaluation_completed",
        "task": pack.id,
        "score": report["score"],
        "status": report["status"],
        "valid": report["valid"],
    }


def evaluation_report(
    pack: Pack,
    candidate_sha256: str,
    runtime: dict[str, Any],
    seeds: list[int],
    cases: Sequence[PackCase],
    records: list[dict[str, Any]],
    *,
    created_at: str,
    seconds: float,
    replayed: bool = False,
) -> dict[str, Any]:
    """The ``evalarc.evaluation.v2`` object from the case records, in :func:`plan_cases` order
    (however the cases were scheduled)."""
    grader = pack.grader
    summary = grader.summarize(records, pack.weights())
    return {
        "schema_version": EVALUATION_SCHEMA,
        "created_at": created_at,
        "evalarc_version": __version__,
        "task": pack.task_json(),
        "candidate_sha256": candidate_sha256,
        "grader_sha256": grader_sha256(pack),
        "cases_sha256": grader.cases_sha256(cases),
        "runtime": runtime,
        "seeds": seeds,
        "valid": summary["valid"],
        "status": summary["status"],
        "score": summary["score"],
        "resolved": summary["resolved"],
        "dimensions": summary["dimensions"],
        "cases": records,
        "evaluation_seconds": _evaluation_seconds(replayed, records, seconds),
        "agent_cost_usd": None,
        "agent_tokens": None,
    }


def run_case(
    grader: Grader, backend: Backend, case: PackCase, limits: Limits
) -> tuple[dict[str, Any], CaseRecording | None]:
    """Run one case on ``backend``: its record and its recording (None when nothing ran).
    Environment failures make the case unassessed; candidate failures are graded."""
    started = time.monotonic()
    transcript: Transcript | None = None
    outcome: CaseOutcome | None = None
    failure: EnvironmentFailure | None = None
    recorded: float | None = 0.0 if backend.name == "replay" else None
    try:
        with backend.open_case(f"{case.seed}/{case.case_id}") as case_run:
            transcript = case_run.transcript
            if recorded is not None:
                recorded = _recorded_seconds(case_run)
            outcome = grader.run_case(case, case_run)
    except EnvironmentFailure as error:
        # Opening the case or cleaning it up failed: whatever ran is unassessed.
        failure = error
    # A replay reports the duration of the recording it replays, never its own timing.
    duration = time.monotonic() - started if recorded is None else recorded
    recording: CaseRecording | None = None
    if transcript is not None and transcript.events:
        recording = CaseRecording(case.seed, case.case_id, transcript.sha256(), transcript)
    if failure is not None:
        outcome = grader.unassessed_case(case, failure.message)
    assert outcome is not None
    record = outcome.record(
        duration, recording.sha256 if recording else None, limits.stderr_tail_bytes
    )
    return record, recording


def _evaluation_seconds(
    replayed: bool, records: Sequence[Mapping[str, Any]], measured: float
) -> float:
    """Host seconds of the run; for a replay, the sum of its recorded case durations."""
    if replayed:
        return round(sum(float(record["duration_seconds"]) for record in records), 6)
    return round(measured, 6)


def _recorded_seconds(case_run: CaseRun) -> float:
    """The length of the recording a replayed case answers from (0.0 when it has none)."""
    seconds = getattr(case_run, "recorded_seconds", 0.0)
    return float(seconds) if isinstance(seconds, int | float) else 0.0


def _ignore(event: dict[str, Any]) -> None:
    del event


def _utc_now() -> datetime:
    return datetime.now(UTC)
