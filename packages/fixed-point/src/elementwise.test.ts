import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { broadcastIndex } from './broadcast-index.js';
import {
  addAccumulate,
  addTermValue,
  mulAccScale,
  planAddShiftLarger,
  planAddConvSumin,
  type EwOperand,
  roundHalfAway,
  scalarOperandInt8,
  scalarOperandWide,
} from './elementwise.js';
import { FixedAdd } from './modules/fixed-add.js';
import { FixedCat } from './modules/fixed-cat.js';
import { FixedClamp } from './modules/fixed-clamp.js';
import { FixedCompare } from './modules/fixed-compare.js';
import { FixedMinMax } from './modules/fixed-min-max.js';
import { FixedMul } from './modules/fixed-mul.js';
import { FixedReduce } from './modules/fixed-reduce.js';
import { QTensor } from './qtensor.js';
import { planRequantizeInt16, planRequantizeWide, requantizeValue } from './requantize.js';

/** The shift limits bayes gives planAddShiftLarger (23 bits next to a qint8 larger-scale operand, else 15). */
const planAddBayes = (a: EwOperand, b: EwOperand, sub: boolean) =>
  planAddShiftLarger(a, b, sub, (d) => (d === 'qint8' ? 23 : 15));

const q8 = (v: number[], s: number, shape = [v.length]) => QTensor.fromInts(v, shape, [s], 'qint8');
const ints = (q: QTensor) => Array.from(q.ints());

describe('add / sub, bayes', () => {
  it('equal scales: sh = 14, Q = 2^14, and half-up rounding of negative sums', () => {
    const s = Math.fround(0.1);
    const p = planAddBayes({ scale: s, dtype: 'qint8' }, { scale: s, dtype: 'qint8' }, false);
    expect(p.a).toEqual({ m: 1, shift: 14, negate: false }); // a is x on a tie
    expect(p.b).toEqual({ m: 16384, shift: 0, negate: false });
    expect(p.sAcc).toBe(s / 16384);
    // s_out = 2s: requantize by 2^-15 → M = 16384, n = 29 (bayes)
    const r = planRequantizeWide(p.sAcc, 2 * s, 'qint8');
    expect([r.m[0], r.n[0], r.pre[0]]).toEqual([16384, 29, 0]);
    expect(requantizeValue(addAccumulate(3, 4, p), r)).toBe(4); // 3.5 → 4
    expect(requantizeValue(addAccumulate(-3, -4, p), r)).toBe(-3); // -3.5 → -3 (half up)
    expect(requantizeValue(addAccumulate(127, 127, p), r)).toBe(127);
    // saturation at the output: s_out = s
    const r1 = planRequantizeWide(p.sAcc, s, 'qint8');
    expect(requantizeValue(addAccumulate(127, 127, p), r1)).toBe(127);
    expect(requantizeValue(addAccumulate(-128, -128, p), r1)).toBe(-128);
  });

  it('different scales: x is the larger scale, sh = floor(log2(32767·s_x/s_y)), Q = rhu(s_y·2^sh/s_x)', () => {
    const sx = 0.5;
    const sy = Math.fround(0.01); // 0.009999999776482582
    const p = planAddBayes({ scale: sy, dtype: 'qint8' }, { scale: sx, dtype: 'qint8' }, false);
    // 32767·0.5/0.01 = 1638350 → log2 = 20.6 → sh = 20; Q = rhu(0.0099999997765·2^20/0.5) = rhu(20971.5195) = 20972
    expect(p.b).toEqual({ m: 1, shift: 20, negate: false });
    expect(p.a).toEqual({ m: 20972, shift: 0, negate: false });
    expect(p.sAcc).toBe(0.5 / 2 ** 20);
    expect(addAccumulate(50, 1, p)).toBe(50 * 20972 + 2 ** 20);
  });

  it('sub with the subtrahend being the larger-scale operand negates x; otherwise Q is negative', () => {
    const sx = 0.5;
    const sy = Math.fround(0.01);
    const p = planAddBayes({ scale: sy, dtype: 'qint8' }, { scale: sx, dtype: 'qint8' }, true); // a - b, b = x
    expect(p.b).toEqual({ m: -1, shift: 20, negate: false });
    expect(p.a.m).toBe(20972);
    expect(addAccumulate(50, 1, p)).toBe(1048600 - 1048576); // 24: the rounding of Q, 24 / 2^21 ≈ 1.1e-5
    const p2 = planAddBayes({ scale: sx, dtype: 'qint8' }, { scale: sy, dtype: 'qint8' }, true); // a = x - b
    expect(p2.a).toEqual({ m: 1, shift: 20, negate: false });
    expect(p2.b.m).toBe(-20972); // rhu(-20971.5195) = floor(-20971.0195) = -20972
  });

  it('Q rounds the signed ratio half up: +1.5 → 2, -1.5 → -1', () => {
    const sx = 1;
    const sy = 3 * 2 ** -24; // sh = 23 (qint8 cap), raw = 1.5
    expect(planAddBayes({ scale: sx, dtype: 'qint8' }, { scale: sy, dtype: 'qint8' }, false).b.m).toBe(2);
    expect(planAddBayes({ scale: sx, dtype: 'qint8' }, { scale: sy, dtype: 'qint8' }, true).b.m).toBe(-1);
  });

  it('tiny scale ratio: the qint16 cap sh = 15 leaves Q = 0 (y vanishes); qint8 caps at 23', () => {
    const p = planAddBayes({ scale: 1, dtype: 'qint16' }, { scale: 3 * 2 ** -24, dtype: 'qint16' }, false);
    expect(p.a.shift).toBe(15);
    expect(p.b.m).toBe(0);
    expect(addAccumulate(-2, 32767, p)).toBe(-65536);
    const p8 = planAddBayes({ scale: 1, dtype: 'qint8' }, { scale: 2 ** -30, dtype: 'qint8' }, false);
    expect(p8.a.shift).toBe(23);
    expect(p8.b.m).toBe(0); // rhu(2^-7) = 0
  });

  it('a term with sh < 0 shifts x right with truncation (floor)', () => {
    const t = { m: 1, shift: -2, negate: false };
    expect(addTermValue(7, t)).toBe(1);
    expect(addTermValue(-7, t)).toBe(-2);
    expect(addTermValue(-8, t)).toBe(-2);
    expect(addTermValue(-1, { m: 3, shift: -1, negate: false })).toBe(-3);
  });

  it('no intermediate saturation: the accumulator may exceed int32', () => {
    const p = planAddBayes({ scale: 1, dtype: 'qint8' }, { scale: 1, dtype: 'qint16' }, false);
    expect(p.a.shift).toBe(14);
    expect(addAccumulate(127, 32767, p)).toBe(127 * 16384 + 32767 * 16384);
  });
});

