// Hand-built FixedConv modules for what conversion of a float model rarely or never reaches: int32
// saturation of the sum and of the bias, 1-d and grouped transposed convs, int32 added inputs,
// requantize pre-shifts under both rules.
import '../index.js'; // the QDQ and integer export rules
import {
  FixedConv,
  type FixedConvConfig,
  planRequantizeInt16,
  planRequantizeWide,
  planSumin,
  QTensor,
} from '@qtk/fixed-point';
import { symbolicTrace } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { Generator, noGrad, Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { formatRuntimeComparison } from '../compare-runtime.js';
import { compareWithRuntime } from '../node/compare-with-runtime.js';
import { exportOnnxBytes } from '@qtk/onnx';

class OneInput extends Module {
  constructor(readonly conv: FixedConv) {
    super();
  }
  forward(x: QTensor): QTensor {
    return this.conv.call(x);
  }
}

class TwoInputs extends Module {
  constructor(readonly conv: FixedConv) {
    super();
  }
  forward(x: QTensor, e: QTensor): QTensor {
    return this.conv.call(x, e);
  }
}

const ints = (n: number, seed: number, lo: number, hi: number): number[] => {
  const g = new Generator(seed);
  return Array.from({ length: n }, () => lo + Math.floor(g.uniform() * (hi - lo + 1)));
};

function int8Weight(shape: number[], seed: number): Tensor {
  const n = shape.reduce((a, d) => a * d, 1);
  return new Tensor({ data: Int8Array.from(ints(n, seed, -128, 127)), shape, dtype: 'int8' });
}

const base = (c: Partial<FixedConvConfig> & Pick<FixedConvConfig, 'kind' | 'weight' | 'attrs'>): FixedConvConfig => ({
  bias: null,
  sumin: null,
  requant: null,
  outScale: Float32Array.of(1),
  activation: null,
  relu6Max: Number.POSITIVE_INFINITY,
  ...c,
});

async function expectIdentical(conv: FixedConv, inputs: QTensor[]): Promise<QTensor> {
  const model = inputs.length === 1 ? new OneInput(conv) : new TwoInputs(conv);
  const gm = symbolicTrace(model, { leafModules: [FixedConv] });
  const comparison = await compareWithRuntime(gm, exportOnnxBytes(gm, inputs), inputs);
  const summary = formatRuntimeComparison(comparison);
  expect(comparison.nodes.map((n) => n.op)).toEqual(['FixedConv']);
  expect(summary).toBe('all 1 compared values identical');
  return noGrad(() => (conv.call as (...a: QTensor[]) => QTensor)(...inputs));
}

describe('integer export: hand-built FixedConv modules', () => {
  test('a 1-d int16 conv whose sum saturates int32 before the bias (sat(sat(Σ) + b), not sat(Σ + b))', async () => {
    // 3 channels × 200 taps of (−128)·(−32768) = 2^22: Σ = 2.5·10^9 > 2^31 − 1
    const weight = new Tensor({ data: new Int8Array(2 * 3 * 200).fill(-128), shape: [2, 3, 200], dtype: 'int8' });
    const bias = Int32Array.of(2147483000, -2147483000);
    const conv = new FixedConv(
      base({
        kind: 'conv',
        weight,
        attrs: { stride: [1], padding: [0], dilation: [1], groups: 1 },
        bias,
        outScale: Float32Array.of(1, 1),
      }),
    );
    const x = QTensor.fromInts(new Array(2 * 3 * 201).fill(-32768), [2, 3, 201], [1], 'qint16');
    const y = await expectIdentical(conv, [x]);
    const v = Array.from(y.ints());
    expect(v[0]).toBe(2147483647);
    expect(v[2]).toBe(2147483647 - 2147483000);
  });

  test('a grouped, dilated 1-d transposed conv with an int32 added input (sumin in both forms) and ReLU', async () => {
    const weight = int8Weight([6, 2, 3], 1);
    const sAcc = [1e-4, 2e-4, 1e-5, 3e-9, 1e-4, 5e-9];
    const sumin = planSumin(1e-3, sAcc);
    expect(Array.from(sumin.k).some((k) => k >= 0) && Array.from(sumin.k).some((k) => k < 0)).toBe(true);
    const conv = new FixedConv(
      base({
        kind: 'conv_transpose',
        weight,
        attrs: { stride: [2], padding: [1], dilation: [2], groups: 3, outputPadding: [1] },
        bias: Int32Array.from(ints(6, 2, -5000, 5000)),
        sumin,
        outScale: Float32Array.from(sAcc),
        activation: 'relu',
      }),
    );
    const x = QTensor.fromInts(ints(2 * 6 * 7, 3, -128, 127), [2, 6, 7], [1], 'qint8');
    // output length (7 − 1)·2 − 2 + 2·2 + 1 + 1 = 16; e at int32 extremes and small values
    const e = QTensor.fromInts(
      ints(2 * 6 * 16, 4, -2147483648, 2147483647).map((v, i) => (i % 3 ? v : v % 1000)),
      [2, 6, 16],
      [1e-3],
      'qint32',
    );
    const y = await expectIdentical(conv, [x, e]);
    expect(y.shape).toEqual([2, 6, 16]);
    const v = Array.from(y.ints());
    expect(v.some((t) => t === 2147483647)).toBe(true);
    expect(v.some((t) => t > 0 && t < 2147483647)).toBe(true);
    expect(v.some((t) => t === 0)).toBe(true);
  });

  for (const rule of ['wide', 'int16_intermediate'] as const)
    test(`requantize pre-shifts under the ${rule} rule, per channel, with ReLU6; int16 linear input`, async () => {
      const plan = (rule === 'wide' ? planRequantizeWide : planRequantizeInt16)([1e-13, 3e-7, 2e-5, 1], 0.05, 'qint8');
      expect(Math.max(...plan.pre)).toBeGreaterThan(0);
      const conv = new FixedConv(
        base({
          kind: 'linear',
          weight: int8Weight([4, 700], 5),
          attrs: {},
          bias: Int32Array.of(-7, 1 << 30, -(1 << 30), 123456),
          requant: plan,
          outScale: Float32Array.of(0.05),
          activation: 'relu6',
          relu6Max: Math.floor(6 / 0.05 + 0.5),
        }),
      );
      const x = QTensor.fromInts(ints(3 * 5 * 700, 6, -32768, 32767), [3, 5, 700], [1], 'qint16');
      const y = await expectIdentical(conv, [x]);
      const v = Array.from(y.ints());
      expect(Math.max(...v)).toBe(120);
      expect(Math.min(...v)).toBe(0);
    });
});
