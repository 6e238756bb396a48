'use strict';
// Support-routing policy (reference solution): routes, notes and, when resolved, closes one
// ticket.
//
// Usage: node main.js
//
// The host sends one observation per stdin line (a "start" observation, then one "tool_result"
// after each tool request) and reads exactly one action per stdout line. The policy reads the
// target ticket, then assigns the queue its category maps to, adds the requested note under the
// fixed idempotency key "review", closes the ticket only if it is resolved, and finishes. A
// retryable error is answered by sending the identical request again (same idempotency key, so
// a note that was already committed is replayed, not duplicated); any other error ends the
// episode. Built-in modules only.
//
// The switches below all default to the correct behaviour. Each one, flipped, reproduces one of
// the pack's declared faults; graders flip exactly one line to build a negative control.

const fs = require('fs');
const readline = require('readline');

const ACK_ONLY = false; // claim-without-actions: finish at once, claiming success
const WRONG_TICKET = false; // wrong-ticket: work on the other ticket id instead of the target
const WRONG_QUEUE = false; // wrong-queue: assign a real queue that is not the category's
const DUPLICATE_NOTE = false; // duplicate-note: add the note a second time under another key
const CLOSE_OPEN = false; // close-unresolved: close the ticket whether or not it is resolved
const SKIP_RETRY = false; // skip-retry: give up at the first retryable error
const NEW_RETRY_KEY = false; // new-key-on-retry: retry add_note under a fresh idempotency key

const REQUEST_ID = 'review';

function tool(name, args) {
  return { tool: name, arguments: args };
}

function finish(message) {
  return message === undefined ? { finish: true } : { finish: true, message };
}

class Policy {
  constructor() {
    this.ticketId = null;
    this.task = null;
    this.pending = [];
    this.last = null;
  }

  act(observation) {
    const action = observation.type === 'start'
      ? this.start(observation.task)
      : this.after(observation.result);
    this.last = action;
    return action;
  }

  start(task) {
    if (ACK_ONLY) {
      return finish('Routed, noted and closed as requested; all checks pass.');
    }
    this.task = task;
    this.ticketId = task.ticket_id;
    if (WRONG_TICKET) {
      this.ticketId = task.ticket_ids.find((id) => id !== task.ticket_id);
    }
    return tool('get_ticket', { ticket_id: this.ticketId });
  }

  after(result) {
    if (result.ok !== true) {
      return this.recover(result.error || {});
    }
    if (this.last.tool === 'get_ticket' && this.pending.length === 0 && 'ticket' in result) {
      this.plan(result.ticket);
    }
    if (this.pending.length === 0) {
      return finish();
    }
    return this.pending.shift();
  }

  plan(ticket) {
    const rules = this.task.routing_rules;
    let queue = rules[ticket.category];
    if (WRONG_QUEUE) {
      queue = Object.values(rules).sort().find((q) => q !== queue);
    }
    const ticketId = this.ticketId;
    const note = this.task.note;
    this.pending.push(tool('assign_queue', { ticket_id: ticketId, queue }));
    this.pending.push(tool('add_note', { ticket_id: ticketId, body: note, request_id: REQUEST_ID }));
    if (DUPLICATE_NOTE) {
      this.pending.push(tool('add_note', {
        ticket_id: ticketId, body: note, request_id: `${REQUEST_ID}-again`,
      }));
    }
    if (ticket.resolved === true || CLOSE_OPEN) {
      this.pending.push(tool('close_ticket', { ticket_id: ticketId }));
    }
  }

  recover(error) {
    if (error.retryable !== true) {
      return finish('Stopped: the ticket service rejected a request.');
    }
    if (SKIP_RETRY) {
      return finish('Could not complete the operation.');
    }
    const retry = JSON.parse(JSON.stringify(this.last));
    if (NEW_RETRY_KEY && retry.tool === 'add_note') {
      retry.arguments.request_id = `${REQUEST_ID}-retry`;
    }
    return retry;
  }
}

function main() {
  const policy = new Policy();
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    const action = policy.act(JSON.parse(line));
    // Synchronous write: the action is out before the next observation is read.
    fs.writeSync(1, `${JSON.stringify(action)}\n`);
  });
}

main();
