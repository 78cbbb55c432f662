import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { describeNeeding } from '../../../scripts/needs-system.js';
import { runNodeTest } from './testing/node-tests.js';

const listFile = fileURLToPath(new URL('../conformance/node-tests.txt', import.meta.url));
const dirs = readFileSync(listFile, 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

describeNeeding('onnx-testdata', 'ONNX backend node tests', () => {
  it(`passes all ${dirs.length} listed node tests (rtol 1e-3, atol 1e-7)`, () => {
    const failures = dirs.map((d) => runNodeTest(d)).filter((r) => !r.ok);
    expect(failures.map((f) => `${f.dir}: ${f.message}`)).toEqual([]);
  });

  it('passes them again with the weight inputs as initializers (Conv2d, BatchNorm2d, Linear, ... modules)', () => {
    const failures = dirs.map((d) => runNodeTest(d, { weightsAsInitializers: true })).filter((r) => !r.ok);
    expect(failures.map((f) => `${f.dir}: ${f.message}`)).toEqual([]);
  });
});
