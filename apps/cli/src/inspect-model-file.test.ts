// qtk inspect MODEL.qtk: the model file's kind, march, meta, graph and scales.
import '@qtk/march-bayes';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calibrate, prepareQatFx } from '@qtk/core';
import { loadModelFileSync, saveModelFileSync } from '@qtk/core/node';
import { getDefaultQatQconfig } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { PoolScores, quantizeForSetup, run, tempDir, TinyNet, writeCalibBatch, writeOnnx } from './testing/fixtures.js';

let dir: string;
let fixedPath: string;

beforeAll(async () => {
  dir = tempDir();
  const tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(3)));
  const calib = writeCalibBatch(dir, [16, 1, 28, 28], new Generator(5));
  fixedPath = await quantizeForSetup(tiny, calib, join(dir, 'tiny.qtk'), { march: 'bayes' });
});

describe('qtk inspect MODEL.qtk', () => {
  it("a fixed-point model file: kind, march, meta, graph, and every value's dtype and scale", async () => {
    const r = await run('inspect', fixedPath);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^model file ${fixedPath}: fixed-point, march bayes \\(qtk\\.model version 1, class \\w+\\)$`, 'm'),
    );
    expect(r.stdout).toMatch(/^tool +qtk quantize$/m);
    expect(r.stdout).toMatch(/^inputShape +\[null,1,28,28\]$/m);
    expect(r.stdout).toMatch(/^io +\{"inputs":\["x"\],"outputs":\["output"\]\}$/m);
    expect(r.stdout).toMatch(/^call_module +fc +fc /m);
    expect(r.stdout).toContain('values (one run on a random input of shape [1, 1, 28, 28]):');
    // the scales printed are the model's own: the output's, from a run of the loaded model
    const model = loadModelFileSync(fixedPath).model;
    const y = model.call(rand([1, 1, 28, 28])) as QTensor;
    expect(y).toBeInstanceOf(QTensor);
    // qtk quantize gives the output layer a high-precision int32 output, one scale per channel
    const [lo, hi] = [Math.min(...y.scale), Math.max(...y.scale)].map((v) => v.toExponential(3));
    expect(y.dtype).toBe('qint32');
    expect(r.stdout).toMatch(new RegExp(`^fc +\\w+ +qint32 \\(int32\\) +10 per channel, ${lo} \\.\\. ${hi}$`, 'm'));
    expect(r.stdout).toMatch(/^_generated_quant_stub_0 +Quantize +qint8 \(int8\) +0\.0078125$/m);

    const march = await run('inspect', fixedPath, '--march', 'bayes');
    expect(march.code).toBe(2);
    expect(march.stderr).toContain(
      `--march and --hybrid check an ONNX model before quantizing; ${fixedPath} is a fixed-point model file made for march 'bayes'`,
    );
  });

  it("a QAT model file lists its fake-quants' scales; a file without an input shape says how to get them", async () => {
    const prepared = prepareQatFx(new PoolScores(), { global: getDefaultQatQconfig() }, { march: 'bayes' });
    calibrate(prepared, [rand([8, 10, 2, 2], { low: -1, high: 1, generator: new Generator(1) })]);
    const qatPath = join(dir, 'pool-qat.qtk');
    saveModelFileSync(prepared, qatPath);
    const r = await run('inspect', qatPath);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`model file ${qatPath}: qat, march bayes`);
    expect(r.stdout).toContain('meta: none');
    expect(r.stdout).toMatch(/^quant\.activationPostProcess +qint8 +0\.00\d+$/m);

    const fixedNoShape = join(dir, 'no-shape.qtk');
    saveModelFileSync(loadModelFileSync(fixedPath).model, fixedNoShape);
    const n = await run('inspect', fixedNoShape);
    expect(n.code).toBe(0);
    expect(n.stdout).toContain(`scales: ${fixedNoShape} does not record its input shape; pass --input-shape N,C,H,W`);
    const given = await run('inspect', fixedNoShape, '--input-shape', '2,1,28,28');
    expect(given.stdout).toMatch(/^_generated_quant_stub_0 +Quantize +qint8 \(int8\) +0\.0078125$/m);
  });

  it('a .qtk file that is not a model file: the model file error, not an ONNX one', async () => {
    const bad = join(dir, 'bad.qtk');
    writeFileSync(bad, 'not a model');
    const r = await run('inspect', bad);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^qtk: error: .*bad\.qtk: not a QTK model file/);
  });
});
