"""Regenerate the robot-evidence-review recordings with two real physics engines (maintainers only).

The pack's source data are this project's own simulations of one scene, "ballistic-flight": a
1 kg sphere of radius 0.1 m starts at (0, 0, 1) m with velocity (2, 0, 10) m/s under gravity
(0, 0, -9.81) m/s^2, with no collisions, no drag and no spin. Each engine runs it at 30 frames per
second with 1, 4 and 16 physics substeps per frame (time step 1/(30 * substeps) s) and the state
of every frame 0..60 (0 to 2 s) is written down: six recordings.

The engines are MuJoCo and PyBullet from PyPI. They are not EvalArc dependencies; run this in a
separate virtual environment::

    python3 -m venv /tmp/robot-tools-venv
    /tmp/robot-tools-venv/bin/pip install mujoco pybullet
    /tmp/robot-tools-venv/bin/python packs/robot-evidence-review/tools/make_recordings.py
    /tmp/robot-tools-venv/bin/python packs/robot-evidence-review/tools/make_recordings.py --check

Output: ``recordings/<engine>-<substeps>.json`` (compact canonical JSON, one recording each) and
``recordings/index.json`` (every file's SHA-256, size and provenance). No wall-clock time goes into
either, so the same engines on the same platform give the same bytes; ``--check`` regenerates in
memory and reports any file that would change. After a legitimate change, update
``INDEX_SHA256`` in ``robot_evidence_review.py`` (the grader refuses unpinned data) and the
pack's version.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORDING_SCHEMA = "evalarc.robot-recording.v1"
INDEX_SCHEMA = "evalarc.robot-recording-index.v1"
FPS = 30
LAST_FRAME = 60
SUBSTEPS = (1, 4, 16)
GRAVITY_M_S2 = (0.0, 0.0, -9.81)
POSITION0_M = (0.0, 0.0, 1.0)
VELOCITY0_M_S = (2.0, 0.0, 10.0)
MASS_KG = 1.0
RADIUS_M = 0.1
PACK_DIR = Path(__file__).resolve().parents[1]
RECORDINGS_DIR = PACK_DIR / "recordings"
GENERATOR = "tools/make_recordings.py"

Vector = tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class State:
    """One frame of the body: world position (m) and linear velocity (m/s)."""

    position_m: Vector
    velocity_m_s: Vector


@dataclass(frozen=True, slots=True)
class Simulation:
    """What one engine run produced and how it was configured."""

    states: list[State]
    measured_mass_kg: float
    settings: dict[str, Any]
    """Engine settings, read back from the engine where it reports them, else as set."""


def _vector(values: Sequence[float]) -> Vector:
    return (float(values[0]), float(values[1]), float(values[2]))


def scene() -> dict[str, Any]:
    return {
        "name": "ballistic-flight",
        "gravity_m_s2": list(GRAVITY_M_S2),
        "initial_position_m": list(POSITION0_M),
        "initial_velocity_m_s": list(VELOCITY0_M_S),
        "initial_angular_velocity_rad_s": [0.0, 0.0, 0.0],
        "mass_kg": MASS_KG,
        "radius_m": RADIUS_M,
        "shape": "sphere",
        "collisions": False,
        "drag": False,
    }


# -- MuJoCo ------------------------------------------------------------------------------------

_MJCF = """<mujoco model="ballistic-flight">
  <option timestep="{timestep!r}" gravity="{gx!r} {gy!r} {gz!r}" integrator="Euler"/>
  <worldbody>
    <body name="ball" pos="{px!r} {py!r} {pz!r}">
      <freejoint/>
      <geom type="sphere" size="{radius!r}" mass="{mass!r}" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""


def simulate_mujoco(substeps: int) -> Simulation:
    """Free sphere, explicit (semi-implicit) Euler, contacts off, no air (density 0)."""
    mujoco: Any = importlib.import_module("mujoco")
    timestep = 1.0 / (FPS * substeps)
    xml = _MJCF.format(timestep=timestep, gx=GRAVITY_M_S2[0], gy=GRAVITY_M_S2[1],
                       gz=GRAVITY_M_S2[2], px=POSITION0_M[0], py=POSITION0_M[1],
                       pz=POSITION0_M[2], radius=RADIUS_M, mass=MASS_KG)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qvel[0:3] = VELOCITY0_M_S  # free joint: linear velocity in the world frame first
    data.qvel[3:6] = (0.0, 0.0, 0.0)
    mujoco.mj_forward(model, data)

    def read() -> State:
        return State(_vector(data.qpos[0:3]), _vector(data.qvel[0:3]))

    def advance() -> None:
        for _ in range(substeps):
            mujoco.mj_step(model, data)

    states = _sample(read, advance)
    option = model.opt
    settings = {
        "timestep_s": float(option.timestep),
        "integrator": mujoco.mjtIntegrator(int(option.integrator)).name,
        "gravity_m_s2": list(_vector(option.gravity)),
        "density_kg_m3": float(option.density),
        "viscosity_pa_s": float(option.viscosity),
        "contype": int(model.geom_contype[0]),
        "conaffinity": int(model.geom_conaffinity[0]),
        "steps_per_frame": substeps,
        "mjcf": xml,
    }
    return Simulation(states, float(model.body_mass[1]), settings)


# -- PyBullet ----------------------------------------------------------------------------------


