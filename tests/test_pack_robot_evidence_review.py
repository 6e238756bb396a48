"""The robot-evidence-review pack without running candidates: manifest, recordings and their
provenance, seeded cases, the contract mapping, the oracle, per-dimension checks, scoring and
workspaces. Values are this pack's (0.2.0, the project's own MuJoCo/PyBullet recordings)."""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import canonical_json
from evalarc.errors import InputError
from evalarc.packs import (
    _apply_fault,
    _workspace_files,
    list_packs,
    load_pack,
    materialize_workspace,
)
from evalarc.runtime.jsonl import encode_request

PACK = load_pack("robot-evidence-review")
GRADER: Any = PACK.grader  # the module itself, for its task-specific helpers
RECORDINGS = PACK.root / "recordings"
CASE_IDS = ["world-meters", "millimeters-sensor-frame", "centimeters-offset-clock",
            "incomplete-recording"]
DIMENSIONS = ["provenance", "coordinates", "clock", "metrics", "completeness", "protocol"]
SEED17_CASES_SHA256 = "789e8a9ef5dda5d3351c93caaebe758dbf0d122ae24aff0787c83cd2f36537c1"
RECORDING_IDS = ["mujoco-1", "mujoco-4", "mujoco-16", "pybullet-1", "pybullet-4", "pybullet-16"]
# Semi-implicit Euler misses the closed-form flight by g * dt * t / 2, largest at t = 2 s.
MAX_ERRORS = {1: 0.3269999999999953, 4: 0.08175000000001886, 16: 0.020437499999925723}


def _expected(seed: int = 17, case: int = 0) -> dict[str, Any]:
    return copy.deepcopy(GRADER.generate_cases(seed)[case].expected)


def _response(report: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "report": report}


def _failing(response: Any, expected: dict[str, Any]) -> list[str]:
    checks = GRADER.judge(response, expected).checks
    assert list(checks) == DIMENSIONS
    return [dimension for dimension, passed in checks.items() if not passed]


def report_from_request(request: dict[str, Any]) -> dict[str, Any]:
    """A third, minimal implementation of the contract, written from TASK.md for these tests."""
    recording = request["recording"]
    metadata = recording["metadata"]
    frame, clock = metadata["world_from_sensor"], metadata["clock"]

    def world(sensor: list[float], translate: bool) -> list[float]:
        return [sensor[frame["axes"][j]] * frame["signs"][j] * frame["meters_per_unit"]
                + (frame["origin_m"][j] if translate else 0.0) for j in range(3)]

    states = {o["frame"]: ((o["tick"] - clock["origin_tick"]) * clock["seconds_per_tick"],
                           world(o["position"], True), world(o["velocity"], False))
              for o in recording["observations"]}
    analytic = metadata["analytic"]

    def error(t: float, position: list[float]) -> float:
        model = [analytic["position0_m"][j] + analytic["velocity0_m_s"][j] * t
                 + 0.5 * analytic["gravity_m_s2"][j] * t * t for j in range(3)]
        return math.dist(position, model)

    peak = min(states, key=lambda f: (-states[f][1][2], f))
    time_s, position, velocity = states[request["query_frame"]]
    return {
        "source_sha256": recording["source"]["sha256"],
        "frame": request["query_frame"],
        "time_seconds": time_s,
        "position_m": position,
        "speed_m_s": math.hypot(*velocity),
        "max_position_error_m": max(error(t, p) for t, p, _ in states.values()),
        "peak_frame": peak,
        "peak_height_m": states[peak][1][2],
        "missing_frames": sorted(set(metadata["expected_frames"]) - set(states)),
    }


# -- pack manifest -----------------------------------------------------------------------------


def test_manifest_identity_dimensions_and_limits() -> None:
    assert (PACK.id, PACK.version, PACK.domain) == (
        "robot-evidence-review", "0.2.0", "physical-ai-evidence")
    assert PACK.task_json() == {"id": "robot-evidence-review", "version": "0.2.0",
                                "domain": "physical-ai-evidence", "split": "public-development"}
    assert PACK.weights() == [("provenance", 0.10), ("coordinates", 0.25), ("clock", 0.15),
                              ("metrics", 0.25), ("completeness", 0.15), ("protocol", 0.10)]
    assert [name for name, _ in PACK.weights()] == list(GRADER.DIMENSIONS)
    assert PACK.default_command == ("{python}", "-I", "-B", "main.py")
    assert PACK.limits.request_limit_bytes == 65536
    assert (PACK.limits.response_timeout, PACK.limits.case_timeout) == (10.0, 60.0)
    assert set(PACK.languages) == {"python", "javascript"}
    assert "robot-evidence-review" in [pack.id for pack in list_packs()]


