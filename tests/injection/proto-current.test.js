// `__proto__` fails in the current run.
const test = require('node:test');
const assert = require('node:assert');
test('__proto__', () => { assert.fail('prototype pollution'); });
test('constructor', () => {});
