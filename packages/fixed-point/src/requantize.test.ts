import { describe, expect, it } from 'vitest';
import {
  planRequantizeInt16,
  planRequantizeWide,
  requantizeInto,
  requantizeValue,
  type RequantizePlan,
} from './requantize.js';

const f = Math.fround;
const plain = (p: RequantizePlan) => ({
  rule: p.rule,
  outDtype: p.outDtype,
  pre: [...p.pre],
  m: [...p.m],
  n: [...p.n],
});

describe('planRequantizeInt16 (bernoulli2)', () => {
  it('s_acc = 2^-15, s_out = 0.05: pre = ceil(log2(6.4)) = 3, fitMul(2^-12 / 0.05) = 20480 / 2^22', () => {
    const p = planRequantizeInt16(2 ** -15, 0.05, 'qint8');
    expect(plain(p)).toEqual({ rule: 'int16_intermediate', outDtype: 'qint8', pre: [3], m: [20480], n: [22] });
    // acc = 1000: t = 125, shrR(125·20480, 22) = floor(4657152 / 4194304) = 1 (real 0.61)
    expect(requantizeValue(1000, p)).toBe(1);
    expect(requantizeValue(-1000, p)).toBe(-1); // t = -125, (-2560000 + 2^21) / 2^22 = -0.11 -> -1 (real -0.61)
    expect(requantizeValue(100000, p)).toBe(61); // t = 12500 -> 61.53 -> 61 (real 61.04)
    expect(requantizeValue(1_000_000, p)).toBe(127);
    expect(requantizeValue(-1_000_000, p)).toBe(-128);
  });

  it('s_acc = 0.02·0.01 (float32 scales), s_out = 0.04: pre = 0 (s_out < 256·s_acc), m = rhu(0.005·2^22) = 20972', () => {
    const p = planRequantizeInt16(f(0.02) * f(0.01), 0.04, 'qint8');
    expect(plain(p)).toEqual({ rule: 'int16_intermediate', outDtype: 'qint8', pre: [0], m: [20972], n: [22] });
    expect(requantizeValue(1000, p)).toBe(5);
    // m·2^-22 = 0.0050001 is a hair above 0.005: -300 gives -1.50003 -> -2, -500 gives -2.50006 -> -3
    expect(requantizeValue(-300, p)).toBe(-2);
    expect(requantizeValue(300, p)).toBe(2);
    expect(requantizeValue(-500, p)).toBe(-3);
    expect(requantizeValue(-200, p)).toBe(-1);
  });

  it('s_acc = 2^-20, s_out = 1: pre = 12, fitMul(2^-8) = 16384 / 2^22', () => {
    const p = planRequantizeInt16(2 ** -20, 1, 'qint8');
    expect(plain(p)).toMatchObject({ pre: [12], m: [16384], n: [22] });
    expect(requantizeValue(5_000_000, p)).toBe(5); // shr -> 1220, 1220 / 256 = 4.77 -> 5
  });

  it('the int16 intermediate saturates where bayes does not', () => {
    // s_acc = 2^-15, s_out = 2^-10: pre = 0, m / 2^n = 16384 / 2^19 = 1/32
    const b2 = planRequantizeInt16(2 ** -15, 2 ** -10, 'qint16');
    const bayes = planRequantizeWide(2 ** -15, 2 ** -10, 'qint16');
    expect(plain(b2)).toMatchObject({ pre: [0], m: [16384], n: [19] });
    expect(plain(bayes)).toMatchObject({ pre: [0], m: [16384], n: [19] });
    expect(requantizeValue(40000, b2)).toBe(1024); // t = 32767 -> 1023.97 -> 1024
    expect(requantizeValue(40000, bayes)).toBe(1250);
    expect(requantizeValue(-40000, b2)).toBe(-1024); // t = -32768 -> -1024
    expect(requantizeValue(-40000, bayes)).toBe(-1250);
    expect(requantizeValue(32000, b2)).toBe(requantizeValue(32000, bayes)); // within int16 they agree
  });
});

describe('planRequantizeWide (bayes)', () => {
  it('s_acc = 2^-15, s_out = 0.05: fitMul(2^-15 / 0.05, 15, 62) = 20480 / 2^25, no pre-shift', () => {
    const p = planRequantizeWide(2 ** -15, 0.05, 'qint8');
    expect(plain(p)).toEqual({ rule: 'wide', outDtype: 'qint8', pre: [0], m: [20480], n: [25] });
    expect(requantizeValue(1000, p)).toBe(1);
    expect(requantizeValue(100000, p)).toBe(61);
    expect(requantizeValue(1_000_000, p)).toBe(127);
    expect(requantizeValue(-1_000_000, p)).toBe(-128);
  });

  it('splits a shift above 31: s_acc = 2^-20, s_out = 1 gives n = 34 -> pre = 3, n = 31', () => {
    const p = planRequantizeWide(2 ** -20, 1, 'qint8');
    expect(plain(p)).toMatchObject({ pre: [3], m: [16384], n: [31] });
    // shr(5e6, 3) = 625000; 625000·16384 / 2^31 = 4.77 -> 5
    expect(requantizeValue(5_000_000, p)).toBe(5);
    // shr(-5000001, 3) = -625001 (truncation towards -inf); -4.77 -> -5
    expect(requantizeValue(-5_000_001, p)).toBe(-5);
    // s_acc / s_out = 2^-39: n = 53 -> pre = 22
    expect(plain(planRequantizeWide(2 ** -40, 0.5, 'qint16'))).toMatchObject({ pre: [22], m: [16384], n: [31] });
  });

  it('negative accumulators round half up (towards +inf): ratio 1/2', () => {
    for (const plan of [
      planRequantizeWide(2 ** -8, 2 ** -7, 'qint8'),
      planRequantizeInt16(2 ** -8, 2 ** -7, 'qint8'),
    ]) {
      expect(plain(plan)).toMatchObject({ pre: [0], m: [16384], n: [15] });
      expect([-5, -3, -1, 1, 3, 5].map((a) => requantizeValue(a, plan) + 0)).toEqual([-2, -1, 0, 1, 2, 3]);
    }
  });

  it('records a warning when the ratio saturates the multiplier', () => {
    const warnings: string[] = [];
    const p = planRequantizeWide(1, 1 / 40000, 'qint8', (m) => warnings.push(m));
    expect(plain(p)).toMatchObject({ pre: [0], m: [32767], n: [0] });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/does not fit a 15-bit multiplier/);
    expect(requantizeValue(1, p)).toBe(127);
    const w2: string[] = [];
    planRequantizeInt16(1, 1 / 40000, 'qint8', (m) => w2.push(m));
    expect(w2).toHaveLength(1);
  });
});

