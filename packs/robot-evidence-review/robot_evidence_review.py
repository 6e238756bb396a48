"""Grader of the robot-evidence-review task pack: recordings, seeded cases, oracle, checks, scoring.

Loaded by file path (``evalarc.packs.load_pack``); it runs on the host only, so the source frames
and the expected reports never enter the candidate's sandbox.

- Source data: six simulations of one ballistic flight (MuJoCo and PyBullet, 1/4/16 substeps),
  committed under ``recordings/`` with an index of SHA-256 sums. This module pins the index's own
  SHA-256, so the grader fingerprint (which covers this file) also covers the data, and tampered or
  regenerated data is refused instead of silently graded against.
- Cases: a seed draws one recording and one query frame, then four cases present that recording
  in four representations (sensor axes, units, origin, clock, omitted frames), each with its own
  shuffled observation order.
- Oracle: expected reports come from the original source frames (world meters, seconds), never
  from the request the candidate sees, so a mistake in making the request cannot cancel out.
- Checks: every case carries one check in each of the six dimensions; a report field belongs to
  exactly one dimension (``FIELD_DIMENSIONS``), and the envelope and key set belong to protocol.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from evalarc.canonical import JSONValue, canonical_json, sha256_bytes, sha256_json
from evalarc.errors import EnvironmentFailure, InputError
from evalarc.runtime.protocol import AgentFault, CaseRun, Session
from evalarc.scoring import summarize as summarize  # the pack interface re-exports it

Status = Literal["passed", "failed", "agent_error", "environment_error"]
Vector = tuple[float, float, float]

PACK_ID = "robot-evidence-review"
RECORDINGS_DIR = Path(__file__).resolve().parent / "recordings"
INDEX_FILE = "index.json"
INDEX_SHA256 = "a06cac007957049262b1b1a9a595ebf78012a13a639697a7d6a50598f217939f"
"""SHA-256 of ``recordings/index.json``; regenerate with ``tools/make_recordings.py``."""
INDEX_SCHEMA = "evalarc.robot-recording-index.v1"
RECORDING_SCHEMA = "evalarc.robot-recording.v1"
SOURCE_KIND = "derived-representation-of-simulated-cpu-states"

FPS = 30
EXPECTED_FRAMES = tuple(range(61))
OMITTED_FRAMES = (8, 43)
"""The frames the incomplete-recording case leaves out."""
QUERY_FRAMES = tuple(frame for frame in range(1, 60) if frame not in OMITTED_FRAMES)
"""Frames a seed may ask about: interior, and present in every case."""

ABSOLUTE_TOLERANCE = 1e-6
RELATIVE_TOLERANCE = 1e-7
MESSAGE_LIMIT = 180
NOT_FINITE_JSON = "response is not finite JSON"

DIMENSIONS = ("provenance", "coordinates", "clock", "metrics", "completeness", "protocol")
FIELD_DIMENSIONS: dict[str, str] = {
    "source_sha256": "provenance",
    "frame": "protocol",
    "time_seconds": "clock",
    "position_m": "coordinates",
    "speed_m_s": "coordinates",
    "max_position_error_m": "metrics",
    "peak_frame": "metrics",
    "peak_height_m": "metrics",
    "missing_frames": "completeness",
}
"""Which dimension each report field counts towards (protocol also covers the key sets)."""
REPORT_FIELDS = tuple(FIELD_DIMENSIONS)
ENVELOPE_KEYS = frozenset({"ok", "report"})
_INTEGER_FIELDS = frozenset({"frame", "peak_frame"})
_NUMBER_FIELDS = frozenset({"time_seconds", "speed_m_s", "max_position_error_m",
                            "peak_height_m"})


# -- recordings --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """One recorded sample in world coordinates."""

    sample: int
    time_s: float
    position_m: Vector
    velocity_m_s: Vector


@dataclass(frozen=True, slots=True)
class Ballistics:
    """The closed-form flight the recordings are compared with: p0 + v0 t + g t^2 / 2."""

    position0_m: Vector
    velocity0_m_s: Vector
    gravity_m_s2: Vector

    def position(self, time_s: float) -> Vector:
        p, v, g = self.position0_m, self.velocity0_m_s, self.gravity_m_s2
        return (p[0] + v[0] * time_s + 0.5 * g[0] * time_s * time_s,
                p[1] + v[1] * time_s + 0.5 * g[1] * time_s * time_s,
                p[2] + v[2] * time_s + 0.5 * g[2] * time_s * time_s)

    def to_json(self) -> dict[str, JSONValue]:
        return {"position0_m": list(self.position0_m), "velocity0_m_s": list(self.velocity0_m_s),
                "gravity_m_s2": list(self.gravity_m_s2)}


@dataclass(frozen=True, slots=True)
class Recording:
    """One committed simulation, verified against the pinned index."""

    id: str
    path: str
    """Relative to the pack folder, e.g. ``recordings/mujoco-1.json``."""
    sha256: str
    """Of the file's exact bytes."""
    engine: str
    engine_version: str
    substeps: int
    ballistics: Ballistics
    frames: tuple[Frame, ...]


