'use strict';
// Starting point for the support-routing task: a ticket-handling policy over JSON lines.
//
// Usage: node main.js
//
// Read TASK.md for the full contract and RUNTIME.md for Node.js notes. This skeleton already
// speaks the protocol (one observation per stdin line, one action per stdout line) but does no
// work: it finishes at the first observation, so every episode leaves the tickets untouched.
// Replace `act` with a real policy.

const fs = require('fs');
const readline = require('readline');

// TODO: read the target ticket, assign the queue its category maps to, add the note exactly
// once, close the ticket only if it is resolved, retry retryable errors safely, then finish.
function act(observation) {
  void observation;
  return { finish: true, message: 'Not implemented.' };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  fs.writeSync(1, `${JSON.stringify(act(JSON.parse(line)))}\n`);
});