describe('equal float32 scales', () => {
  it('is a pure saturating cast on both rules', () => {
    for (const plan of [planRequantizeWide(0.1, f(0.1), 'qint8'), planRequantizeInt16(0.1, f(0.1), 'qint8')]) {
      expect(plain(plan)).toMatchObject({ pre: [0], m: [1], n: [0] });
      expect([300, -300, -5, 127, -128, 0].map((a) => requantizeValue(a, plan))).toEqual([127, -128, -5, 127, -128, 0]);
    }
    // s_acc equal only after rounding to float32 still counts as equal
    expect(plain(planRequantizeWide(f(0.02) * f(0.01), f(f(0.02) * f(0.01)), 'qint16'))).toMatchObject({
      m: [1],
      n: [0],
    });
    expect(requantizeValue(40000, planRequantizeWide(0.5, 0.5, 'qint16'))).toBe(32767);
  });
});

describe('per-channel plans', () => {
  it('derives one (pre, m, n) per channel and applies it along the channel axis', () => {
    const so = f(0.1);
    const p = planRequantizeWide([2 ** -15, 2 ** -14, so], so, 'qint8');
    expect(plain(p)).toEqual({ rule: 'wide', outDtype: 'qint8', pre: [0, 0, 0], m: [20480, 20480, 1], n: [26, 25, 0] });
    // layout [outer = 2, channels = 3, inner = 2]
    const acc = [1000, -1000, 200000, -200000, 500, -500, 3000, 99999, -7, 7, 200, -200];
    const out = new Int8Array(acc.length);
    requantizeInto(acc, p, 2, out);
    const expected = acc.map((a, i) => requantizeValue(a, p, Math.floor(i / 2) % 3));
    expect([...out]).toEqual(expected);
    expect([...out]).toEqual([0, 0, 122, -122, 127, -128, 1, 31, 0, 0, 127, -128]);
  });

  it('bernoulli2 per channel: pre differs by channel', () => {
    const p = planRequantizeInt16([2 ** -15, 2 ** -20], 0.05, 'qint8');
    expect(plain(p)).toEqual({
      rule: 'int16_intermediate',
      outDtype: 'qint8',
      pre: [3, 8],
      m: [20480, 20480],
      n: [22, 22],
    });
  });

  it('requantizeInto matches requantizeValue on random accumulators (both rules, per tensor and per channel)', () => {
    let seed = 3;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const acc = Array.from({ length: 4 * 5 * 6 }, () => Math.round((rnd() - 0.5) * 2 ** (rnd() * 31)));
    const scales = Array.from({ length: 5 }, () => f(2 ** (-rnd() * 20)) * f(2 ** -7));
    for (const plan of [
      planRequantizeWide(scales, 0.03, 'qint8'),
      planRequantizeInt16(scales, 0.03, 'qint8'),
      planRequantizeWide(scales, 0.0001, 'qint16'),
      planRequantizeWide(scales[0]!, 0.001, 'qint8'),
      planRequantizeInt16(scales[1]!, 0.001, 'qint8'),
    ]) {
      const out = plan.outDtype === 'qint8' ? new Int8Array(acc.length) : new Int16Array(acc.length);
      requantizeInto(acc, plan, 6, out);
      const ch = (i: number) => (plan.m.length === 1 ? 0 : Math.floor(i / 6) % 5);
      expect([...out]).toEqual(acc.map((a, i) => requantizeValue(a, plan, ch(i))));
    }
  });

  it('rejects bad scales and layouts', () => {
    expect(() => planRequantizeWide([], 0.1, 'qint8')).toThrow(/at least one/);
    expect(() => planRequantizeWide(0, 0.1, 'qint8')).toThrow(/positive/);
    expect(() => planRequantizeInt16(0.1, -1, 'qint8')).toThrow(/output scale/);
    const p = planRequantizeWide([0.1, 0.2], 0.1, 'qint8');
    expect(() => requantizeInto([1, 2, 3], p, 1, new Int8Array(3))).toThrow(/channels/);
    expect(() => requantizeInto([1, 2], p, 1, new Int8Array(3))).toThrow(/holds/);
  });
});

describe('requantize warnings', () => {
  it('a ratio too small for any multiplier warns that the output is always 0', () => {
    const warnings: string[] = [];
    const plan = planRequantizeWide([1e-30], 1, 'qint8', (m) => warnings.push(m));
    expect(plan.m[0]).toBe(0);
    expect(requantizeValue(2147483647, plan)).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/zero multiplier.*always 0/);
  });
});