def _vector(value: JSONValue, where: str) -> Vector:
    if not isinstance(value, list) or len(value) != 3 or \
            not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        raise InputError(f"{where}: expected three numbers")
    return (float(value[0]), float(value[1]), float(value[2]))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read recording data: {error.strerror}") from None


def _parse_recording(data: bytes, entry: Mapping[str, JSONValue], where: Path) -> Recording:
    try:
        record = json.loads(data)
        scene = record["scene"]
        frames = tuple(
            Frame(int(item["sample"]), float(item["time_s"]),
                  _vector(item["position_m"], f"{where} frame {number}"),
                  _vector(item["velocity_m_s"], f"{where} frame {number}"))
            for number, item in enumerate(record["frames"])
        )
        ballistics = Ballistics(_vector(scene["initial_position_m"], f"{where} scene"),
                                _vector(scene["initial_velocity_m_s"], f"{where} scene"),
                                _vector(scene["gravity_m_s2"], f"{where} scene"))
        recording = Recording(str(record["id"]), f"recordings/{entry['file']}",
                              str(entry["sha256"]), str(record["source"]["engine"]),
                              str(record["source"]["engine_version"]), int(record["substeps"]),
                              ballistics, frames)
    except (ValueError, TypeError, KeyError) as error:
        raise InputError(f"{where}: not a robot recording: {error}") from None
    if record.get("schema") != RECORDING_SCHEMA or recording.id != entry["id"]:
        raise InputError(f"{where}: schema must be {RECORDING_SCHEMA} with id {entry['id']}")
    if [frame.sample for frame in frames] != list(EXPECTED_FRAMES):
        raise InputError(f"{where}: frames must be samples 0..{EXPECTED_FRAMES[-1]} in order")
    return recording


@cache
def load_recordings() -> dict[str, Recording]:
    """Every recording in index order, each file checked against its SHA-256.

    Raises InputError when the index is not the pinned one or a file does not match it.
    """
    index_path = RECORDINGS_DIR / INDEX_FILE
    index_bytes = _read(index_path)
    digest = sha256_bytes(index_bytes)
    if digest != INDEX_SHA256:
        raise InputError(f"{index_path}: SHA-256 {digest} is not the pinned {INDEX_SHA256}")
    index = json.loads(index_bytes)
    if index.get("schema") != INDEX_SCHEMA:
        raise InputError(f"{index_path}: schema must be {INDEX_SCHEMA}")
    recordings: dict[str, Recording] = {}
    for entry in index["records"]:
        path = RECORDINGS_DIR / str(entry["file"])
        data = _read(path)
        actual = sha256_bytes(data)
        if actual != entry["sha256"]:
            raise InputError(f"{path}: SHA-256 {actual} does not match the index")
        recording = _parse_recording(data, entry, path)
        recordings[recording.id] = recording
    return recordings


# -- representations ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SensorFrame:
    """The contract's mapping: world[j] = sensor[axes[j]] * signs[j] * meters_per_unit
    + origin_m[j] for positions; velocities use the same without the origin."""

    axes: tuple[int, int, int]
    signs: tuple[int, int, int]
    origin_m: Vector
    meters_per_unit: float

    def sensor_from_world(self, world: Vector, *, translate: bool) -> list[float]:
        sensor = [0.0, 0.0, 0.0]
        for j in range(3):
            offset = self.origin_m[j] if translate else 0.0
            sensor[self.axes[j]] = (world[j] - offset) / (self.signs[j] * self.meters_per_unit)
        return sensor

    def world_from_sensor(self, sensor: Sequence[float], *, translate: bool) -> Vector:
        world = [sensor[self.axes[j]] * self.signs[j] * self.meters_per_unit
                 + (self.origin_m[j] if translate else 0.0) for j in range(3)]
        return (world[0], world[1], world[2])

    def to_json(self) -> dict[str, JSONValue]:
        return {"axes": list(self.axes), "signs": list(self.signs),
                "origin_m": list(self.origin_m), "meters_per_unit": self.meters_per_unit}


