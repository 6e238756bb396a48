'use strict';
// Durable key-value service speaking the durable-kv JSON-lines protocol (reference solution).
//
// Usage: node main.js STATE_FILE
//
// One JSON request per stdin line, one JSON response per stdout line. The whole store lives in
// STATE_FILE as a JSON array of [key, value] pairs. Every change is written to a side file,
// fsynced, renamed over STATE_FILE and the folder fsynced *before* it is acknowledged, so an
// acknowledged change survives a clean exit and a SIGKILL right after the acknowledgement.
// Node.js built-ins only (no sqlite module before Node 22.5, so no database).
//
// JSON numbers keep their source text: integers compare as BigInt (exact at any size) and
// decimals as doubles, and an integer never equals a decimal (1 != 1.0) or a boolean.
//
// The switches below all default to the correct behaviour. Each one, flipped, reproduces one of
// the pack's declared faults; graders flip exactly one line to build a negative control.

const fs = require('fs');
const path = require('path');

const ACK_ONLY = false; // ack-without-work: answer {"ok":true} to everything and do nothing
const DURABLE = true; // memory-only when false: never read or write the state file
const ATOMIC_BATCH = true; // partial-batch when false: apply children until the first invalid one
const ENFORCE_CAS = true; // cas-always-wins when false: every compare-and-swap writes
const TYPE_SENSITIVE = true; // boolean-equals-one when false: compare with loose equality
const DELETE_ENABLED = true; // delete-noop when false: deletes are acknowledged and ignored
const VALIDATE_KEYS = true; // accept-nonstring-keys when false: scalar keys (5, true, null) are used
const COMMIT_BEFORE_ACK = true; // commit-on-exit when false: state is written once at end of input

const OK = '{"ok":true}';
const INVALID = '{"ok":false,"error":"invalid_request"}';

class InvalidRequest extends Error {}

// A JSON number with its source text.
class Num {
  constructor(text) {
    this.text = text;
    this.decimal = /[.eE]/.test(text);
    if (this.decimal) {
      this.value = Number(text);
      if (!Number.isFinite(this.value)) throw new InvalidRequest('non-finite number');
    } else {
      this.value = BigInt(text);
    }
  }
}

// ---- JSON text -> values (objects become Maps, numbers Num) --------------------------------

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

function parseJson(text) {
  let at = 0;
  const fail = () => { throw new InvalidRequest('invalid JSON at ' + at); };
  const skip = () => { WHITESPACE.lastIndex = at; WHITESPACE.exec(text); at = WHITESPACE.lastIndex; };
  const literal = (word, value) => {
    if (text.startsWith(word, at)) { at += word.length; return value; }
    return fail();
  };
  function string() {
    at += 1; // opening quote
    let out = '';
    for (;;) {
      const ch = text[at];
      if (ch === undefined || ch < ' ') fail();
      if (ch === '"') { at += 1; return out; }
      if (ch !== '\\') { out += ch; at += 1; continue; }
      const esc = text[at + 1];
      at += 2;
      switch (esc) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const hex = text.slice(at, at + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail();
          out += String.fromCharCode(parseInt(hex, 16));
          at += 4;
          break;
        }
        default: fail();
      }
    }
  }
  function value() {
    skip();
    const ch = text[at];
    if (ch === '{') {
      at += 1;
      const map = new Map();
      skip();
      if (text[at] === '}') { at += 1; return map; }
      for (;;) {
        skip();
        if (text[at] !== '"') fail();
        const key = string();
        skip();
        if (text[at] !== ':') fail();
        at += 1;
        map.set(key, value());
        skip();
        if (text[at] === ',') { at += 1; continue; }
        if (text[at] === '}') { at += 1; return map; }
        fail();
      }
    }
    if (ch === '[') {
      at += 1;
      const list = [];
      skip();
      if (text[at] === ']') { at += 1; return list; }
      for (;;) {
        list.push(value());
        skip();
        if (text[at] === ',') { at += 1; continue; }
        if (text[at] === ']') { at += 1; return list; }
        fail();
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true', true);
    if (ch === 'f') return literal('false', false);
    if (ch === 'n') return literal('null', null);
    NUMBER.lastIndex = at;
    const match = NUMBER.exec(text);
    if (match === null || match[0] === '') fail();
    at = NUMBER.lastIndex;
    return new Num(match[0]);
  }
  const result = value();
  skip();
  if (at !== text.length) fail();
  return result;
}

// ---- values -> JSON text --------------------------------------------------------------------

function toJson(value) {
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Num) return value.text;
  if (Array.isArray(value)) return '[' + value.map(toJson).join(',') + ']';
  const parts = [];
  for (const [key, item] of value) parts.push(JSON.stringify(key) + ':' + toJson(item));
  return '{' + parts.join(',') + '}';
}

