import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from './errors.js';
import { ROUNDING_MODES, type RoundingMode, roundHalfEven, roundHalfUp, roundingFunction } from './rounding.js';

describe('rounding modes', () => {
  it('rounds halves up or to even, and other values to the nearest integer', () => {
    const v = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6];
    expect(v.map(roundHalfUp)).toEqual([-2, -1, 0, 1, 2, 3, 2, -3]);
    expect(v.map(roundHalfEven)).toEqual([-2, -2, 0, 0, 2, 2, 2, -3]);
  });

  it('gives the function of each mode and refuses a name that is none', () => {
    expect(ROUNDING_MODES).toEqual(['half_up', 'half_even']);
    expect(roundingFunction('half_up')(2.5)).toBe(3);
    expect(roundingFunction('half_even')(2.5)).toBe(2);
    expect(() => roundingFunction('nearest' as RoundingMode)).toThrow(InvalidArgumentError);
    expect(() => roundingFunction('nearest' as RoundingMode)).toThrow(
      "'nearest' is not a rounding mode; use one of 'half_up', 'half_even'",
    );
  });
});