@dataclass(frozen=True, slots=True)
class Clock:
    """elapsed seconds = (tick - origin_tick) * seconds_per_tick."""

    origin_tick: int
    seconds_per_tick: float

    def tick(self, time_s: float) -> float:
        return self.origin_tick + time_s / self.seconds_per_tick

    def elapsed(self, tick: float) -> float:
        return (tick - self.origin_tick) * self.seconds_per_tick

    def to_json(self) -> dict[str, JSONValue]:
        return {"origin_tick": self.origin_tick, "seconds_per_tick": self.seconds_per_tick}


@dataclass(frozen=True, slots=True)
class Variant:
    """How one case presents the seed's recording."""

    case_id: str
    sensor_frame: SensorFrame
    clock: Clock
    omitted_frames: tuple[int, ...]

    def observation(self, frame: Frame) -> dict[str, JSONValue]:
        return {
            "frame": frame.sample,
            "tick": self.clock.tick(frame.time_s),
            "position": self.sensor_frame.sensor_from_world(frame.position_m, translate=True),
            "velocity": self.sensor_frame.sensor_from_world(frame.velocity_m_s, translate=False),
        }


_IDENTITY = SensorFrame((0, 1, 2), (1, 1, 1), (0.0, 0.0, 0.0), 1.0)
_SECONDS = Clock(0, 1.0)
VARIANTS = (
    Variant("world-meters", _IDENTITY, _SECONDS, ()),
    Variant("millimeters-sensor-frame",
            SensorFrame((2, 0, 1), (-1, 1, -1), (1.25, -0.75, 2.5), 0.001),
            Clock(1_000_000, 0.001), ()),
    Variant("centimeters-offset-clock",
            SensorFrame((1, 2, 0), (1, -1, -1), (-1.5, 0.4, 0.75), 0.01),
            Clock(28_800_000, 0.001), ()),
    Variant("incomplete-recording", _IDENTITY, _SECONDS, OMITTED_FRAMES),
)


# -- the oracle --------------------------------------------------------------------------------


def _norm(vector: Sequence[float]) -> float:
    return math.sqrt(sum(component * component for component in vector))


def expected_report(recording: Recording, query_frame: int,
                    omitted_frames: Sequence[int]) -> dict[str, JSONValue]:
    """The report the contract asks for, computed from the source frames in world units.

    Raises ValueError when ``query_frame`` is not among the available frames.
    """
    available = [frame for frame in recording.frames if frame.sample not in omitted_frames]
    query = next((frame for frame in available if frame.sample == query_frame), None)
    if query is None:
        raise ValueError(f"query frame {query_frame} is not available")
    peak = available[0]
    for frame in available[1:]:
        if frame.position_m[2] > peak.position_m[2]:  # strict: the lowest frame wins a tie
            peak = frame
    model = recording.ballistics
    max_error = max(
        _norm([actual - modelled for actual, modelled in
               zip(frame.position_m, model.position(frame.time_s), strict=True)])
        for frame in available
    )
    present = {frame.sample for frame in available}
    return {
        "source_sha256": recording.sha256,
        "frame": query_frame,
        "time_seconds": query.time_s,
        "position_m": list(query.position_m),
        "speed_m_s": _norm(query.velocity_m_s),
        "max_position_error_m": max_error,
        "peak_frame": peak.sample,
        "peak_height_m": peak.position_m[2],
        "missing_frames": [frame for frame in EXPECTED_FRAMES if frame not in present],
    }


# -- case generation ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Case:
    """One generated case of one seed: one review request, one check per dimension."""

    seed: int
    case_id: str
    source_recording: str
    query_frame: int
    request: dict[str, JSONValue]
    expected: dict[str, JSONValue]

    def manifest(self) -> dict[str, Any]:
        """The entry fingerprinted by ``cases_sha256``."""
        return {"seed": self.seed, "id": self.case_id, "source_recording": self.source_recording,
                "query_frame": self.query_frame, "request": self.request,
                "expected": self.expected}