describe('add / sub, bernoulli2 (conv with a sumin)', () => {
  it('equal scales: w_f = w_e = 127, s_acc = s/127; sub negates the subtrahend with int8 saturation', () => {
    const s = Math.fround(0.1);
    const p = planAddConvSumin({ scale: s, dtype: 'qint8' }, { scale: s, dtype: 'qint8' }, true);
    expect(p.a).toEqual({ m: 127, shift: 0, negate: false });
    expect(p.b).toEqual({ m: 127, shift: 0, negate: true });
    expect(p.sAcc).toBe(s / 127);
    expect(addAccumulate(5, -128, p)).toBe(5 * 127 + 127 * 127); // -(-128) saturates to 127
    expect(addAccumulate(-3, 4, p)).toBe(-7 * 127);
  });

  it('different scales: w_e = rha(s_e/s_i), split as m·2^ls when above 32767', () => {
    const p = planAddConvSumin({ scale: 1000, dtype: 'qint8' }, { scale: 1, dtype: 'qint8' }, false);
    // f = b (s 1), s_i = 1/127; w_e = 127000 = 31750·2^2
    expect(p.b).toEqual({ m: 127, shift: 0, negate: false });
    expect(p.a).toEqual({ m: 31750, shift: 2, negate: false });
    expect(addAccumulate(-2, 3, p)).toBe(-2 * 31750 * 4 + 3 * 127);
    const sf = Math.fround(0.01);
    const p2 = planAddConvSumin({ scale: sf, dtype: 'qint8' }, { scale: 0.5, dtype: 'qint8' }, false);
    expect(p2.a.m).toBe(127);
    expect(p2.b).toEqual({ m: 6350, shift: 0, negate: false }); // 0.5·127/0.0099999998 = 6350.00014
  });

  it('a huge ratio: s_i = s_e/2^25, w_f < 127, and the int32 accumulator saturates', () => {
    const p = planAddConvSumin({ scale: 2 ** -20, dtype: 'qint8' }, { scale: 1, dtype: 'qint8' }, false);
    expect(p.sAcc).toBe(2 ** -25);
    expect(p.a).toEqual({ m: 32, shift: 0, negate: false });
    expect(p.b).toEqual({ m: 16384, shift: 11, negate: false });
    expect(addAccumulate(0, 127, p)).toBe(2147483647);
    expect(addAccumulate(0, -128, p)).toBe(-2147483648);
    expect(addAccumulate(1, 1, p)).toBe(32 + 2 ** 25);
  });

  it('round half away from zero', () => {
    expect([roundHalfAway(2.5), roundHalfAway(-2.5), roundHalfAway(-2.4), roundHalfAway(0.5)]).toEqual([3, -3, -2, 1]);
  });

  it('end to end through the int16-intermediate requantize', () => {
    const s = 0.25;
    const p = planAddConvSumin({ scale: s, dtype: 'qint8' }, { scale: s, dtype: 'qint8' }, false);
    const r = planRequantizeInt16(p.sAcc, 0.5, 'qint8'); // s_acc = 1/508
    // pre = ceil(log2(0.5·508/256)) = ceil(-0.011) = 0; ratio 1/254: 2^23/254 = 33026.02 > 32767, so n = 22, M = rhu(16513.008) = 16513
    expect([r.pre[0], r.m[0], r.n[0]]).toEqual([0, 16513, 22]);
    // acc = 7·127 = 889 (real 3.5 steps); (889·16513 + 2^21) >> 22 = floor(3.9999983) = 3: M rounded down loses the tie
    expect(requantizeValue(addAccumulate(3, 4, p), r)).toBe(3);
    expect(requantizeValue(addAccumulate(-3, -4, p), r)).toBe(-3);
    expect(requantizeValue(addAccumulate(127, 127, p), r)).toBe(127);
  });
});

