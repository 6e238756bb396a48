// The two tests with workflow-command names fail in the current run.
const test = require('node:test');
const assert = require('node:assert');
test('::error::pwned', () => { assert.fail('::error::boom'); });
test('##[error]legacy', () => { assert.fail('##[warning]boom'); });
test('plain', () => {});
