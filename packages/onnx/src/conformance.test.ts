import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NODE_TEST_ROOT, runNodeTest } from './testing/node-tests.js';

const listFile = fileURLToPath(new URL('../conformance/node-tests.txt', import.meta.url));
const dirs = readFileSync(listFile, 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

describe('ONNX backend node tests', () => {
  it(`finds the test data (${NODE_TEST_ROOT}; set QTK_ONNX_NODE_TESTS to override; apt-get install libonnx-testdata)`, () => {
    expect(existsSync(NODE_TEST_ROOT)).toBe(true);
  });

  it(`passes all ${dirs.length} listed node tests (rtol 1e-3, atol 1e-7)`, () => {
    const failures = dirs.map((d) => runNodeTest(d)).filter((r) => !r.ok);
    expect(failures.map((f) => `${f.dir}: ${f.message}`)).toEqual([]);
  });

  it('passes them again with the weight inputs as initializers (Conv2d, BatchNorm2d, Linear, ... modules)', () => {
    const failures = dirs.map((d) => runNodeTest(d, { weightsAsInitializers: true })).filter((r) => !r.ok);
    expect(failures.map((f) => `${f.dir}: ${f.message}`)).toEqual([]);
  });
});
