// One zoo step on a small model, through the qtk command line as the zoo runs it: the fixed-point SQNR it reports
// must be the quantization's, not that of an input scale the samples do not fit.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { npyBytes, TinyNet, tempDir, writeOnnx } from '../apps/cli/src/testing/fixtures.js';
import type { ZooEntry } from './entries.js';
import { marchStep } from './worker-steps.js';

describe('the zoo worker', () => {
  it('calibrates the input scale, so samples beyond [-1, 1] (ImageNet-normalised images) are not clamped', async () => {
    const dir = tempDir();
    const onnx = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(5)));
    const data = join(dir, 'calib');
    mkdirSync(data);
    // the range of the zoo's image samples, (U(0, 1) - mean) / std: -2.1 .. 2.6
    const x = rand([8, 1, 28, 28], { low: -2.1, high: 2.6, generator: new Generator(6) });
    writeFileSync(join(data, 'x.npy'), npyBytes([8, 1, 28, 28], x.values() as Float32Array));
    const entry: ZooEntry = {
      name: 'tiny',
      family: 'test',
      source: 'hand-made',
      corpus: 'pytorch',
      onnx,
      opsets: [{ opset: 17, file: onnx }],
      data,
      batch: 4,
      calibBatch: 8,
      fx: null,
    };
    const r = await marchStep(entry, 'bayes', 'plain', dir);
    expect(r.reason).toBeUndefined();
    expect(r.converted).toBe(true);
    expect(r.warnings).toEqual([]);
    // with the input stub's default scale 1/128, 58 % of these values clamp and the SQNR falls to 4.6 dB
    expect(r.sqnrDb).toBeGreaterThan(30);
    expect(r.bitExact).toBe(true);
  });
});