def test_version_and_its_reason_are_stated_in_the_contract_and_manifest() -> None:
    contract = " ".join(PACK.contract.read_text().split())
    assert "robot-evidence-review 0.2.0" in contract
    assert "Scores from the two versions are not comparable" in contract
    manifest = (PACK.root / "pack.toml").read_text()
    assert "this project's own" in manifest and 'version = "0.2.0"' in manifest


def test_declared_faults_targets_and_expected_outcomes() -> None:
    declared = [(f.name, f.target_dimension, f.expected_seed17_score) for f in PACK.faults]
    assert declared == [
        ("assume-meters", "coordinates", 0.75),
        ("ignore-frame-origin", "coordinates", 0.75),
        ("ignore-clock-units", "clock", 0.8),
        ("assume-complete", "completeness", 0.9625),
        ("last-frame-is-peak", "metrics", 0.75),
        ("invent-source", "provenance", 0.9),
    ]
    assert PACK.fault("assume-complete").expected_seed17_failing == ("incomplete-recording",)


@pytest.mark.parametrize("language", ["python", "javascript"])
@pytest.mark.parametrize("fault", [fault.name for fault in PACK.faults])
def test_each_fault_is_a_one_line_edit_of_the_reference(language: str, fault: str) -> None:
    chosen = PACK.language(language)
    original = _workspace_files(chosen.reference)
    edited = dict(original)
    _apply_fault(PACK.fault(fault), chosen, edited)
    changed = [name for name in original if edited[name] != original[name]]
    assert changed == [chosen.entry]
    before = original[chosen.entry].decode().splitlines()
    after = edited[chosen.entry].decode().splitlines()
    assert len(before) == len(after)
    differing = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert len(differing) == 1
    old, new = differing[0]
    assert ("True" in old and "False" in new) or ("true" in old and "false" in new)


# -- recordings and their provenance -----------------------------------------------------------


