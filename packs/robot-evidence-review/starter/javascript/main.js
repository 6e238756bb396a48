'use strict';
// Starting point for the robot-evidence-review task: a JSON-lines review service.
//
// Usage: node main.js
//
// Read TASK.md for the full contract and RUNTIME.md for Node.js notes. This skeleton already
// speaks the protocol (one JSON request per stdin line, one JSON response per stdout line, exit
// 0 when stdin ends) and wraps each report as {ok: true, report: ...}. `review` is not written
// yet, so every request is answered with {ok: false, ...}.

const fs = require('fs');

// TODO: convert every observation into world meters and seconds with the request's metadata
// (world_from_sensor, clock), then compute the report fields TASK.md lists.
function review(request) {
  void request;
  throw new Error('not implemented');
}

function respond(line) {
  try {
    return { ok: true, report: review(JSON.parse(line)) };
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
      // Synchronous write: the response is out before the next request is handled.
      fs.writeSync(1, `${JSON.stringify(respond(line))}\n`);
    }
  });
}

main();
