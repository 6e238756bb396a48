// Both tests pass in the baseline run.
const test = require('node:test');
test('::error::pwned', () => {});
test('##[error]legacy', () => {});
test('plain', () => {});
