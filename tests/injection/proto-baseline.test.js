// Both tests pass in the baseline run.
const test = require('node:test');
test('__proto__', () => {});
test('constructor', () => {});
