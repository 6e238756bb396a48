"""Reference solution of the robot-evidence-review task: a JSON-lines review service.

Usage: python main.py

Reads one review request per stdin line and prints one response line per request. Every
observation is converted into world meters and seconds with the request's own metadata; the
report is computed from those converted states only. Standard library only; no state.

The switches below all default to the correct behaviour. Each one, flipped, reproduces one of the
pack's declared faults; graders flip exactly one line to build a negative control.
"""

import json
import math
import sys

USE_UNITS = True  # assume-meters when off: sensor values are taken to be meters already
USE_ORIGIN = True  # ignore-frame-origin when off: positions are not translated
USE_CLOCK = True  # ignore-clock-units when off: the raw tick is taken as elapsed seconds
CHECK_MISSING = True  # assume-complete when off: missing_frames is always empty
FIND_PEAK = True  # last-frame-is-peak when off: the highest frame number present is the peak
PRESERVE_SOURCE = True  # invent-source when off: the digest is reported as 64 zeros


class BadRequest(Exception):
    """The request cannot be reviewed; answered with ok: false."""


def reject_constant(name):
    raise ValueError("non-finite number " + name)


def to_world(sensor, transform, translate):
    """world[j] = sensor[axes[j]] * signs[j] * meters_per_unit (+ origin_m[j] for positions)."""
    scale = transform["meters_per_unit"] if USE_UNITS else 1.0
    world = []
    for j in range(3):
        value = sensor[transform["axes"][j]] * transform["signs"][j] * scale
        if translate and USE_ORIGIN:
            value += transform["origin_m"][j]
        world.append(value)
    return world


def elapsed_seconds(tick, clock):
    if not USE_CLOCK:
        return tick
    return (tick - clock["origin_tick"]) * clock["seconds_per_tick"]


def modelled_position(analytic, time_s):
    """p0 + v0 t + g t^2 / 2, component by component."""
    return [
        p0 + v0 * time_s + 0.5 * g * time_s * time_s
        for p0, v0, g in zip(analytic["position0_m"], analytic["velocity0_m_s"],
                             analytic["gravity_m_s2"])
    ]


def norm(vector):
    return math.sqrt(sum(component * component for component in vector))


def review(request):
    """The report for one review request (raises BadRequest or a lookup error when malformed)."""
    if request.get("op") != "review":
        raise BadRequest("unknown op")
    recording = request["recording"]
    metadata = recording["metadata"]
    transform = metadata["world_from_sensor"]
    states = {}
    for observation in recording["observations"]:
        frame = observation["frame"]
        if frame in states:
            raise BadRequest(f"frame {frame!r} observed twice")
        states[frame] = {
            "time": elapsed_seconds(observation["tick"], metadata["clock"]),
            "position": to_world(observation["position"], transform, True),
            "velocity": to_world(observation["velocity"], transform, False),
        }
    query = request["query_frame"]
    if query not in states:
        raise BadRequest(f"query frame {query!r} was not observed")
    frames = sorted(states)
    analytic = metadata["analytic"]
    max_error = max(
        norm([a - m for a, m in zip(states[f]["position"],
                                    modelled_position(analytic, states[f]["time"]))])
        for f in frames
    )
    if FIND_PEAK:
        peak = frames[0]
        for frame in frames[1:]:
            if states[frame]["position"][2] > states[peak]["position"][2]:
                peak = frame
    else:
        peak = frames[-1]
    if CHECK_MISSING:
        missing = sorted(set(metadata["expected_frames"]) - set(states))
    else:
        missing = []
    state = states[query]
    return {
        "source_sha256": recording["source"]["sha256"] if PRESERVE_SOURCE else "0" * 64,
        "frame": query,
        "time_seconds": state["time"],
        "position_m": state["position"],
        "speed_m_s": norm(state["velocity"]),
        "max_position_error_m": max_error,
        "peak_frame": peak,
        "peak_height_m": states[peak]["position"][2],
        "missing_frames": missing,
    }


def respond(line):
    try:
        request = json.loads(line, parse_constant=reject_constant)
        if not isinstance(request, dict):
            raise BadRequest("request is not an object")
        return {"ok": True, "report": review(request)}
    except (BadRequest, ValueError, LookupError, TypeError) as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        sys.stdout.write(json.dumps(respond(line), allow_nan=False) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