// ---- equality -------------------------------------------------------------------------------

function strictEqual(a, b) {
  if (a instanceof Num || b instanceof Num) {
    if (!(a instanceof Num && b instanceof Num) || a.decimal !== b.decimal) return false;
    return a.decimal ? Object.is(a.value, b.value) : a.value === b.value;
  }
  return containersEqual(a, b, strictEqual);
}

function looseScalar(value) {
  if (value instanceof Num) return Number(value.value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

function looseEqual(a, b) {
  const left = looseScalar(a);
  const right = looseScalar(b);
  if (typeof left === 'number' && typeof right === 'number') return left == right; // eslint-disable-line eqeqeq
  return containersEqual(left, right, looseEqual);
}

function containersEqual(a, b, equal) {
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!(Array.isArray(a) && Array.isArray(b)) || a.length !== b.length) return false;
    return a.every((item, index) => equal(item, b[index]));
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    for (const [key, item] of a) {
      if (!b.has(key) || !equal(item, b.get(key))) return false;
    }
    return true;
  }
  return a === b;
}

const valuesEqual = TYPE_SENSITIVE ? strictEqual : looseEqual;

// ---- durable state --------------------------------------------------------------------------

class Store {
  constructor(file) {
    this.file = path.resolve(file);
    this.data = DURABLE ? load(this.file) : new Map();
  }

  // Make `next` the durable state; nothing is acknowledged before this returns.
  commit(next) {
    this.data = next;
    if (DURABLE && COMMIT_BEFORE_ACK) save(this.file, next);
  }

  close() {
    if (DURABLE && !COMMIT_BEFORE_ACK) save(this.file, this.data);
  }
}

function load(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return new Map();
    throw error;
  }
  const pairs = parseJson(text);
  const data = new Map();
  if (!Array.isArray(pairs)) throw new Error(`${file}: state is not an array of pairs`);
  for (const pair of pairs) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || data.has(pair[0])) {
      throw new Error(`${file}: state holds a malformed or repeated pair`);
    }
    data.set(pair[0], pair[1]);
  }
  return data;
}