def test_index_is_the_pinned_one_and_every_file_matches_it() -> None:
    index_bytes = (RECORDINGS / "index.json").read_bytes()
    assert hashlib.sha256(index_bytes).hexdigest() == GRADER.INDEX_SHA256
    index = json.loads(index_bytes)
    assert index["schema"] == "evalarc.robot-recording-index.v1"
    assert index["generator"] == "tools/make_recordings.py"
    assert [entry["id"] for entry in index["records"]] == RECORDING_IDS
    for entry in index["records"]:
        data = (RECORDINGS / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert len(data) == entry["bytes"]
        engine, substeps = entry["id"].split("-")
        assert (entry["engine"], entry["substeps"], entry["fps"], entry["frames"]) == (
            engine, int(substeps), 30, 61)
        assert (entry["device"], entry["precision"]) == ("cpu", "float64")
    assert sorted(p.name for p in RECORDINGS.iterdir()) == sorted(
        ["index.json", *(f"{name}.json" for name in RECORDING_IDS)])


@pytest.mark.parametrize("recording_id", RECORDING_IDS)
def test_recording_provenance_and_settings(recording_id: str) -> None:
    raw = (RECORDINGS / f"{recording_id}.json").read_bytes()
    # Compact canonical JSON: what tools/make_recordings.py writes, byte for byte.
    record = json.loads(raw)
    assert raw == (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
    engine, substeps_text = recording_id.split("-")
    substeps = int(substeps_text)
    source = record["source"]
    assert record["schema"] == "evalarc.robot-recording.v1"
    assert (record["fps"], record["substeps"], record["dt_s"]) == (30, substeps,
                                                                   1 / (30 * substeps))
    assert source["engine"] == engine
    assert source["engine_version"] == {"mujoco": "4.0.0", "pybullet": "3.2.7"}[engine]
    assert (source["device"], source["precision"]) == ("cpu", "float64")
    assert source["generator"] == "tools/make_recordings.py"
    # Settings as the engine reported them back after configuration.
    settings = source["settings"]
    assert settings["timestep_s"] == record["dt_s"]
    assert settings["steps_per_frame"] == substeps
    assert settings["gravity_m_s2"] == [0.0, 0.0, -9.81]
    if engine == "mujoco":
        assert settings["integrator"] == "mjINT_EULER"
        assert (settings["contype"], settings["conaffinity"]) == (0, 0)
        assert (settings["density_kg_m3"], settings["viscosity_pa_s"]) == (0.0, 0.0)
    else:
        assert (settings["linear_damping"], settings["num_sub_steps"]) == (0.0, 0)
    assert record["measured_mass_kg"] == 1.0
    assert record["scene"] == {
        "name": "ballistic-flight", "gravity_m_s2": [0.0, 0.0, -9.81],
        "initial_position_m": [0.0, 0.0, 1.0], "initial_velocity_m_s": [2.0, 0.0, 10.0],
        "initial_angular_velocity_rad_s": [0.0, 0.0, 0.0], "mass_kg": 1.0, "radius_m": 0.1,
        "shape": "sphere", "collisions": False, "drag": False,
    }
    frames = record["frames"]
    assert [frame["sample"] for frame in frames] == list(range(61))
    assert [frame["time_s"] for frame in frames] == [n / 30 for n in range(61)]


@functools.cache
def _maintainer_script() -> Any:
    """tools/make_recordings.py imports only the standard library until it simulates."""
    path = PACK.root / "tools" / "make_recordings.py"
    name = "robot_evidence_review_make_recordings"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("recording_id", RECORDING_IDS)
def test_recordings_are_what_the_maintainer_script_writes(recording_id: str) -> None:
    tool = _maintainer_script()
    raw = (RECORDINGS / f"{recording_id}.json").read_bytes()
    record = json.loads(raw)
    assert tool.compact(record) == raw
    assert record["scene"] == tool.scene()
    assert (record["schema"], record["source"]["generator"]) == (tool.RECORDING_SCHEMA,
                                                                 tool.GENERATOR)
    assert record["substeps"] in tool.SUBSTEPS and record["fps"] == tool.FPS
    assert record["source"]["engine"] in [engine.name for engine in tool.ENGINES]
    assert tool.RECORDINGS_DIR == RECORDINGS


@pytest.mark.parametrize("recording_id", RECORDING_IDS)
def test_recordings_are_semi_implicit_euler_flights(recording_id: str) -> None:
    """Physics check of the data: x and vx exact, vz falls by g*dt per step, and the departure
    from the closed form is g * dt * t / 2 (the known semi-implicit Euler bias)."""
    recording = GRADER.load_recordings()[recording_id]
    dt = 1 / (30 * recording.substeps)
    for frame in recording.frames:
        t = frame.time_s
        assert frame.position_m[0] == pytest.approx(2 * t, abs=1e-12)
        assert frame.position_m[1] == 0.0 and frame.velocity_m_s[1] == 0.0
        assert frame.velocity_m_s[0] == pytest.approx(2.0, abs=1e-12)
        assert frame.velocity_m_s[2] == pytest.approx(10 - 9.81 * t, abs=1e-9)
        closed_form = 1 + 10 * t - 0.5 * 9.81 * t * t
        assert closed_form - frame.position_m[2] == pytest.approx(9.81 * dt * t / 2, abs=1e-9)
    report = GRADER.expected_report(recording, 28, ())
    assert report["max_position_error_m"] == MAX_ERRORS[recording.substeps]


@pytest.mark.parametrize("substeps", [1, 4, 16])
def test_the_two_engines_recorded_identical_states(substeps: int) -> None:
    recordings = GRADER.load_recordings()
    mujoco, pybullet = recordings[f"mujoco-{substeps}"], recordings[f"pybullet-{substeps}"]
    assert mujoco.frames == pybullet.frames
    assert mujoco.sha256 != pybullet.sha256  # the provenance differs


def test_peak_is_never_a_near_tie() -> None:
    """A transformed representation may move z by ~1e-12; the top two heights are far apart."""
    for recording in GRADER.load_recordings().values():
        heights = sorted((f.position_m[2] for f in recording.frames
                          if f.sample not in GRADER.OMITTED_FRAMES), reverse=True)
        assert heights[0] - heights[1] > 4e-4


def _tampered_copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "recordings"
    shutil.copytree(RECORDINGS, folder)
    data = bytearray((folder / name).read_bytes())
    data[data.index(b"9.81")] = ord("8")
    (folder / name).write_bytes(bytes(data))
    return folder


def test_a_changed_recording_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GRADER, "RECORDINGS_DIR", _tampered_copy(tmp_path, "mujoco-4.json"))
    pattern = r"mujoco-4\.json: SHA-256 [0-9a-f]{64} does not match the index"
    with pytest.raises(InputError, match=pattern):
        GRADER.load_recordings.__wrapped__()


def test_a_changed_index_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "recordings"
    shutil.copytree(RECORDINGS, folder)
    (folder / "index.json").write_text((RECORDINGS / "index.json").read_text() + " ")
    monkeypatch.setattr(GRADER, "RECORDINGS_DIR", folder)
    with pytest.raises(InputError, match="is not the pinned"):
        GRADER.load_recordings.__wrapped__()


# -- seeded cases --------------------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "recording_id", "query_frame"), [
    (17, "pybullet-4", 28), (41, "pybullet-1", 23), (97, "mujoco-4", 29),
])
def test_seed_draws(seed: int, recording_id: str, query_frame: int) -> None:
    cases = GRADER.generate_cases(seed)
    assert {(case.source_recording, case.query_frame) for case in cases} == {
        (recording_id, query_frame)}


