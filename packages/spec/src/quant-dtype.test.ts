import { describe, expect, it } from 'vitest';
import { FLOAT32_EPS, quantRange, resolveQuantRange, scaleFromRange, scalesFromRanges } from './quant-dtype.js';

describe('quant dtypes', () => {
  it('ranges', () => {
    expect(quantRange('qint8')).toEqual({ quantMin: -128, quantMax: 127 });
    expect(quantRange('qint16')).toEqual({ quantMin: -32768, quantMax: 32767 });
    expect(quantRange('qint32')).toEqual({ quantMin: -2147483648, quantMax: 2147483647 });
    expect(resolveQuantRange('qint8', -127, null)).toEqual({ quantMin: -127, quantMax: 127 });
    expect(() => resolveQuantRange('qint8', -200, 127)).toThrow(/not valid for qint8/);
    expect(() => resolveQuantRange('qint8', 0, 127)).toThrow(/quantMin < 0/);
  });
});

describe('scaleFromRange (march-semantics §0)', () => {
  it('divides the absolute maximum by 127.5 / 32767.5', () => {
    expect(scaleFromRange(-1, 2, 'qint8')).toBe(Math.fround(2 / 127.5));
    expect(scaleFromRange(-3, 2, 'qint8')).toBe(Math.fround(3 / 127.5));
    expect(scaleFromRange(-3, 2, 'qint16')).toBe(Math.fround(3 / 32767.5));
  });
  it('one-sided ranges use the side away from zero', () => {
    expect(scaleFromRange(0.5, 4, 'qint8')).toBe(Math.fround(4 / 127.5));
    expect(scaleFromRange(-4, -0.5, 'qint8')).toBe(Math.fround(4 / 127.5));
  });
  it('all zeros and tiny ranges floor at float32 eps', () => {
    expect(scaleFromRange(0, 0, 'qint8')).toBe(FLOAT32_EPS);
    expect(scaleFromRange(-1e-12, 1e-12, 'qint16')).toBe(FLOAT32_EPS);
    expect(FLOAT32_EPS).toBe(2 ** -23);
  });
  it('narrowed ranges change the divisor', () => {
    expect(scaleFromRange(-1, 1, { quantMin: -127, quantMax: 127 })).toBe(Math.fround(1 / 127));
  });
  it('rejects NaN and infinities', () => {
    expect(() => scaleFromRange(NaN, 1, 'qint8')).toThrow(/NaN/);
    expect(() => scaleFromRange(-Infinity, 1, 'qint8')).toThrow(/infinite/);
  });
  it('per channel', () => {
    const s = scalesFromRanges([-1, 0, -2], [1, 0, 0.5], 'qint8');
    expect(Array.from(s)).toEqual([Math.fround(1 / 127.5), FLOAT32_EPS, Math.fround(2 / 127.5)]);
  });
});
