import { describe, expect, it } from 'vitest';
import { fitMul } from './fit-mul.js';
import { rhu } from './integer-math.js';

/** The definition, by brute force: the largest n <= maxShift with rhu(|r|·2^n) <= 2^bits - 1. */
function naive(r: number, bits: number, maxShift: number) {
  const limit = 2 ** bits - 1;
  const a = Math.abs(r);
  if (rhu(a) > limit) return { m: Math.sign(r) * limit, n: 0, saturated: true };
  let n = 0;
  while (n < maxShift && rhu(a * 2 ** (n + 1)) <= limit) n++;
  return { m: (r < 0 ? -1 : 1) * rhu(a * 2 ** n), n, saturated: false };
}

describe('fitMul', () => {
  it('exact values for a few ratios (bits = 15)', () => {
    expect(fitMul(0.5, 15, 31)).toEqual({ m: 16384, n: 15, saturated: false }); // 0.5·2^16 = 32768 overflows
    expect(fitMul(1, 15, 31)).toEqual({ m: 16384, n: 14, saturated: false });
    expect(fitMul(0.3, 15, 31)).toEqual({ m: 19661, n: 16, saturated: false }); // 19660.8 -> 19661; 2^17 gives 39321.6
    expect(fitMul(3, 15, 31)).toEqual({ m: 24576, n: 13, saturated: false });
    expect(fitMul(1000, 15, 31)).toEqual({ m: 32000, n: 5, saturated: false });
    expect(fitMul(0.3, 8, 31)).toEqual({ m: 154, n: 9, saturated: false }); // 153.6 -> 154; 2^10 gives 307.2
  });

  it('takes the largest n whose ROUNDED multiplier fits (rounding up can overflow)', () => {
    // r·2^10 = 32767.5 rounds to 32768 > 32767, so n = 9 and m = rhu(16383.75) = 16384
    expect(fitMul(32767.5 / 1024, 15, 31)).toEqual({ m: 16384, n: 9, saturated: false });
    // r·2^10 = 32767.4 rounds to 32767: n = 10
    expect(fitMul(32767.4 / 1024, 15, 31)).toEqual({ m: 32767, n: 10, saturated: false });
  });

  it('stops at maxShift', () => {
    expect(fitMul(1e-6, 15, 31)).toEqual({ m: 2147, n: 31, saturated: false }); // 2147.48
    expect(fitMul(1e-6, 15, 62)).toEqual({ m: 17180, n: 34, saturated: false }); // 17179.87; 2^35 gives 34359.7
    expect(fitMul(0.5, 15, 3)).toEqual({ m: 4, n: 3, saturated: false });
    expect(fitMul(0.3, 15, 0)).toEqual({ m: 0, n: 0, saturated: false });
  });

  it('tiny ratios: the shift limit leaves m small, down to 0 (the ratio is below what 2^-maxShift resolves)', () => {
    expect(fitMul(2 ** -40, 15, 62)).toEqual({ m: 16384, n: 54, saturated: false });
    expect(fitMul(1e-9, 15, 31)).toEqual({ m: 2, n: 31, saturated: false }); // 2.147
    expect(fitMul(1e-12, 15, 31)).toEqual({ m: 0, n: 31, saturated: false }); // 0.0021
    expect(fitMul(0, 15, 31)).toEqual({ m: 0, n: 31, saturated: false });
  });

  it('saturates when even n = 0 overflows, and flags it', () => {
    expect(fitMul(40000, 15, 31)).toEqual({ m: 32767, n: 0, saturated: true });
    expect(fitMul(32767.5, 15, 31)).toEqual({ m: 32767, n: 0, saturated: true }); // rhu -> 32768
    expect(fitMul(32767.4, 15, 31)).toEqual({ m: 32767, n: 0, saturated: false });
    expect(fitMul(300, 8, 31)).toEqual({ m: 255, n: 0, saturated: true });
  });

  it('a negative ratio fits |r| and negates m', () => {
    expect(fitMul(-0.3, 15, 31)).toEqual({ m: -19661, n: 16, saturated: false });
    expect(fitMul(-0.5, 15, 31)).toEqual({ m: -16384, n: 15, saturated: false });
    expect(fitMul(-40000, 15, 31)).toEqual({ m: -32767, n: 0, saturated: true });
    expect(fitMul(-32767.5 / 1024, 15, 31)).toEqual({ m: -16384, n: 9, saturated: false });
  });

  it('agrees with the brute-force definition over many ratios and shift limits', () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 3000; i++) {
      const r = (rnd() < 0.5 ? -1 : 1) * 2 ** (rnd() * 60 - 45) * (1 + rnd());
      const maxShift = [0, 7, 31, 62][i % 4]!;
      const bits = [15, 15, 8, 20][(i >> 2) % 4]!;
      expect(fitMul(r, bits, maxShift)).toEqual(naive(r, bits, maxShift));
    }
  });

  it('rejects invalid arguments', () => {
    expect(() => fitMul(Number.NaN, 15, 31)).toThrow(/finite/);
    expect(() => fitMul(Infinity, 15, 31)).toThrow(/finite/);
    expect(() => fitMul(0.5, 0, 31)).toThrow(/bits/);
    expect(() => fitMul(0.5, 15, 64)).toThrow(/maxShift/);
    expect(() => fitMul(0.5, 15, -1)).toThrow(/maxShift/);
  });
});