def test_seed17_cases_fingerprint_is_stable_and_seed_dependent() -> None:
    assert GRADER.cases_sha256(GRADER.generate_cases(17)) == SEED17_CASES_SHA256
    assert GRADER.cases_sha256(GRADER.generate_cases(17)) == SEED17_CASES_SHA256
    assert GRADER.cases_sha256(GRADER.generate_cases(18)) != SEED17_CASES_SHA256


def test_seeds_0_to_39_use_every_recording() -> None:
    used = {GRADER.generate_cases(seed)[0].source_recording for seed in range(40)}
    assert used == set(RECORDING_IDS)


@pytest.mark.parametrize("seed", [17, 41, 97, 0, -5, 2**80])
def test_per_seed_shape(seed: int) -> None:
    cases = GRADER.generate_cases(seed)
    assert [case.case_id for case in cases] == CASE_IDS
    assert all(case.seed == seed for case in cases)
    sources = {json.dumps(case.request["recording"]["source"], sort_keys=True) for case in cases}
    assert len(sources) == 1  # one source digest per seed
    observations = [case.request["recording"]["observations"] for case in cases]
    assert [len(listed) for listed in observations] == [61, 61, 61, 59]
    for listed in observations:
        frames = [o["frame"] for o in listed]
        assert frames != sorted(frames)  # shuffled
        assert cases[0].query_frame in frames
        assert sorted(frames) == sorted(set(frames))
    assert sorted(o["frame"] for o in observations[3]) == [
        f for f in range(61) if f not in (8, 43)]
    assert [o["frame"] for o in observations[0]] != [o["frame"] for o in observations[3]]
    for case in cases:
        assert case.request["op"] == "review"
        assert case.request["query_frame"] == case.query_frame
        assert set(case.request) == {"op", "query_frame", "recording"}


def test_request_metadata_per_case() -> None:
    metadata = [case.request["recording"]["metadata"] for case in GRADER.generate_cases(41)]
    assert [m["world_from_sensor"] for m in metadata] == [
        {"axes": [0, 1, 2], "signs": [1, 1, 1], "origin_m": [0.0, 0.0, 0.0],
         "meters_per_unit": 1.0},
        {"axes": [2, 0, 1], "signs": [-1, 1, -1], "origin_m": [1.25, -0.75, 2.5],
         "meters_per_unit": 0.001},
        {"axes": [1, 2, 0], "signs": [1, -1, -1], "origin_m": [-1.5, 0.4, 0.75],
         "meters_per_unit": 0.01},
        {"axes": [0, 1, 2], "signs": [1, 1, 1], "origin_m": [0.0, 0.0, 0.0],
         "meters_per_unit": 1.0},
    ]
    assert [m["clock"] for m in metadata] == [
        {"origin_tick": 0, "seconds_per_tick": 1.0},
        {"origin_tick": 1_000_000, "seconds_per_tick": 0.001},
        {"origin_tick": 28_800_000, "seconds_per_tick": 0.001},
        {"origin_tick": 0, "seconds_per_tick": 1.0},
    ]
    for entry in metadata:
        assert entry["expected_frames"] == list(range(61))
        assert entry["analytic"] == {"position0_m": [0.0, 0.0, 1.0],
                                     "velocity0_m_s": [2.0, 0.0, 10.0],
                                     "gravity_m_s2": [0.0, 0.0, -9.81]}