describe('mul and scalar operands', () => {
  it('s_acc = s_x·s_y; -3·5 at 0.125 → 0.25 is -7 (half up) on both rules', () => {
    expect(mulAccScale(0.5, 0.25)).toBe(0.125);
    const wide = planRequantizeWide(0.125, 0.25, 'qint8');
    expect([wide.m[0], wide.n[0]]).toEqual([16384, 15]);
    expect(requantizeValue(-15, wide)).toBe(-7);
    expect(requantizeValue(-15, planRequantizeInt16(0.125, 0.25, 'qint8'))).toBe(-7);
    expect(requantizeValue(127 * 127, wide)).toBe(127);
  });

  it('a scalar is ±1 at |c|, or ±32767 at |c|/32767 next to a qint16 operand on bayes', () => {
    expect(scalarOperandInt8(-2.5)).toEqual({ value: -1, scale: 2.5, dtype: 'qint8' });
    expect(scalarOperandWide(0.3, 'qint8')).toEqual({ value: 1, scale: Math.fround(0.3), dtype: 'qint8' });
    expect(scalarOperandWide(-0.3, 'qint16')).toEqual({
      value: -32767,
      scale: Math.fround(0.3 / 32767),
      dtype: 'qint16',
    });
    expect(() => scalarOperandInt8(0)).toThrow(/non-zero/);
  });
});