function save(file, data) {
  const pending = file + '.pending';
  const entries = [];
  for (const [key, value] of data) entries.push('[' + JSON.stringify(key) + ',' + toJson(value) + ']');
  const bytes = Buffer.from('[' + entries.join(',') + ']\n', 'utf8');
  const fd = fs.openSync(pending, 'w', 0o600);
  try {
    let written = 0;
    while (written < bytes.length) written += fs.writeSync(fd, bytes, written);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(pending, file);
  const dir = fs.openSync(path.dirname(file), 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
}

// ---- requests -------------------------------------------------------------------------------

function keyOf(request) {
  const key = request.get('key');
  if (typeof key === 'string') return key;
  if (!VALIDATE_KEYS && (key === null || key === undefined || typeof key === 'boolean' || key instanceof Num)) {
    return key === undefined ? 'null' : toJson(key);
  }
  throw new InvalidRequest('key must be a string');
}

function checkBatchElement(element) {
  if (!(element instanceof Map)) throw new InvalidRequest('batch element must be an object');
  const op = element.get('op');
  if (op !== 'put' && op !== 'delete') throw new InvalidRequest('batch element op');
  keyOf(element);
  if (op === 'put' && !element.has('value')) throw new InvalidRequest('put needs a value');
}

function applyElement(next, element) {
  if (element.get('op') === 'put') next.set(keyOf(element), element.get('value'));
  else if (DELETE_ENABLED) next.delete(keyOf(element));
}

function runBatch(store, request) {
  const operations = request.get('operations');
  if (!Array.isArray(operations)) throw new InvalidRequest('operations must be an array');
  const next = new Map(store.data);
  if (!ATOMIC_BATCH) {
    for (const element of operations) {
      try {
        checkBatchElement(element);
      } catch (error) {
        store.commit(next); // keeps the children already applied: the fault
        throw error;
      }
      applyElement(next, element);
    }
    store.commit(next);
    return OK;
  }
  operations.forEach(checkBatchElement);
  for (const element of operations) applyElement(next, element);
  store.commit(next);
  return OK;
}

function handle(store, request) {
  if (!(request instanceof Map)) throw new InvalidRequest('request must be an object');
  const op = request.get('op');
  if (op === 'batch') return runBatch(store, request);
  if (op !== 'put' && op !== 'get' && op !== 'delete' && op !== 'cas') throw new InvalidRequest('unknown op');
  const key = keyOf(request);
  if (op === 'get') {
    if (!store.data.has(key)) return '{"ok":true,"found":false}';
    return '{"ok":true,"found":true,"value":' + toJson(store.data.get(key)) + '}';
  }
  if (op === 'delete') {
    if (DELETE_ENABLED && store.data.has(key)) {
      const next = new Map(store.data);
      next.delete(key);
      store.commit(next);
    }
    return OK;
  }
  if (!request.has('value')) throw new InvalidRequest('missing value');
  if (op === 'put') {
    store.commit(new Map(store.data).set(key, request.get('value')));
    return OK;
  }
  if (!request.has('expected')) throw new InvalidRequest('missing expected');
  const swap = !ENFORCE_CAS || (store.data.has(key) && valuesEqual(store.data.get(key), request.get('expected')));
  if (!swap) return '{"ok":true,"swapped":false}';
  store.commit(new Map(store.data).set(key, request.get('value')));
  return '{"ok":true,"swapped":true}';
}

function respond(text) {
  const bytes = Buffer.from(text + '\n', 'utf8');
  let written = 0;
  while (written < bytes.length) written += fs.writeSync(1, bytes, written);
}

function answer(store, line) {
  if (ACK_ONLY) return OK;
  let request;
  try {
    request = parseJson(new TextDecoder('utf-8', { fatal: true }).decode(line));
  } catch (error) {
    if (error instanceof InvalidRequest || error instanceof TypeError || error instanceof RangeError) return INVALID;
    throw error;
  }
  try {
    return handle(store, request);
  } catch (error) {
    if (error instanceof InvalidRequest) return INVALID;
    throw error; // storage failures crash the service: never acknowledge a failed write
  }
}

function main(argv) {
  if (argv.length !== 1) {
    process.stderr.write('usage: node main.js STATE_FILE\n');
    process.exitCode = 2;
    return;
  }
  const store = new Store(argv[0]);
  let buffered = Buffer.alloc(0);
  process.stdin.on('data', (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    let newline;
    while ((newline = buffered.indexOf(0x0a)) >= 0) {
      const line = buffered.subarray(0, newline);
      buffered = buffered.subarray(newline + 1);
      respond(answer(store, line));
    }
  });
  process.stdin.on('end', () => {
    store.close();
    process.exitCode = 0;
  });
}

main(process.argv.slice(2));