def simulate_pybullet(substeps: int) -> Simulation:
    """One-body multibody sphere in a DIRECT (headless) client, damping removed, collisions off."""
    pybullet: Any = importlib.import_module("pybullet")
    client = pybullet.connect(pybullet.DIRECT)
    try:
        pybullet.setGravity(*GRAVITY_M_S2, physicsClientId=client)
        pybullet.setTimeStep(1.0 / (FPS * substeps), physicsClientId=client)
        shape = pybullet.createCollisionShape(pybullet.GEOM_SPHERE, radius=RADIUS_M,
                                              physicsClientId=client)
        body = pybullet.createMultiBody(baseMass=MASS_KG, baseCollisionShapeIndex=shape,
                                        basePosition=list(POSITION0_M),
                                        physicsClientId=client)
        # Bullet damps every body by default (0.04); the scene has no drag.
        pybullet.changeDynamics(body, -1, linearDamping=0.0, angularDamping=0.0,
                                physicsClientId=client)
        pybullet.setCollisionFilterGroupMask(body, -1, 0, 0, physicsClientId=client)
        pybullet.resetBaseVelocity(body, list(VELOCITY0_M_S), [0.0, 0.0, 0.0],
                                   physicsClientId=client)

        def read() -> State:
            position, _orientation = pybullet.getBasePositionAndOrientation(
                body, physicsClientId=client)
            linear, _angular = pybullet.getBaseVelocity(body, physicsClientId=client)
            return State(_vector(position), _vector(linear))

        def advance() -> None:
            for _ in range(substeps):
                pybullet.stepSimulation(physicsClientId=client)

        states = _sample(read, advance)
        parameters = pybullet.getPhysicsEngineParameters(physicsClientId=client)
        dynamics = pybullet.getDynamicsInfo(body, -1, physicsClientId=client)
        settings = {
            "timestep_s": float(parameters["fixedTimeStep"]),
            "num_sub_steps": int(parameters["numSubSteps"]),
            "num_solver_iterations": int(parameters["numSolverIterations"]),
            "gravity_m_s2": [float(parameters["gravityAccelerationX"]),
                             float(parameters["gravityAccelerationY"]),
                             float(parameters["gravityAccelerationZ"])],
            "linear_damping": 0.0,
            "angular_damping": 0.0,
            "collision_filter_group_mask": [0, 0],
            "use_maximal_coordinates": False,
            "steps_per_frame": substeps,
            "api_version": int(pybullet.getAPIVersion()),
        }
        return Simulation(states, float(dynamics[0]), settings)
    finally:
        pybullet.disconnect(physicsClientId=client)


# -- files -------------------------------------------------------------------------------------


def _sample(read: Callable[[], State], advance: Callable[[], None]) -> list[State]:
    states = [read()]
    for _ in range(LAST_FRAME):
        advance()
        states.append(read())
    return states


@dataclass(frozen=True, slots=True)
class Engine:
    name: str
    package: str
    integrator: str
    simulate: Callable[[int], Simulation]


ENGINES = (
    Engine("mujoco", "mujoco", "semi-implicit Euler (mjINT_EULER)", simulate_mujoco),
    Engine("pybullet", "pybullet", "semi-implicit Euler (btMultiBodyDynamicsWorld)",
           simulate_pybullet),
)


def compact(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=False,
                      separators=(",", ":"))
    return (text + "\n").encode("ascii")


def recording(engine: Engine, substeps: int) -> dict[str, Any]:
    simulation = engine.simulate(substeps)
    frames = [
        {
            "sample": sample,
            # The nominal sample time; the engine took exactly sample * substeps steps of dt_s.
            "time_s": sample / FPS,
            "position_m": list(state.position_m),
            "velocity_m_s": list(state.velocity_m_s),
        }
        for sample, state in enumerate(simulation.states)
    ]
    return {
        "schema": RECORDING_SCHEMA,
        "id": f"{engine.name}-{substeps}",
        "fps": FPS,
        "substeps": substeps,
        "dt_s": 1.0 / (FPS * substeps),
        "scene": scene(),
        "measured_mass_kg": simulation.measured_mass_kg,
        "source": {
            "engine": engine.name,
            "engine_version": importlib.metadata.version(engine.package),
            "integrator": engine.integrator,
            "device": "cpu",
            "precision": "float64",
            "settings": simulation.settings,
            "python": platform.python_version(),
            "numpy": importlib.metadata.version("numpy"),
            "machine": platform.machine(),
            "system": platform.system(),
            "generator": GENERATOR,
        },
        "frames": frames,
    }


def build() -> dict[str, bytes]:
    """Every output file's name and bytes."""
    files: dict[str, bytes] = {}
    entries: list[dict[str, Any]] = []
    for engine in ENGINES:
        for substeps in SUBSTEPS:
            record = recording(engine, substeps)
            name = f"{record['id']}.json"
            data = compact(record)
            files[name] = data
            entries.append({
                "id": record["id"],
                "file": name,
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
                "engine": engine.name,
                "engine_version": record["source"]["engine_version"],
                "device": "cpu",
                "precision": "float64",
                "fps": FPS,
                "substeps": substeps,
                "frames": len(record["frames"]),
            })
    index = {
        "schema": INDEX_SCHEMA,
        "generator": GENERATOR,
        "scene": "ballistic-flight",
        "records": entries,
    }
    files["index.json"] = (json.dumps(index, indent=2, ensure_ascii=True) + "\n").encode("ascii")
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="regenerate in memory and compare with the committed files")
    parser.add_argument("--out", type=Path, default=RECORDINGS_DIR, help="output folder")
    options = parser.parse_args(argv)
    files = build()
    if options.check:
        changed = [name for name, data in files.items()
                   if not (options.out / name).is_file() or (options.out / name).read_bytes()
                   != data]
        for name in changed:
            print(f"differs: {name}", file=sys.stderr)
        print(f"{len(files) - len(changed)} of {len(files)} files identical", file=sys.stderr)
        return 1 if changed else 0
    options.out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (options.out / name).write_bytes(data)
    index_sha256 = hashlib.sha256(files["index.json"]).hexdigest()
    print(f"wrote {len(files)} files to {options.out}; index.json sha256 {index_sha256}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
