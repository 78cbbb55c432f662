import { describe, expect, it } from 'vitest';
import { planSumin, quantizeBiasInt32, quantizeBiasShifted16, suminTerm } from './bias.js';

describe('quantizeBiasInt32 (bayes)', () => {
  it('b_q = sat(R(b / s_acc[c]), qint32) per channel', () => {
    expect([
      ...quantizeBiasInt32([0.5, -0.25, 1e9, -1e9], [2 ** -10, 2 ** -12, 2 ** -10, 2 ** -10], 'half_up'),
    ]).toEqual([512, -1024, 2147483647, -2147483648]);
  });
  it('rounds halves with R; a single accumulator scale applies to every channel', () => {
    const b = [2.5 * 2 ** -10, -2.5 * 2 ** -10, -3.5 * 2 ** -10];
    expect([...quantizeBiasInt32(b, [2 ** -10], 'half_up')]).toEqual([3, -2, -3]);
    expect([...quantizeBiasInt32(b, [2 ** -10], 'half_even')]).toEqual([2, -2, -4]);
  });
  it('uses the float32 value of the bias', () => {
    // 0.1 as float32 is 0.100000001490116..., times 2^30 = 107374183.6 -> 107374184 (float64 0.1 gives 107374182.4 -> 107374182)
    expect([...quantizeBiasInt32([0.1], [2 ** -30], 'half_up')]).toEqual([107374184]);
  });
});

describe('quantizeBiasShifted16 (bernoulli2)', () => {
  it('bl = 0 when the bias fits 16 bits', () => {
    expect([...quantizeBiasShifted16([0.5, -0.5], [2 ** -10], 'half_up')]).toEqual([512, -512]);
  });
  it('bl > 0: the smallest shift whose rounded value fits, then shifted back', () => {
    // 100 / 2^-10 = 102400: bl = 2 (25600)
    expect([...quantizeBiasShifted16([100, -100], [2 ** -10], 'half_up')]).toEqual([102400, -102400]);
    // float32(100.1)·1024 = 102502.4: bl = 2, rhu(25625.6) = 25626 -> 102504
    expect([...quantizeBiasShifted16([100.1], [2 ** -10], 'half_up')]).toEqual([102504]);
    // 65533: bl = 1, 32766.5 -> rhu 32767 -> 65534; rhe 32766 -> 65532
    expect([...quantizeBiasShifted16([65533, -65533], [1], 'half_up')]).toEqual([65534, -65532]);
    expect([...quantizeBiasShifted16([65533], [1], 'half_even')]).toEqual([65532]);
    // 65535: bl = 1 gives 32767.5 -> 32768, too big; bl = 2: 16383.75 -> 16384 -> 65536
    expect([...quantizeBiasShifted16([65535], [1], 'half_up')]).toEqual([65536]);
    expect([...quantizeBiasShifted16([65535], [1], 'half_even')]).toEqual([65536]);
    expect([...quantizeBiasShifted16([-65535], [1], 'half_up')]).toEqual([-65534]); // bl = 1: -32767.5 -> -32767
  });
  it('saturates the shifted value to int32', () => {
    // 1e9 · 2^10: bl = 25 (30517.578 -> 30518), 30518 · 2^25 > 2^31
    expect([...quantizeBiasShifted16([1e9, -1e9], [2 ** -10], 'half_up')]).toEqual([2147483647, -2147483648]);
  });
  it('per channel', () => {
    expect([...quantizeBiasShifted16([100, 100], [2 ** -10, 2 ** -5], 'half_up')]).toEqual([102400, 3200]);
  });
});

describe('planSumin / suminTerm', () => {
  it('r < 32767: a 15-bit multiplier with a rounding shift', () => {
    // r = float32(0.05) · 2^15 = 1638.40002: fitMul -> 26214 / 2^4
    const p = planSumin(0.05, [2 ** -15]);
    expect({ m: [...p.m], n: [...p.n], k: [...p.k] }).toEqual({ m: [26214], n: [4], k: [-1] });
    expect(suminTerm(10, p, 0)).toBe(16384); // 262140 / 16 = 16383.75 -> 16384
    expect(suminTerm(-3, p, 0)).toBe(-4915); // -78642 / 16 = -4915.125 -> -4915
    expect(suminTerm(-5, p, 0)).toBe(-8192); // -131070 / 16 = -8191.875 -> -8192
    expect(suminTerm(0, p, 0)).toBe(0);
  });
  it('r >= 32767: e · rhu(r / 2^k) · 2^k with k = ceil(log2(r / 32767))', () => {
    // r = 2^20: k = 6 (2^20 / 2^5 = 32768 would not fit), mult = 16384
    const p = planSumin(1, [2 ** -20]);
    expect({ m: [...p.m], n: [...p.n], k: [...p.k] }).toEqual({ m: [16384], n: [0], k: [6] });
    expect(suminTerm(3, p, 0)).toBe(3 * 2 ** 20);
    expect(suminTerm(-128, p, 0)).toBe(-128 * 2 ** 20);
    // r = 32768: k = 1, mult = 16384
    const q = planSumin(0.5, [2 ** -16]);
    expect({ m: [...q.m], k: [...q.k] }).toEqual({ m: [16384], k: [1] });
    expect(suminTerm(-2, q, 0)).toBe(-65536);
    // r = 32767 exactly is the second branch with k = 0
    const e = planSumin(32767 / 32768, [2 ** -15]);
    expect({ m: [...e.m], k: [...e.k] }).toEqual({ m: [32767], k: [0] });
    expect(suminTerm(-3, e, 0)).toBe(-98301);
  });
  it('per channel, both branches in one plan', () => {
    const p = planSumin(1, [2 ** -20, 2 ** -2]);
    expect({ m: [...p.m], n: [...p.n], k: [...p.k] }).toEqual({ m: [16384, 16384], n: [0, 12], k: [6, -1] });
    expect(suminTerm(5, p, 1)).toBe(20); // r = 4
    expect(suminTerm(5, p, 0)).toBe(5 * 2 ** 20);
  });
});