def build_request(recording: Recording, variant: Variant, query_frame: int,
                  order: Sequence[Frame]) -> dict[str, JSONValue]:
    """The ``review`` request presenting ``order`` (the available frames, shuffled)."""
    return {
        "op": "review",
        "query_frame": query_frame,
        "recording": {
            "source": {
                "pack": PACK_ID,
                "path": recording.path,
                "sha256": recording.sha256,
                "engine": recording.engine,
                "engine_version": recording.engine_version,
                "kind": SOURCE_KIND,
            },
            "metadata": {
                "expected_frames": list(EXPECTED_FRAMES),
                "world_from_sensor": variant.sensor_frame.to_json(),
                "clock": variant.clock.to_json(),
                "analytic": recording.ballistics.to_json(),
            },
            "observations": [variant.observation(frame) for frame in order],
        },
    }


def generate_cases(seed: int) -> list[Case]:
    """The four cases of ``seed`` in their fixed order.

    Draw order (part of the contract of this function): the recording (index order), the query
    frame, then one shuffle of the available frames per case, in case order.
    """
    recordings = load_recordings()
    rng = random.Random(seed)
    recording = recordings[rng.choice(list(recordings))]
    query_frame = rng.choice(QUERY_FRAMES)
    cases: list[Case] = []
    for variant in VARIANTS:
        order = [frame for frame in recording.frames if frame.sample not in variant.omitted_frames]
        rng.shuffle(order)
        cases.append(Case(
            seed=seed,
            case_id=variant.case_id,
            source_recording=recording.id,
            query_frame=query_frame,
            request=build_request(recording, variant, query_frame, order),
            expected=expected_report(recording, query_frame, variant.omitted_frames),
        ))
    return cases


def cases_sha256(cases: Sequence[Case]) -> str:
    """SHA-256 of the canonical JSON of the manifests of ``cases`` in execution order."""
    return sha256_json([case.manifest() for case in cases])


# -- checks ------------------------------------------------------------------------------------


def numbers_close(actual: object, expected: float) -> bool:
    """A JSON number (never a boolean) within 1e-6 absolute or 1e-7 relative of ``expected``."""
    if isinstance(actual, bool) or not isinstance(actual, int | float):
        return False
    try:
        value = float(actual)
    except OverflowError:
        return False
    if not math.isfinite(value):
        return False
    difference = abs(value - expected)
    return difference <= ABSOLUTE_TOLERANCE or difference <= RELATIVE_TOLERANCE * abs(expected)


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def field_matches(name: str, actual: object, expected: JSONValue) -> bool:
    """Whether one report field satisfies the contract (``actual`` may be anything)."""
    if name in _INTEGER_FIELDS:
        return _is_integer(actual) and actual == expected
    if name in _NUMBER_FIELDS:
        return numbers_close(actual, expected)
    if name == "position_m":
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            numbers_close(value, target) for value, target in zip(actual, expected, strict=True))
    if name == "missing_frames":
        return isinstance(actual, list) and all(_is_integer(value) for value in actual) \
            and actual == expected
    if name == "source_sha256":
        return isinstance(actual, str) and actual == expected
    raise ValueError(f"unknown report field {name!r}")


@dataclass(frozen=True, slots=True)
class Judgement:
    """The six checks of one response and what made any of them fail."""

    checks: dict[str, bool]
    problems: tuple[str, ...]
    """Wrong report fields by name, ``report keys`` for a wrong key set, or ``envelope``."""


_MISSING = object()


def judge(response: JSONValue, expected: Mapping[str, JSONValue]) -> Judgement:
    """Check ``response`` against the expected report, one dimension at a time.

    Without an ``{"ok": true, "report": {...}}`` envelope nothing can be assessed and every check
    fails; otherwise each field decides its own dimension, and protocol also needs exactly the
    two envelope keys and exactly the report fields.
    """
    report = response.get("report") if isinstance(response, dict) else None
    if not isinstance(response, dict) or response.get("ok") is not True or \
            not isinstance(report, dict):
        return Judgement(dict.fromkeys(DIMENSIONS, False), ("envelope",))
    checks = dict.fromkeys(DIMENSIONS, True)
    problems: list[str] = []
    for name in REPORT_FIELDS:
        if not field_matches(name, report.get(name, _MISSING), expected[name]):
            checks[FIELD_DIMENSIONS[name]] = False
            problems.append(name)
    if set(response) != ENVELOPE_KEYS or set(report) != set(REPORT_FIELDS):
        checks["protocol"] = False
        problems.append("report keys")
    return Judgement(checks, tuple(problems))


# -- running one case --------------------------------------------------------------------------


