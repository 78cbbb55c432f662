import { describe, expect, it } from 'vitest';
import { PairSums, sqnrDb } from './pair-sums.js';

describe('PairSums', () => {
  it('adds the products, energies and errors of each pair', () => {
    const s = new PairSums();
    s.add(1, 2);
    s.add(-3, 0.5);
    s.add(2, 2);
    expect({ ...s }).toEqual({
      dot: 1 * 2 + -3 * 0.5 + 2 * 2,
      xEnergy: 1 + 9 + 4,
      yEnergy: 4 + 0.25 + 4,
      squaredError: 1 + 12.25 + 0,
      absError: 1 + 3.5 + 0,
      maxAbsError: 3.5,
      yMaxAbs: 2,
    });
  });

  it('starts at zero, and a NaN stays in the maxima', () => {
    const s = new PairSums();
    expect([s.dot, s.squaredError, s.maxAbsError, s.yMaxAbs]).toEqual([0, 0, 0, 0]);
    s.add(Number.NaN, 1);
    s.add(5, -7);
    expect([s.maxAbsError, s.yMaxAbs, s.xEnergy]).toEqual([Number.NaN, 7, Number.NaN]);
  });

  it('gives the SQNR of a measured signal against its reference in dB', () => {
    // signal 3² + 4² = 25, noise 0.5² = 0.25: 10·log10(100) = 20 dB
    expect(sqnrDb([3, 4], [3.5, 4])).toBeCloseTo(20, 12);
    expect(sqnrDb([1, -2], [1, -2])).toBe(Number.POSITIVE_INFINITY);
    expect(sqnrDb([0, 0], [0, 0])).toBeNaN();
  });
});