def test_observation_values_in_sensor_units() -> None:
    case = GRADER.generate_cases(17)[1]
    observation = next(o for o in case.request["recording"]["observations"] if o["frame"] == 17)
    assert observation == {"frame": 17, "tick": 1000566.6666666666,
                           "position": [750.0, -2568.454166666668, 116.6666666666658],
                           "velocity": [0.0, -4440.999999999992, -2000.0]}
    # Negative zero survives in sensor velocities where a sign flips a zero component.
    centimeters = GRADER.generate_cases(17)[2]
    velocity = centimeters.request["recording"]["observations"][0]["velocity"]
    assert math.copysign(1.0, velocity[2]) == -1.0 and velocity[2] == 0.0  # world y, sign -1


@pytest.mark.parametrize("seed", [17, 41, 97, 3])
def test_contract_mapping_recovers_the_source_frames(seed: int) -> None:
    cases = GRADER.generate_cases(seed)
    recording = GRADER.load_recordings()[cases[0].source_recording]
    for case in cases:
        metadata = case.request["recording"]["metadata"]
        frame = GRADER.SensorFrame(tuple(metadata["world_from_sensor"]["axes"]),
                                   tuple(metadata["world_from_sensor"]["signs"]),
                                   tuple(metadata["world_from_sensor"]["origin_m"]),
                                   metadata["world_from_sensor"]["meters_per_unit"])
        clock = GRADER.Clock(**metadata["clock"])
        for observation in case.request["recording"]["observations"]:
            source = recording.frames[observation["frame"]]
            assert clock.elapsed(observation["tick"]) == pytest.approx(source.time_s, abs=1e-9)
            assert frame.world_from_sensor(observation["position"], translate=True) == \
                pytest.approx(source.position_m, abs=1e-12)
            assert frame.world_from_sensor(observation["velocity"], translate=False) == \
                pytest.approx(source.velocity_m_s, abs=1e-12)


def test_requests_need_the_64_kib_limit() -> None:
    for case in GRADER.generate_cases(17):
        line = encode_request(case.request, PACK.limits.request_limit_bytes)
        assert 8192 < len(line) < 16384
        with pytest.raises(ValueError, match="exceeds the request limit of 8192 bytes"):
            encode_request(case.request, 8192)


# -- the oracle ----------------------------------------------------------------------------------


def test_seed17_expected_reports() -> None:
    cases = GRADER.generate_cases(17)
    world = cases[0].expected
    assert world == {
        "source_sha256": "9645e52b20efb00c0698aec57003076b06a193813076f8ca108d1a2eacebc144",
        "frame": 28,
        "time_seconds": 0.9333333333333333,
        "position_m": [1.866666666666665, 0.0, 6.022383333333331],
        "speed_m_s": 2.1707915606985355,
        "max_position_error_m": 0.08175000000001886,
        "peak_frame": 30,
        "peak_height_m": 6.054124999999996,
        "missing_frames": [],
    }
    assert cases[1].expected == world and cases[2].expected == world
    assert cases[3].expected == {**world, "missing_frames": [8, 43]}


def test_peak_on_an_exact_tie_is_the_lowest_frame() -> None:
    recording = GRADER.load_recordings()["mujoco-1"]
    top = max(recording.frames, key=lambda f: f.position_m[2])
    tied = list(recording.frames)
    tied[top.sample + 1] = GRADER.Frame(top.sample + 1, tied[top.sample + 1].time_s,
                                        top.position_m, top.velocity_m_s)
    report = GRADER.expected_report(
        GRADER.Recording(**{**{name: getattr(recording, name)
                               for name in recording.__slots__}, "frames": tuple(tied)}),
        28, ())
    assert report["peak_frame"] == top.sample