describe('fixed-point elementwise modules', () => {
  it('broadcastIndex follows numpy rules', () => {
    const b = broadcastIndex([2, 1], [3]);
    expect(b.shape).toEqual([2, 3]);
    expect(Array.from(b.ia)).toEqual([0, 0, 0, 1, 1, 1]);
    expect(Array.from(b.ib)).toEqual([0, 1, 2, 0, 1, 2]);
  });

  it('FixedAdd broadcasts and requantizes; FixedMul with a scalar operand', () => {
    const plan = planAddBayes({ scale: 1, dtype: 'qint8' }, { scale: 1, dtype: 'qint8' }, false);
    const add = new FixedAdd({
      sub: false,
      plan,
      requant: planRequantizeWide(plan.sAcc, 2, 'qint8'),
      outScale: 2,
      outDtype: 'qint8',
      scalars: [null, null],
    });
    const y = add.call(q8([1, -3], 1, [2, 1]), q8([0, 2, 100], 1, [3])) as QTensor;
    expect(y.shape).toEqual([2, 3]);
    expect(ints(y)).toEqual([1, 2, 51, -1, 0, 49]); // 0.5→1, 1.5→2, 50.5→51, -1.5→-1, -0.5→0, 48.5→49
    const mul = new FixedMul({
      requant: planRequantizeWide(0.5 * 3, 1, 'qint8'),
      outScale: 1,
      outDtype: 'qint8',
      scalars: [null, scalarOperandInt8(-3)],
    });
    expect(ints(mul.call(q8([1, -2, 100], 0.5), -3) as QTensor)).toEqual([-1, 3, -128]); // -1.5→-1, 3, -150 saturates
  });

  it('FixedCat requantizes each input to the output scale (a copy where equal)', () => {
    const plans = [planRequantizeWide(1, 1, 'qint8'), planRequantizeWide(2, 1, 'qint8')];
    const cat = new FixedCat({ requants: plans, outScale: 1, outDtype: 'qint8' });
    const y = cat.call([q8([1, 2, 3, 4], 1, [2, 2]), q8([3, -70], 2, [2, 1])], 1) as QTensor;
    expect(y.shape).toEqual([2, 3]);
    expect(ints(y)).toEqual([1, 2, 6, 3, 4, -128]);
  });

  it('FixedReduce: int32 sums, mean from s_in/N', () => {
    const mean = new FixedReduce('mean', 1, 'qint8', planRequantizeWide);
    expect(ints(mean.call(q8([1, 2, 3, 4], 1, [2, 2]), 1) as QTensor)).toEqual([2, 4]); // 1.5 → 2, 3.5 → 4
    const keep = mean.call(q8([1, 2, 3, 4], 1, [2, 2]), [0], true) as QTensor;
    expect(keep.shape).toEqual([1, 2]);
    expect(ints(keep)).toEqual([2, 3]);
    const sum = new FixedReduce('sum', 4, 'qint8', planRequantizeWide);
    expect(ints(sum.call(q8([100, 100, 100, 100, 100, 100], 1, [6]), 0) as QTensor)).toEqual([127]); // 600/4 = 150 saturates
  });

  it('FixedMinMax, FixedClamp, FixedCompare (bayes only)', () => {
    const mx = new FixedMinMax({
      kind: 'maximum',
      requants: [planRequantizeWide(1, 1, 'qint8'), planRequantizeWide(0.5, 1, 'qint8')],
      outScale: 1,
      outDtype: 'qint8',
      scalars: [null, null],
    });
    expect(ints(mx.call(q8([1, -5], 1), q8([3, -3], 0.5)) as QTensor)).toEqual([2, -1]); // 1.5→2; -1.5→-1
    const clamp = new FixedClamp('clamp', 'half_up');
    const c = clamp.call(q8([-5, 0, 5], 0.5), -1.2, 1.3) as QTensor;
    expect(ints(c)).toEqual([-2, 0, 3]);
    expect(c.tensorScale).toBe(0.5);
    expect(ints(new FixedClamp('abs', 'half_up').call(q8([-128, -3, 4], 1)) as QTensor)).toEqual([127, 3, 4]);
    const plan = planAddBayes({ scale: 0.5, dtype: 'qint8' }, { scale: 0.25, dtype: 'qint8' }, true);
    const a = q8([1, 1, 1], 0.5);
    const b = q8([1, 2, 3], 0.25);
    const run = (kind: 'eq' | 'gt' | 'lt' | 'ge' | 'le') => {
      const y = new FixedCompare({ kind, plan, scalars: [null, null] }).call(a, b) as QTensor;
      expect(y.dtype).toBe('qbool');
      expect(y.data.dtype).toBe('bool');
      return ints(y);
    };
    expect(run('eq')).toEqual([0, 1, 0]);
    expect(run('gt')).toEqual([1, 0, 0]);
    expect(run('lt')).toEqual([0, 0, 1]);
    expect(run('ge')).toEqual([1, 1, 0]);
    expect(run('le')).toEqual([0, 1, 1]);
  });
});

void Tensor;
