import { describe, expect, it } from 'vitest';
import { clampInt, intRange, rhe, rhu, roundReal, sat, shr, shrR } from './integer-math.js';

describe('rhu (round half up, floor(v + 0.5))', () => {
  it('rounds halves towards +inf, on both signs', () => {
    expect([2.5, 1.5, 0.5, -0.5, -1.5, -2.5].map(rhu)).toEqual([3, 2, 1, 0, -1, -2]);
  });
  it('rounds non-halves to the nearest integer', () => {
    expect([2.4, 2.6, -2.4, -2.6, -0.4, 0.49999].map((v) => rhu(v) + 0)).toEqual([2, 3, -2, -3, 0, 0]);
  });
});

describe('rhe (round half to even)', () => {
  it('rounds halves to the even neighbour, on both signs', () => {
    expect([2.5, 3.5, 0.5, -0.5, -1.5, -2.5, -3.5].map((v) => rhe(v) + 0)).toEqual([2, 4, 0, 0, -2, -2, -4]);
  });
  it('rounds non-halves to the nearest integer', () => {
    expect([2.4, 2.6, -2.4, -2.6, 7].map(rhe)).toEqual([2, 3, -2, -3, 7]);
  });
  it('roundReal picks the mode', () => {
    expect(roundReal(2.5, 'half_up')).toBe(3);
    expect(roundReal(2.5, 'half_even')).toBe(2);
    expect(roundReal(-2.5, 'half_up')).toBe(-2);
    expect(roundReal(-3.5, 'half_even')).toBe(-4);
  });
});

describe('shr / shrR on negatives', () => {
  it('shr is floor(v / 2^n): truncates towards -inf', () => {
    expect(shr(5, 0)).toBe(5);
    expect(shr(-1, 1)).toBe(-1);
    expect(shr(-3, 1)).toBe(-2);
    expect(shr(-4, 2)).toBe(-1);
    expect(shr(-5, 2)).toBe(-2);
    expect(shr(7, 1)).toBe(3);
    expect(shr(-(2 ** 31), 31)).toBe(-1);
  });
  it('shrR rounds half up: -2.5 -> -2, -1.5 -> -1, 2.5 -> 3', () => {
    expect(shrR(7, 0)).toBe(7);
    expect(shrR(-5, 1)).toBe(-2); // -2.5
    expect(shrR(-3, 1)).toBe(-1); // -1.5
    expect(shrR(-1, 1) + 0).toBe(0); // -0.5
    expect(shrR(5, 1)).toBe(3); // 2.5
    expect(shrR(-6, 2)).toBe(-1); // -1.5
    expect(shrR(-7, 2)).toBe(-2); // -1.75
    expect(shrR(-9, 2)).toBe(-2); // -2.25
    expect(shrR(2 ** 40 + 2 ** 9, 10)).toBe(2 ** 30 + 1); // exact beyond 32 bits
  });
});

describe('sat / intRange', () => {
  it('clamps to each dtype', () => {
    expect([sat(200, 'qint8'), sat(-200, 'qint8'), sat(127, 'qint8'), sat(-128, 'qint8')]).toEqual([
      127, -128, 127, -128,
    ]);
    expect([sat(40000, 'qint16'), sat(-40000, 'qint16'), sat(-5, 'qint16')]).toEqual([32767, -32768, -5]);
    expect([sat(2 ** 31, 'qint32'), sat(-(2 ** 31) - 1, 'qint32')]).toEqual([2147483647, -2147483648]);
    expect([sat(2, 'qbool'), sat(-1, 'qbool'), sat(1, 'qbool')]).toEqual([1, 0, 1]);
    expect(clampInt(9, -3, 4)).toBe(4);
    expect(clampInt(-9, -3, 4)).toBe(-3);
  });
  it('intRange lists the ranges and rejects an unknown dtype', () => {
    expect(intRange('qint8')).toEqual({ min: -128, max: 127 });
    expect(intRange('qint16')).toEqual({ min: -32768, max: 32767 });
    expect(() => intRange('qint4' as never)).toThrow(/unknown quantized dtype/);
  });
});