@runtime_checkable
class _ProcessDiagnostics(Protocol):
    """What a backend's session may expose beyond :class:`Session` for the ``processes`` list."""

    @property
    def exit_code(self) -> int | None: ...

    @property
    def output_bytes(self) -> int: ...


def _truncate(text: str) -> str:
    return text[:MESSAGE_LIMIT]


@dataclass(slots=True)
class CaseOutcome:
    """What running one case established; becomes one entry of ``cases`` in evaluation.json."""

    case: Case
    status: Status = "passed"
    checks: dict[str, bool | None] = field(default_factory=lambda: dict.fromkeys(DIMENSIONS,
                                                                                 True))
    error: str | None = None
    problems: tuple[str, ...] = ()
    transcript_sha256: str = hashlib.sha256().hexdigest()
    trace: list[dict[str, JSONValue]] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def apply(self, judgement: Judgement, response: JSONValue) -> None:
        self.checks = dict(judgement.checks)
        self.problems = judgement.problems
        if all(judgement.checks.values()):
            return
        self.status = "failed"
        if judgement.problems == ("envelope",):
            self.error = _truncate(
                'response is not {"ok": true, "report": {...}}: ' + canonical_json(response))
        else:
            self.error = "wrong report: " + ", ".join(judgement.problems)

    def fault(self, status: Literal["agent_error", "environment_error"], message: str) -> None:
        """A protocol fault fails every check; an environment failure leaves them unassessed."""
        self.status = status
        self.error = message
        self.checks = dict.fromkeys(DIMENSIONS, None if status == "environment_error" else False)

    def record(self, duration_seconds: float, recording_sha256: str | None,
               stderr_tail_limit_bytes: int) -> dict[str, Any]:
        return {
            "seed": self.case.seed,
            "case_id": self.case.case_id,
            "source_recording": self.case.source_recording,
            "query_frame": self.case.query_frame,
            "checks": dict(self.checks),
            "passed": self.passed,
            "status": self.status,
            "error": self.error,
            "problems": list(self.problems),
            "duration_seconds": round(duration_seconds, 6),
            "transcript_sha256": self.transcript_sha256,
            "expected": self.case.expected,
            "trace": list(self.trace),
            "processes": [_process_record(session, stderr_tail_limit_bytes)
                          for session in self.sessions],
            "recording_sha256": recording_sha256,
        }


def _process_record(session: Session, stderr_tail_limit_bytes: int) -> dict[str, Any]:
    exit_code: int | None = None
    output_bytes: int | None = None
    if isinstance(session, _ProcessDiagnostics):
        exit_code = session.exit_code
        output_bytes = session.output_bytes
    return {
        "exit_code": exit_code,
        "output_bytes": output_bytes,
        "stderr_tail": session.stderr_tail(),
        "stderr_tail_limit_bytes": stderr_tail_limit_bytes,
    }


def unassessed_case(case: Case, message: str) -> CaseOutcome:
    """The outcome of a case the infrastructure could not run at all."""
    outcome = CaseOutcome(case)
    outcome.fault("environment_error", message)
    return outcome


def run_case(case: Case, case_run: CaseRun) -> CaseOutcome:
    """One process: send the review request, read one response, close stdin, require exit 0.

    The response is judged when it arrives, but counts only once the process has exited cleanly.
    """
    outcome = CaseOutcome(case)
    session: Session | None = None
    try:
        session = case_run.start_session()
        outcome.sessions.append(session)
        outcome.trace.append({"request": case.request, "response": None})
        response = session.exchange(case.request)
        try:
            pair = canonical_json([case.request, response])
        except (ValueError, TypeError, RecursionError) as error:
            raise AgentFault(NOT_FINITE_JSON) from error
        outcome.trace[-1]["response"] = response
        outcome.transcript_sha256 = hashlib.sha256(pair.encode("ascii")).hexdigest()
        judgement = judge(response, case.expected)
        session.stop_eof()
        session = None
        outcome.apply(judgement, response)
    except AgentFault as fault:
        outcome.fault("agent_error", fault.message)
        _kill_quietly(session, outcome)
    except EnvironmentFailure as failure:
        outcome.fault("environment_error", failure.message)
        _kill_quietly(session, outcome)
    return outcome


def _kill_quietly(session: Session | None, outcome: CaseOutcome) -> None:
    """Kill the session a fault interrupted; a failed kill makes the case unassessed."""
    if session is None:
        return
    try:
        session.kill()
    except EnvironmentFailure as failure:
        outcome.fault("environment_error", failure.message)


# -- scoring -----------------------------------------------------------------------------------
