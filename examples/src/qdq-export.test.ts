// The reference network and the MobileNet-style network, calibrated for each march, exported as QDQ
// ONNX and run in onnxruntime-node: their high-precision outputs agree with QTK's fake-quant model
// within the measured bound of docs/onnx-export.md and every input gets the same class.
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { hybridPartitioner } from '@qtk/hybrid';
import { calibrate, prepareQatFx } from '@qtk/core';
import { defaultCalibOutQconfig, getDefaultCalibQconfig } from '@qtk/fake-quant';
import type { Module } from '@qtk/nn';
import { exportOnnxBytes } from '@qtk/onnx';
import { qdqScales } from '@qtk/onnx-deploy';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { MobileSeNet } from './mobile-se-net.js';
import { postTrainingQuantize } from './ptq.js';
import { ReferenceNet } from './reference-net.js';

const MODELS: [string, () => Module][] = [
  ['ReferenceNet', () => new ReferenceNet({ generator: new Generator(1) })],
  ['MobileSeNet', () => new MobileSeNet({ generator: new Generator(1) })],
];
// Measured on 2 × 256 inputs: largest |ORT − QTK| / max |output| ≤ 3.8e-3 with int8 activations
// (ReferenceNet, ORT's optimizations on; 2.1e-3 off), ≤ 4.1e-5 with int16 activations.
const CONFIGS = [
  { march: 'bayes', dtype: 'qint8', opset: 13, bound: 1e-2 },
  { march: 'bernoulli2', dtype: 'qint8', opset: 13, bound: 1e-2 },
  { march: 'bayes', dtype: 'qint16', opset: 21, bound: 2e-4 },
] as const;

function argmax(v: ArrayLike<number>, row: number, n: number): number {
  let best = 0;
  for (let k = 1; k < n; k++) if (v[row * n + k]! > v[row * n + best]!) best = k;
  return best;
}

describe.each(MODELS)('%s exported as QDQ ONNX', (name, make) => {
  it.each(CONFIGS)('$march, $dtype activations (opset $opset): onnxruntime agrees with QTK', async (c) => {
    const model = make();
    const g = new Generator(2);
    model.train();
    noGrad(() => {
      for (let i = 0; i < 2; i++) model.call(randn([8, 1, 28, 28], { generator: g }));
    });
    model.eval();
    const gm = prepareQatFx(
      model,
      { global: getDefaultCalibQconfig({ dtype: c.dtype }), moduleName: { fc: defaultCalibOutQconfig } },
      { march: c.march, onWarning: () => {} },
    );
    calibrate(
      gm,
      [0, 1, 2].map(() => randn([8, 1, 28, 28], { generator: g }).clamp(-1, 1)),
      { onWarning: () => {} },
    );
    const x = randn([64, 1, 28, 28], { generator: new Generator(5) }).clamp(-1, 1);
    const bytes = exportOnnxBytes(gm, x, { opset: c.opset });
    const dtypes = new Set(Object.values(qdqScales(bytes).tensors).map((t) => `${t.kind}:${t.dtype}`));
    expect([...dtypes].sort()).toEqual([`activation:${c.dtype === 'qint8' ? 'int8' : 'int16'}`, 'weight:int8']);
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    let top = 0;
    for (let i = 0; i < want.length; i++) top = Math.max(top, Math.abs(want[i]!));
    for (const level of ['disabled', 'all'] as const) {
      const session = await ort.InferenceSession.create(bytes, {
        graphOptimizationLevel: level,
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        logSeverityLevel: 3,
      });
      const input = new ort.Tensor('float32', Float32Array.from(x.values() as Float32Array), x.shape);
      const got = (await session.run({ [session.inputNames[0]!]: input }))[session.outputNames[0]!]!
        .data as Float32Array;
      let err = 0;
      for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs(got[i]! - want[i]!));
      expect(err / top, `${name} ${level}`).toBeLessThanOrEqual(c.bound);
      for (let row = 0; row < 64; row++) expect(argmax(got, row, 10)).toBe(argmax(want, row, 10));
    }
  });
});

describe('a heterogeneous QAT model (bernoulli2, hybrid)', () => {
  it('exports its CPU ops as float operators between the calibrated QDQ pairs, and agrees with QTK', async () => {
    const net = new MobileHybridNet({ generator: new Generator(1) });
    const g = new Generator(2);
    net.train();
    noGrad(() => {
      for (let i = 0; i < 2; i++) net.call(randn([8, 1, 28, 28], { generator: g }));
    });
    net.eval();
    const calibration = [0, 1].map(() => randn([8, 1, 28, 28], { generator: g }).clamp(-1, 1));
    const { calibrated } = postTrainingQuantize(net, {
      march: 'bernoulli2',
      calibration,
      prepare: { hybrid: true, partitioner: hybridPartitioner },
    });
    const x = randn([32, 1, 28, 28], { generator: g }).clamp(-1, 1);
    const bytes = exportOnnxBytes(calibrated, x);
    const session = await ort.InferenceSession.create(bytes, {
      graphOptimizationLevel: 'disabled',
      logSeverityLevel: 3,
    });
    const input = new ort.Tensor('float32', Float32Array.from(x.values() as Float32Array), x.shape);
    const got = (await session.run({ [session.inputNames[0]!]: input }))[session.outputNames[0]!]!.data as Float32Array;
    const want = (noGrad(() => calibrated.call(x)) as Tensor).values();
    let err = 0;
    let top = 0;
    for (let i = 0; i < want.length; i++) {
      err = Math.max(err, Math.abs(got[i]! - want[i]!));
      top = Math.max(top, Math.abs(want[i]!));
    }
    // measured 6.2e-8: float rounding only
    expect(err / top).toBeLessThanOrEqual(1e-2);
    for (let row = 0; row < 32; row++) expect(argmax(got, row, 10)).toBe(argmax(want, row, 10));
  });
});
