'use strict';
// Reference solution of the robot-evidence-review task: a JSON-lines review service.
//
// Usage: node main.js
//
// Reads one review request per stdin line and prints one response line per request. Every
// observation is converted into world meters and seconds with the request's own metadata; the
// report is computed from those converted states only. Built-in modules only; no state.
//
// The switches below all default to the correct behaviour. Each one, flipped, reproduces one of
// the pack's declared faults; graders flip exactly one line to build a negative control.

const fs = require('fs');

const USE_UNITS = true; // assume-meters when off: sensor values are taken to be meters already
const USE_ORIGIN = true; // ignore-frame-origin when off: positions are not translated
const USE_CLOCK = true; // ignore-clock-units when off: the raw tick is taken as elapsed seconds
const CHECK_MISSING = true; // assume-complete when off: missing_frames is always empty
const FIND_PEAK = true; // last-frame-is-peak when off: the highest frame number present is the peak
const PRESERVE_SOURCE = true; // invent-source when off: the digest is reported as 64 zeros

class BadRequest extends Error {}

// world[j] = sensor[axes[j]] * signs[j] * meters_per_unit (+ origin_m[j] for positions).
function toWorld(sensor, transform, translate) {
  const scale = USE_UNITS ? transform.meters_per_unit : 1.0;
  const world = [];
  for (let j = 0; j < 3; j += 1) {
    let value = sensor[transform.axes[j]] * transform.signs[j] * scale;
    if (translate && USE_ORIGIN) {
      value += transform.origin_m[j];
    }
    world.push(value);
  }
  return world;
}

function elapsedSeconds(tick, clock) {
  if (!USE_CLOCK) {
    return tick;
  }
  return (tick - clock.origin_tick) * clock.seconds_per_tick;
}

// p0 + v0 t + g t^2 / 2, component by component.
function modelledPosition(analytic, time) {
  return [0, 1, 2].map((j) => analytic.position0_m[j] + analytic.velocity0_m_s[j] * time
    + 0.5 * analytic.gravity_m_s2[j] * time * time);
}

function norm(vector) {
  return Math.sqrt(vector.reduce((sum, component) => sum + component * component, 0));
}

function requireNumber(value, what) {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new BadRequest(`${what} is not a finite number`);
  }
  return value;
}

function review(request) {
  if (request.op !== 'review') {
    throw new BadRequest('unknown op');
  }
  const recording = request.recording;
  const metadata = recording.metadata;
  const transform = metadata.world_from_sensor;
  const states = new Map();
  for (const observation of recording.observations) {
    const frame = observation.frame;
    if (!Number.isInteger(frame)) {
      throw new BadRequest('frame is not an integer');
    }
    if (states.has(frame)) {
      throw new BadRequest(`frame ${frame} observed twice`);
    }
    states.set(frame, {
      time: elapsedSeconds(requireNumber(observation.tick, 'tick'), metadata.clock),
      position: toWorld(observation.position, transform, true),
      velocity: toWorld(observation.velocity, transform, false),
    });
  }
  const query = request.query_frame;
  if (!states.has(query)) {
    throw new BadRequest(`query frame ${query} was not observed`);
  }
  const frames = [...states.keys()].sort((a, b) => a - b);
  const analytic = metadata.analytic;
  let maxError = 0;
  for (const frame of frames) {
    const state = states.get(frame);
    const modelled = modelledPosition(analytic, state.time);
    maxError = Math.max(maxError, norm(state.position.map((value, j) => value - modelled[j])));
  }
  let peak = frames[frames.length - 1];
  if (FIND_PEAK) {
    peak = frames[0];
    for (const frame of frames.slice(1)) {
      if (states.get(frame).position[2] > states.get(peak).position[2]) {
        peak = frame;
      }
    }
  }
  let missing = [];
  if (CHECK_MISSING) {
    missing = metadata.expected_frames.filter((frame) => !states.has(frame))
      .sort((a, b) => a - b);
  }
  const state = states.get(query);
  return {
    source_sha256: PRESERVE_SOURCE ? recording.source.sha256 : '0'.repeat(64),
    frame: query,
    time_seconds: state.time,
    position_m: state.position,
    speed_m_s: norm(state.velocity),
    max_position_error_m: maxError,
    peak_frame: peak,
    peak_height_m: states.get(peak).position[2],
    missing_frames: missing,
  };
}

function respond(line) {
  try {
    const request = JSON.parse(line);
    if (request === null || typeof request !== 'object' || Array.isArray(request)) {
      throw new BadRequest('request is not an object');
    }
    return { ok: true, report: review(request) };
  } catch (error) {
    return { ok: false, error: `${error.name}: ${error.message}` };
  }
}

function main() {
  let buffered = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() === '') {
        continue;
      }
      // Synchronous write: the response is out before the next request is handled.
      fs.writeSync(1, `${JSON.stringify(respond(line))}\n`);
    }
  });
}

main();