def test_query_frame_must_be_available() -> None:
    recording = GRADER.load_recordings()["mujoco-1"]
    with pytest.raises(ValueError, match="query frame 8 is not available"):
        GRADER.expected_report(recording, 8, (8, 43))


@pytest.mark.parametrize("seed", [17, 41, 97, 5, 11])
def test_an_independent_implementation_of_the_contract_passes_every_case(seed: int) -> None:
    for case in GRADER.generate_cases(seed):
        report = report_from_request(case.request)
        assert _failing(_response(report), case.expected) == []


def test_expected_values_come_from_the_source_not_the_request() -> None:
    case = GRADER.generate_cases(17)[1]
    corrupted = copy.deepcopy(case.request)
    for observation in corrupted["recording"]["observations"]:
        if observation["frame"] == case.query_frame:
            observation["position"][0] += 50.0  # 5 cm along the sensor's first axis
    recording = GRADER.load_recordings()[case.source_recording]
    assert GRADER.expected_report(recording, case.query_frame, ()) == case.expected
    assert _failing(_response(report_from_request(corrupted)), case.expected) == [
        "coordinates"]


# -- checks --------------------------------------------------------------------------------------


def test_correct_report_passes_every_dimension() -> None:
    expected = _expected()
    judgement = GRADER.judge(_response(copy.deepcopy(expected)), expected)
    assert judgement.checks == dict.fromkeys(DIMENSIONS, True)
    assert judgement.problems == ()


@pytest.mark.parametrize(("field", "value", "dimension"), [
    ("source_sha256", "0" * 64, "provenance"),
    ("source_sha256", "9645E52B20EFB00C0698AEC57003076B06A193813076F8CA108D1A2EACEBC144",
     "provenance"),
    ("time_seconds", 0.9333333333333333 + 1e-3, "clock"),
    ("time_seconds", 933.3333333333333, "clock"),
    ("position_m", [1.866666666666665, 0.0, 6.0224], "coordinates"),
    ("position_m", [1.866666666666665, 0.0], "coordinates"),
    ("position_m", [1866.666666666665, 0.0, 6022.383333333331], "coordinates"),
    ("speed_m_s", 2170.7915606985355, "coordinates"),
    ("max_position_error_m", 0.0, "metrics"),
    ("peak_frame", 60, "metrics"),
    ("peak_height_m", 6054.124999999996, "metrics"),  # the peak left in millimeters
    ("frame", 29, "protocol"),
    ("frame", 28.0, "protocol"),
    ("frame", True, "protocol"),
])
def test_one_wrong_field_fails_only_its_dimension(field: str, value: Any,
                                                  dimension: str) -> None:
    expected = _expected()
    report = copy.deepcopy(expected)
    report[field] = value
    judgement = GRADER.judge(_response(report), expected)
    assert [d for d, passed in judgement.checks.items() if not passed] == [dimension]
    assert judgement.problems == (field,)


@pytest.mark.parametrize("missing", [
    [43, 8], [], [8], [8, 43, 44], [8.0, 43.0], [True, 43], {"8": True, "43": True}, "8,43",
    None, [[8], [43]],
])
def test_missing_frames_must_be_the_exact_sorted_integer_list(missing: Any) -> None:
    expected = _expected(case=3)
    report = {**copy.deepcopy(expected), "missing_frames": missing}
    assert _failing(_response(report), expected) == ["completeness"]


def test_extra_and_absent_keys_fail_protocol() -> None:
    expected = _expected()
    extra = {**copy.deepcopy(expected), "score": 1.0}
    assert _failing(_response(extra), expected) == ["protocol"]
    assert GRADER.judge(_response(extra), expected).problems == ("report keys",)
    beside = {**_response(copy.deepcopy(expected)), "resolved": True}
    assert _failing(beside, expected) == ["protocol"]
    absent = copy.deepcopy(expected)
    del absent["speed_m_s"]
    assert _failing(_response(absent), expected) == ["coordinates", "protocol"]
    assert GRADER.judge(_response(absent), expected).problems == ("speed_m_s", "report keys")


