// The zoo's slice in CI: for each model family of the zoo, a tiny PyTorch-exported ONNX file of the ops it
// brought (zoo/slice/make_slice.py). Each must import (QTK's float output = onnxruntime's), convert with --hybrid
// on both marches, and export bit-exact (qtk compare), through the qtk command line's functions.
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serializeNpy } from '@qtk/nn';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { readOnnxFile } from '../apps/cli/src/onnx-file.js';
import { run, tempDir } from '../apps/cli/src/testing/fixtures.js';

const SLICE = join(__dirname, 'slice');
const FILES = readdirSync(SLICE)
  .filter((f) => f.endsWith('.onnx'))
  .sort();
const MARCHES = ['bayes', 'bernoulli2'] as const;
const SAMPLES = 4;

let dir: string;
beforeAll(() => {
  dir = tempDir();
});

/** DIR/x.npy with SAMPLES seeded samples in [-1, 1] of the file's input shape (batch dim free). */
function samplesFor(file: string): string {
  const data = join(dir, file.replace('.onnx', ''));
  mkdirSync(data, { recursive: true });
  const shape = readOnnxFile(join(SLICE, file)).inputs[0]!.shape!.map((d, i) => (i === 0 ? SAMPLES : d!));
  const x = rand(shape, { low: -1, high: 1, generator: new Generator(7) });
  writeFileSync(join(data, 'x.npy'), serializeNpy(shape, x.values() as Float32Array));
  return data;
}

describe.each(FILES)('zoo slice %s', (file) => {
  const model = join(SLICE, file);
  let data: string;
  beforeAll(() => {
    data = samplesFor(file);
  });

  it(`${file} import`, async () => {
    const r = await run('eval', model, '--data', data, '--reference', model, '--engine', 'qtk', '--json');
    expect(r.stderr.split('\n').filter((l) => l.startsWith('qtk: '))).toEqual([]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as { outputs: { maxAbsError: number; referenceMaxAbs: number }[] };
    for (const o of j.outputs) expect(o.maxAbsError).toBeLessThanOrEqual(1e-4 * o.referenceMaxAbs);
  });

  for (const march of MARCHES) {
    it(`${file} ${march} --hybrid, export bit-exact`, async () => {
      const out = join(data, `${march}.qtk`);
      const q = await run('quantize', model, '--calib', data, '--march', march, '--hybrid', '--out', out);
      expect(q.stderr.split('\n').filter((l) => l.startsWith('qtk: error'))).toEqual([]);
      expect(q.code).toBe(0);
      const onnx = join(data, `${march}.onnx`);
      const x = await run('export', out, '--out', onnx);
      expect(x.stderr).toBe('');
      expect(x.code).toBe(0);
      const c = await run('compare', out, onnx, '--data', data);
      expect(c.code).toBe(0);
    });
  }
});
