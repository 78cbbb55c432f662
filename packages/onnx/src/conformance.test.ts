import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { describeNeeding } from '../../../scripts/needs-system.js';
import { runNodeTest } from './testing/node-tests.js';

function listed(file: string): string[] {
  return readFileSync(fileURLToPath(new URL(`../conformance/${file}`, import.meta.url)), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

const dirs = listed('node-tests.txt');
// beside data/node in the test data: whole PyTorch modules (nn.PReLU, nn.InstanceNorm, torch.max, repeat, ...)
const torchDirs = listed('pytorch-tests.txt').map((d) => `../${d}`);

describeNeeding('onnx-testdata', 'ONNX backend node tests', () => {
  it(`passes all ${dirs.length} listed node tests (rtol 1e-3, atol 1e-7)`, () => {
    const failures = dirs.map((d) => runNodeTest(d)).filter((r) => !r.ok);
    expect(failures.map((f) => `${f.dir}: ${f.message}`)).toEqual([]);
  });

  it('passes them again with the weight inputs as initializers (Conv2d, BatchNorm2d, Linear, ... modules)', () => {
    const failures = dirs.map((d) => runNodeTest(d, { weightsAsInitializers: true })).filter((r) => !r.ok);
    expect(failures.map((f) => `${f.dir}: ${f.message}`)).toEqual([]);
  });

  it(`passes all ${torchDirs.length} listed pytorch-converted and pytorch-operator models`, () => {
    expect(torchDirs.length).toBeGreaterThan(100);
    const failures = torchDirs.map((d) => runNodeTest(d)).filter((r) => !r.ok);
    expect(failures.map((f) => `${f.dir}: ${f.message}`)).toEqual([]);
  });
});