@pytest.mark.parametrize("response", [
    None, [], "ok", {"ok": True}, {"ok": False, "error": "nope"},
    {"ok": 1, "report": {}}, {"ok": True, "report": []},
    {"score": 1, "resolved": True}, {"ok": True, "report": None},
])
def test_without_the_envelope_every_check_fails(response: Any) -> None:
    judgement = GRADER.judge(response, _expected())
    assert judgement.checks == dict.fromkeys(DIMENSIONS, False)
    assert judgement.problems == ("envelope",)


def test_an_envelope_with_a_stale_report_still_fails_its_fields() -> None:
    # ok: true with the report of another case: everything but the shared facts fails.
    expected = _expected(seed=41)
    judgement = GRADER.judge(_response(_expected(seed=17)), expected)
    assert [d for d, passed in judgement.checks.items() if not passed] == [
        "provenance", "coordinates", "clock", "metrics", "protocol"]


@pytest.mark.parametrize("value", [
    True, False, None, "0.5", [0.5], {"value": 0.5}, math.nan, math.inf, -math.inf, 10**400,
    -(10**400),
])
def test_numbers_are_validated_without_crashing(value: Any) -> None:
    assert GRADER.numbers_close(value, 0.5) is False
    expected = _expected()
    report = {**copy.deepcopy(expected), "time_seconds": value}
    assert _failing(_response(report), expected) == ["clock"]


@pytest.mark.parametrize(("actual", "expected", "close"), [
    (0.5 + 0.9e-6, 0.5, True),
    (0.5 - 0.9e-6, 0.5, True),
    (0.5 + 1.1e-6, 0.5, False),
    (1000.0 * (1 + 0.9e-7), 1000.0, True),  # 9e-5 off: outside 1e-6 absolute, inside relative
    (1000.0 * (1 + 1.1e-7), 1000.0, False),
    (2, 2.0, True),
    (0, 0.0, True),
    (-0.0, 0.0, True),
    (1e-7, 0.0, True),
    (2e-6, 0.0, False),
    (-6.054124999999996, 6.054124999999996, False),
])
def test_tolerance_is_absolute_1e6_or_relative_1e7(actual: Any, expected: float,
                                                   close: bool) -> None:
    assert GRADER.numbers_close(actual, expected) is close


def test_field_dimension_map_covers_the_report_once() -> None:
    assert list(GRADER.FIELD_DIMENSIONS) == [
        "source_sha256", "frame", "time_seconds", "position_m", "speed_m_s",
        "max_position_error_m", "peak_frame", "peak_height_m", "missing_frames"]
    assert set(GRADER.FIELD_DIMENSIONS.values()) == set(DIMENSIONS)
    with pytest.raises(ValueError, match="unknown report field"):
        GRADER.field_matches("score", 1, 1)


# -- outcomes and scoring ------------------------------------------------------------------------


def _records(statuses: dict[str, str] | None = None, failing: dict[str, list[str]] | None = None,
             seeds: tuple[int, ...] = (17,)) -> list[dict[str, Any]]:
    """Case records for every case of ``seeds``: by default all passed; ``failing`` maps a case
    id to the dimensions its response got wrong, ``statuses`` to a protocol or environment
    fault."""
    records = []
    for seed in seeds:
        for case in GRADER.generate_cases(seed):
            outcome = GRADER.CaseOutcome(case)
            wrong = (failing or {}).get(case.case_id, [])
            if wrong:
                checks = {dimension: dimension not in wrong for dimension in DIMENSIONS}
                outcome.apply(GRADER.Judgement(checks, tuple(wrong)), {"ok": True})
            status = (statuses or {}).get(case.case_id)
            if status is not None:
                outcome.fault(status, "boom")
            records.append(outcome.record(0.0, None, 2048))
    return records


def test_scoring_all_passed_is_resolved() -> None:
    summary = GRADER.summarize(_records(seeds=(17, 41)), PACK.weights())
    assert (summary["valid"], summary["status"], summary["score"], summary["resolved"]) == (
        True, "passed", 1.0, True)
    assert summary["dimensions"]["completeness"] == {
        "passed": 8, "total": 8, "assessed": 8, "weight": 0.15, "score": 1.0}


def test_scoring_assume_complete_is_high_but_unresolved() -> None:
    records = _records(failing={"incomplete-recording": ["completeness"]}, seeds=(17, 41))
    summary = GRADER.summarize(records, PACK.weights())
    assert summary["score"] == 0.9625
    assert (summary["valid"], summary["status"], summary["resolved"]) == (True, "failed", False)
    assert summary["dimensions"]["completeness"]["passed"] == 6
    assert all(group["score"] == 1.0 for name, group in summary["dimensions"].items()
               if name != "completeness")


