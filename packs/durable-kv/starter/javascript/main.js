'use strict';
// Starting point for the durable-kv task: a key-value service over JSON lines.
//
// Usage: node main.js STATE_FILE
//
// Read TASK.md for the full contract and RUNTIME.md for Node.js notes. This skeleton already
// speaks the protocol (one JSON request per stdin line, one JSON response per stdout line) but
// implements no operation: it answers every request with invalid_request. Replace `handle` with
// a real, durable store.

const fs = require('fs');

const INVALID = { ok: false, error: 'invalid_request' };

// TODO: implement put / get / delete / cas / batch as TASK.md describes, keeping acknowledged
// changes in `stateFile` so they survive a restart and a SIGKILL after the response.
function handle(stateFile, request) {
  void stateFile;
  void request;
  return INVALID;
}

function main(argv) {
  if (argv.length !== 1) {
    process.stderr.write('usage: node main.js STATE_FILE\n');
    process.exitCode = 2;
    return;
  }
  let buffered = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      let response;
      try {
        response = handle(argv[0], JSON.parse(line));
      } catch (error) {
        response = INVALID;
      }
      // Synchronous write: the response is out before the next request is read.
      fs.writeSync(1, JSON.stringify(response) + '\n');
    }
  });
}

main(process.argv.slice(2));
