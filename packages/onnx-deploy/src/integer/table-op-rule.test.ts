import type { ConvertTableOptions, FixedTableOp } from '@qtk/fixed-point';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { getDefaultQatQconfig } from '@qtk/fake-quant';
import { GELU, Hardsigmoid, Hardswish, type Module, PReLU, Sigmoid, SiLU, Tanh } from '@qtk/nn';
import { elu, leakyRelu, softplus, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { decodeModel } from '@qtk/onnx';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { inputQuantize, integerGridInput } from '../testing/integer-grid.js';
import { SingleOpNet } from '@qtk/test-models';

/** QuantStub → the activation (the child 'act' the qconfigs name) → DeQuantStub. */
const actNet = (act: Module) => new SingleOpNet(act, 'act');

const COLS = 16;

function tableOpOf(fixed: ReturnType<typeof fixedPointOf>): FixedTableOp {
  const kinds = fixed.graph.nodes
    .filter((n) => n.op === 'call_module')
    .map((n) => fixed.getSubmodule(n.target).constructor.name);
  expect(kinds).toEqual(['Quantize', 'FixedTableOp', 'Dequantize']);
  const node = fixed.graph.nodes.filter((n) => n.op === 'call_module')[1]!;
  return fixed.getSubmodule(node.target) as FixedTableOp;
}

const ACTS: [string, () => Module][] = [
  ['sigmoid', () => new Sigmoid()],
  ['tanh', () => new Tanh()],
  ['hardswish', () => new Hardswish()],
  ['hardsigmoid', () => new Hardsigmoid()],
  ['silu', () => new SiLU()],
  ['gelu', () => new GELU()],
];

describe('integer export: FixedTableOp', () => {
  for (const [label, make] of ACTS) {
    test(`bayes ${label}, qint8: the 256-entry table as a Gather, every input integer identical`, async () => {
      const fixed = fixedPointOf(actNet(make()), {
        march: 'bayes',
        calibration: [uniformInput([64, COLS], 1, -4, 4)],
      });
      const op = tableOpOf(fixed);
      expect(op.config.plans[0]!.kind).toBe('lut');
      const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
      expect(summary).toBe('all 3 compared values identical');
    });

    test(`bayes ${label}, qint16: the segment table's arithmetic over all 65536 inputs identical`, async () => {
      const fixed = fixedPointOf(actNet(make()), {
        march: 'bayes',
        dtype: 'qint16',
        calibration: [uniformInput([64, COLS], 1, -6, 6)],
      });
      const op = tableOpOf(fixed);
      expect(op.config.plans[0]!.kind).toBe('segment');
      expect(op.config.outDtype).toBe('qint16');
      const { bytes, summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
      expect(summary).toBe('all 3 compared values identical');
      // a fixed number of nodes, whatever the tensor size (about 50 for the table)
      expect(decodeModel(bytes).graph!.node!.length).toBeLessThan(70);
    });
  }

  test('bayes tanh, qint16 in → qint8 out: the segment table with its int8 output conversion', async () => {
    const fixed = fixedPointOf(actNet(new Tanh()), {
      march: 'bayes',
      dtype: 'qint16',
      qconfig: { moduleName: { act: getDefaultQatQconfig({ dtype: 'qint8' }) } },
      calibration: [uniformInput([64, COLS], 2, -3, 3)],
    });
    const op = tableOpOf(fixed);
    expect([op.config.inDtype, op.config.outDtype, op.config.plans[0]!.kind]).toEqual(['qint16', 'qint8', 'segment']);
    const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
    expect(summary).toBe('all 3 compared values identical');
  });

  test('bayes sigmoid, qint8 in → qint16 out: a 256-entry table of int16 entries', async () => {
    const fixed = fixedPointOf(actNet(new Sigmoid()), {
      march: 'bayes',
      qconfig: { moduleName: { act: getDefaultQatQconfig({ dtype: 'qint16' }) } },
      calibration: [uniformInput([64, COLS], 3, -5, 5)],
    });
    const op = tableOpOf(fixed);
    expect([op.config.inDtype, op.config.outDtype, op.config.plans[0]!.kind]).toEqual(['qint8', 'qint16', 'lut']);
    const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
    expect(summary).toBe('all 3 compared values identical');
  });

  for (const dtype of ['qint8', 'qint16'] as const)
    test(`bayes PReLU, ${dtype}: one table per channel, gathered by channel`, async () => {
      const prelu = new PReLU({ numParameters: COLS });
      prelu.weight.data.set(Array.from({ length: COLS }, (_, c) => (c - 6) / 8));
      const fixed = fixedPointOf(actNet(prelu), {
        march: 'bayes',
        dtype,
        calibration: [uniformInput([64, COLS], 4, -4, 4)],
      });
      const op = tableOpOf(fixed);
      expect(op.config.plans.length).toBe(COLS);
      expect(op.config.plans[0]!.kind).toBe(dtype === 'qint8' ? 'lut' : 'segment');
      const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
      expect(summary).toBe('all 3 compared values identical');
    });

  for (const dtype of ['qint8', 'qint16'] as const)
    test(`bayes PReLU on [N, C, H, W], ${dtype}: per-channel tables broadcast over H, W`, async () => {
      const prelu = new PReLU({ numParameters: 5 });
      prelu.weight.data.set([-0.5, 0, 0.25, 1, 2]);
      const fixed = fixedPointOf(actNet(prelu), {
        march: 'bayes',
        dtype,
        calibration: [uniformInput([4, 5, 6, 6], 9, -3, 3)],
      });
      expect(tableOpOf(fixed).config.plans.length).toBe(5);
      const s = inputQuantize(fixed).scale;
      const x = uniformInput([3, 5, 6, 6], 10, -3, 3);
      x.values().set([1e9, -1e9, 0.5 * s, -0.5 * s, 2.5 * s, -2.5 * s], 0);
      const { summary } = await exportAndCompare(fixed, x);
      expect(summary).toBe('all 3 compared values identical');
    });

  for (const [label, make] of ACTS.filter(([l]) => !l.startsWith('hard')))
    test(`bernoulli2 ${label}: 256-entry table identical`, async () => {
      const fixed = fixedPointOf(actNet(make()), {
        march: 'bernoulli2',
        calibration: [uniformInput([64, COLS], 5, -4, 4)],
      });
      expect(tableOpOf(fixed).config.plans[0]!.kind).toBe('lut');
      const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
      expect(summary).toBe('all 3 compared values identical');
    });

  // functions with poles, infinite slopes and steep tails: curvature dividing points, big line intercepts
  const CALLS: [string, (x: Tensor) => Tensor, [number, number]][] = [
    ['exp', (x) => x.exp(), [-4, 2]],
    ['reciprocal', (x) => x.reciprocal(), [0.25, 4]],
    ['rsqrt', (x) => x.rsqrt(), [0.05, 4]],
    ['sqrt', (x) => x.sqrt(), [0, 9]],
    ['log', (x) => x.log(), [0.1, 8]],
    ['elu', (x) => elu(x), [-4, 4]],
    ['softplus', (x) => softplus(x), [-6, 6]],
    ['leaky_relu', (x) => leakyRelu(x, 0.1), [-4, 4]],
  ];
  test('bernoulli2 exp (call): 256-entry table identical', async () => {
    const fixed = fixedPointOf(new SingleOpNet((x) => x.exp()), {
      march: 'bernoulli2',
      calibration: [uniformInput([64, COLS], 11, -4, 2)],
    });
    expect(tableOpOf(fixed).config.plans[0]!.kind).toBe('lut');
    const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
    expect(summary).toBe('all 3 compared values identical');
  });

  for (const [label, f, [lo, hi]] of CALLS)
    test(`bayes ${label} (call), qint16: segment table over all 65536 inputs identical`, async () => {
      const fixed = fixedPointOf(new SingleOpNet(f), {
        march: 'bayes',
        dtype: 'qint16',
        calibration: [uniformInput([64, COLS], 6, lo, hi)],
      });
      expect(tableOpOf(fixed).config.plans[0]!.kind).toBe('segment');
      const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
      expect(summary).toBe('all 3 compared values identical');
    });

  // tuned tables: explicit points with equal neighbours (degenerate segments no input selects), and
  // an input range narrow against the calibrated one (long line segments on both sides)
  const TUNED: [string, () => Module, ConvertTableOptions[string]][] = [
    [
      'sigmoid, explicit points with degenerate segments',
      () => new Sigmoid(),
      { dividing: [-3, -1, -1, 0, 0, 0.5, 3] },
    ],
    ['tanh, explicit points from 0 (odd)', () => new Tanh(), { dividing: [0, 0, 0.25, 0.5, 1, 1, 2.5] }],
    ['sigmoid, tables over [6.5, 7] only', () => new Sigmoid(), { inputRange: [6.5, 7] }],
  ];
  for (const [label, make, options] of TUNED)
    test(`bayes qint16 ${label}: identical over all 65536 inputs`, async () => {
      const model = prepareQatFx(
        actNet(make()).eval(),
        { global: getDefaultQatQconfig({ dtype: 'qint16' }) },
        { march: 'bayes', onWarning: () => {} },
      );
      calibrate(model, [uniformInput([64, COLS], 8, -8, 8)]);
      const fixed = convertFx(model, { march: 'bayes', onWarning: () => {}, tableOptions: { act: options } });
      const plan = tableOpOf(fixed).config.plans[0]!;
      if (plan.kind !== 'segment') throw new Error('expected a segment table');
      if (options.dividing) expect(plan.table.flags.degenerateSegments.length).toBeGreaterThan(0);
      else {
        const sIn = plan.table.sIn;
        expect(plan.table.B[0]).toBeGreaterThanOrEqual(Math.floor(6.5 / sIn));
        expect(plan.table.B[6]).toBeLessThanOrEqual(Math.ceil(7 / sIn));
      }
      const { summary } = await exportAndCompare(fixed, integerGridInput(inputQuantize(fixed), COLS));
      expect(summary).toBe('all 3 compared values identical');
    });
});
