// qtk compare on a heterogeneous model: the BPU's integers bit for bit, the CPU's float tail within a tolerance;
// and files exported for another march or from another model file are refused.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { Conv2d, Module, Sigmoid } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import {
  npyBytes,
  quantizeForSetup,
  run,
  runQuantize,
  tempDir,
  TinyNet,
  writeCalibBatch,
  writeOnnx,
} from './testing/fixtures.js';

/** Sigmoid, then a 1×1 conv: the sigmoid's float output is quantized for the conv. */
class SigmoidConv extends Module {
  readonly sigmoid = new Sigmoid();
  readonly conv: Conv2d;
  constructor(g: Generator) {
    super();
    this.conv = new Conv2d(1, 2, 1, { generator: g });
  }
  forward(x: Tensor): Tensor {
    return this.conv.call(this.sigmoid.call(x));
  }
}

let dir: string;
let calib: string;
let tiny: string;

const quantize = (out: string, options: Record<string, string | true>) => quantizeForSetup(tiny, calib, out, options);

async function exported(model: string, out: string): Promise<string> {
  const r = await run('export', model, '--out', out);
  if (r.code !== 0) throw new Error(r.stderr);
  return out;
}

beforeAll(() => {
  dir = tempDir();
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(3)));
  calib = writeCalibBatch(dir, [48, 1, 28, 28], new Generator(5));
});

describe('qtk compare, hybrid', () => {
  it('a CPU float tail that onnxruntime rounds differently passes; integers are still compared bit for bit', async () => {
    // the last Linear on the CPU: onnxruntime's float Gemm sums in another order than QTK
    const model = await quantize(join(dir, 'hybrid.qtk'), { march: 'bernoulli2', hybrid: true, 'cpu-nodes': 'fc' });
    const onnx = await exported(model, join(dir, 'hybrid.onnx'));
    const r = await run('compare', model, onnx, '--data', calib);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('outputs:   100.00% identical (48 / 48 samples)');
    expect(r.stdout).toContain('values:    all 6 compared values identical in every batch');
    const floats =
      /^floats: {4}(\d+) float element\(s\) differ within the tolerance \(atol 0\.000001 \+ rtol 0\.00001·\|value\|\), at most ([\d.e-]+) \(node 'fc'\); integers are compared bit for bit$/m.exec(
        r.stdout,
      );
    expect(floats).not.toBeNull();
    expect(Number(floats![1])).toBeGreaterThan(0);
    expect(Number(floats![2])).toBeLessThan(1e-6);

    // bit for bit, the same file differs at the float node, and only there
    const strict = await run('compare', model, onnx, '--data', calib, '--rtol', '0', '--atol', '0');
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/^outputs: {3}\d+\.\d\d% bit-identical/m);
    expect(strict.stdout).toMatch(/^values: {4}first difference at node 'fc' \(Linear, ONNX value 'fc'\): /m);

    const negative = await run('compare', model, onnx, '--data', calib, '--rtol', '-1');
    expect([negative.code, negative.stderr]).toEqual([
      2,
      expect.stringContaining("option '--rtol' must be a number >= 0"),
    ]);
  });

  it('a CPU sigmoid whose float output re-enters the BPU: each node is compared on the inputs the runtime gave it', async () => {
    // onnxruntime's vectorised sigmoid is ~1e-7 off exact far left (QTK's is exact): within atol, and many integer
    // steps of the conv's input scale after it
    const file = writeOnnx(join(dir, 'sig.onnx'), new SigmoidConv(new Generator(4)));
    const data = join(dir, 'sig-data');
    mkdirSync(data);
    const x = rand([16, 1, 28, 28], { low: -18, high: -14, generator: new Generator(6) });
    writeFileSync(join(data, 'x.npy'), npyBytes([16, 1, 28, 28], x.values() as Float32Array));
    const hybrid = join(dir, 'sig-hybrid.qtk');
    const h = await runQuantize(file, data, hybrid, {
      march: 'bernoulli2',
      hybrid: true,
      'cpu-nodes': 'sigmoid',
      'input-scale': 'auto',
    });
    expect(h.code, h.stderr).toBe(0);
    const onnx = await exported(hybrid, join(dir, 'sig-hybrid.onnx'));
    const r = await run('compare', hybrid, onnx, '--data', data);
    expect(r.stderr).toBe('');
    const outputs = /^outputs: {3}[\d.]+% (?:bit-)?identical \((\d+) \/ 16 samples\)$/m.exec(r.stdout);
    expect(outputs, r.stdout).not.toBeNull();
    const same = Number(outputs![1]);
    // node by node, on the runtime's sigmoid values, the quantize and the conv agree bit for bit
    expect(r.stdout).toMatch(/^values: {4}all \d+ compared values identical in every batch$/m);
    if (/^floats: /m.test(r.stdout) && same < 16) {
      expect(r.stdout).toContain(`rounding:  ${16 - same} sample(s) differ end to end`);
      expect(r.code).toBe(1);
    } else expect(r.code).toBe(0);
  });

  it('refuses a file exported for another march, naming both, and one exported from another model file', async () => {
    const bernoulli2 = await quantize(join(dir, 'b2.qtk'), { march: 'bernoulli2' });
    const bayes = await quantize(join(dir, 'bayes.qtk'), { march: 'bayes' });
    const bayesOnnx = await exported(bayes, join(dir, 'bayes.onnx'));
    const r = await run('compare', bernoulli2, bayesOnnx, '--data', calib);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `qtk: error: ${bayesOnnx} was exported from a model for march 'bayes', but ${bernoulli2} is for march 'bernoulli2': ` +
        `their integers cannot agree; compare ${bayesOnnx} with the 'bayes' model file it was exported from, or export ${bernoulli2} ('qtk export ${bernoulli2} --out FILE.onnx') and compare with that\n`,
    );

    // the same march and node names, another calibration: another model file
    const other = await quantize(join(dir, 'bayes-8.qtk'), { march: 'bayes', limit: '8' });
    const o = await run('compare', other, bayesOnnx, '--data', calib);
    expect(o.code).toBe(1);
    expect(o.stderr).toMatch(
      new RegExp(
        `^qtk: error: ${bayesOnnx} was exported from another model file \\(SHA-256 [0-9a-f]{12}…\\) than ${other} \\(SHA-256 [0-9a-f]{12}…\\): compare it with the model file it was exported from`,
      ),
    );
    // its own model file compares
    expect((await run('compare', bayes, bayesOnnx, '--data', calib)).code).toBe(0);
  });
});