def test_scoring_clock_and_metrics_faults() -> None:
    both = ["clock", "metrics"]
    records = _records(failing={"millimeters-sensor-frame": both,
                                "centimeters-offset-clock": both})
    assert GRADER.summarize(records, PACK.weights())["score"] == 0.8


def test_an_agent_error_fails_every_check_of_its_case() -> None:
    records = _records(statuses={"world-meters": "agent_error"})
    assert records[0]["checks"] == dict.fromkeys(DIMENSIONS, False)
    assert records[0]["status"] == "agent_error" and records[0]["passed"] is False
    summary = GRADER.summarize(records, PACK.weights())
    assert summary["score"] == 0.75 and summary["valid"] is True


def test_one_environment_error_invalidates_the_evaluation() -> None:
    records = _records(statuses={"centimeters-offset-clock": "environment_error"})
    assert records[2]["checks"] == dict.fromkeys(DIMENSIONS, None)
    summary = GRADER.summarize(records, PACK.weights())
    assert (summary["valid"], summary["status"], summary["score"], summary["resolved"]) == (
        False, "environment_error", None, False)
    assert summary["dimensions"]["clock"] == {
        "passed": 3, "total": 4, "assessed": 3, "weight": 0.15, "score": 1.0}


def test_self_reported_score_scores_zero() -> None:
    records = []
    for case in GRADER.generate_cases(17):
        outcome = GRADER.CaseOutcome(case)
        response = {"score": 1, "resolved": True}
        outcome.apply(GRADER.judge(response, case.expected), response)
        records.append(outcome.record(0.0, None, 2048))
    summary = GRADER.summarize(records, PACK.weights())
    assert summary["score"] == 0.0 and summary["resolved"] is False
    assert records[0]["error"] == ('response is not {"ok": true, "report": {...}}: '
                                   '{"resolved": true, "score": 1}')


def test_case_record_fields() -> None:
    case = GRADER.generate_cases(17)[3]
    outcome = GRADER.CaseOutcome(case)
    checks = dict.fromkeys(DIMENSIONS, True) | {"completeness": False}
    outcome.apply(GRADER.Judgement(checks, ("missing_frames",)), {"ok": True})
    record = outcome.record(1.23456789, "ab" * 32, 2048)
    assert list(record) == ["seed", "case_id", "source_recording", "query_frame", "checks",
                            "passed", "status", "error", "problems", "duration_seconds",
                            "transcript_sha256", "expected", "trace", "processes",
                            "recording_sha256"]
    assert (record["status"], record["passed"], record["error"]) == (
        "failed", False, "wrong report: missing_frames")
    assert record["duration_seconds"] == 1.234568
    assert record["expected"]["missing_frames"] == [8, 43]
    assert record["transcript_sha256"] == hashlib.sha256().hexdigest()
    canonical_json(record)


def test_unassessed_case() -> None:
    outcome = GRADER.unassessed_case(GRADER.generate_cases(17)[0], "docker went away")
    record = outcome.record(0.0, None, 2048)
    assert (record["status"], record["error"]) == ("environment_error", "docker went away")
    assert set(record["checks"].values()) == {None}


# -- workspaces ----------------------------------------------------------------------------------


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_python_starter_workspace(tmp_path: Path) -> None:
    written = materialize_workspace(PACK.id, "python", reference=False, fault=None,
                                    dest=tmp_path / "ws")
    assert written == ["TASK.md", "main.py"]
    tree = _tree(tmp_path / "ws")
    assert tree["TASK.md"] == PACK.contract.read_bytes()
    assert b'raise NotImplementedError("not implemented")' in tree["main.py"]


def test_javascript_reference_workspace(tmp_path: Path) -> None:
    written = materialize_workspace(PACK.id, "javascript", reference=True, fault=None,
                                    dest=tmp_path / "ws")
    assert written == ["RUNTIME.md", "TASK.md", "evalarc.toml", "main.js"]
    assert (tmp_path / "ws" / "evalarc.toml").read_text().strip() == 'command = ["node", "main.js"]'
