// Hand-computed integers of the table op and the composites' building blocks.
import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { defaultDividing } from './convert/nonlinear-rules.js';
import { planAddShiftLarger } from './elementwise.js';
import { subPlanOf } from './modules/fixed-layer-norm.js';
import { FixedSoftmax } from './modules/fixed-softmax.js';
import { buildLookupTable16, FixedTableOp, planTable } from './modules/fixed-table-op.js';
import * as nl from './nonlinear-functions.js';
import { QTensor } from './qtensor.js';
import { planRequantizeWide } from './requantize.js';
import type { ObserverDType } from '@qtk/spec';

describe('FixedTableOp', () => {
  it('per-channel 256-entry tables (PReLU) index by channel along axis 1', () => {
    const plans = [0.5, -1].map((s) => planTable(nl.leakyRelu(s), 0.1, 'qint8', 0.1, 'qint8', 'even'));
    const op = new FixedTableOp({
      label: 'prelu',
      inDtype: 'qint8',
      inScale: 0.1,
      outScale: 0.1,
      outDtype: 'qint8',
      plans,
      channelAxis: 1,
    });
    const x = new QTensor(
      new Tensor({ data: Int8Array.from([-10, 7, -10, 7, -3, -128]), shape: [1, 2, 3], dtype: 'int8' }),
      [0.1],
      'qint8',
    );
    // channel 0 slope 0.5: -10 → rhu(-5) = -5, 7 → 7, -10 → -5; channel 1 slope -1: 7 → 7, -3 → 3, -128 → 127 (saturated)
    expect(Array.from(op.call(x).ints())).toEqual([-5, 7, -5, 7, 3, 127]);
  });

  it('int8 in, int16 out: T[i] = sat(rhu(f((i − 128)·s_in)/s_out), qint16)', () => {
    const t = buildLookupTable16(nl.exp, 0.0625, 1 / 1024, 'qint16');
    expect(t[128]).toBe(1024); // exp(0) = 1
    expect(t[128 + 16]).toBe(Math.floor(Math.E * 1024 + 0.5)); // exp(1)
    expect(t[255]).toBe(32767); // exp(7.9375)·1024 saturates
  });

  it('dividing points: curvature for the pole functions, even for the rest', () => {
    expect([nl.reciprocal, nl.sqrt, nl.rsqrt, nl.log, nl.pow(-1), nl.pow(0.5)].map(defaultDividing)).toEqual(
      Array(6).fill('curvature'),
    );
    expect([nl.exp, nl.sigmoid, nl.pow(2), nl.hardswish].map(defaultDividing)).toEqual(Array(4).fill('even'));
  });
});

describe('composite building blocks', () => {
  it('subPlanOf(planAddShiftLarger(x − m)): the larger scale shifts, the other multiplies by −Q', () => {
    const limit = (d: string) => (d === 'qint8' ? 23 : 15);
    const planSub = (sx: number, dx: ObserverDType, sm: number, dm: ObserverDType) =>
      subPlanOf(planAddShiftLarger({ scale: sx, dtype: dx }, { scale: sm, dtype: dm }, true, limit))!;
    const p = planSub(0.1, 'qint8', 0.02, 'qint16');
    // sh = min(23, floor(log2(32767·5))) = 17; Q = rhu(0.02·2^17/0.1) = 26214 (float32 scales)
    expect(p).toEqual({ mx: 2 ** 17, mm: -26214, sAcc: Math.fround(0.1) / 2 ** 17 });
    // 1.0 − 0.5
    expect((10 * p.mx + 25 * p.mm) * p.sAcc).toBeCloseTo(0.5, 4);
    const q = planSub(0.02, 'qint16', 0.1, 'qint8'); // the subtrahend has the larger scale
    expect([q.mx, q.mm]).toEqual([26214, -(2 ** 17)]);
  });

  it('FixedSoftmax on a hand example: equal inputs give 1/n each', () => {
    const sD = 16 / 32767.5;
    const sE = 1 / 32767.5;
    const sS = 4 / 32767.5;
    const sR = 1 / 32767.5;
    const sm = new FixedSoftmax({
      dim: -1,
      inScale: 0.1,
      inDtype: 'qint8',
      sub: planRequantizeWide(Math.fround(0.1), Math.fround(sD), 'qint16'),
      exp: planTable(nl.exp, sD, 'qint16', sE, 'qint16', 'even'),
      sum: planRequantizeWide(Math.fround(sE), Math.fround(sS), 'qint16'),
      reciprocal: planTable(nl.reciprocal, sS, 'qint16', sR, 'qint16', 'curvature'),
      mul: planRequantizeWide(Math.fround(sE) * Math.fround(sR), Math.fround(1 / 127.5), 'qint8'),
      outScale: 1 / 127.5,
      outDtype: 'qint8',
    });
    const x = new QTensor(
      new Tensor({ data: Int8Array.from([5, 5, 5, 5, 0, 0, 0, 50]), shape: [2, 4], dtype: 'int8' }),
      [0.1],
      'qint8',
    );
    const y = Array.from(sm.call(x).ints());
    expect(y.slice(0, 4)).toEqual([32, 32, 32, 32]); // rhu(0.25·127.5) = 32
    // row 2: exp(−5) / (3·exp(−5) + 1) = 0.00666 → 1; 1/(1 + 3e^−5) = 0.98 → 125
    expect(y.slice(4)).toEqual([1, 1, 1, 125]);
  });
});
