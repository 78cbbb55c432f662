// When a CPU node's float result differs from the runtime's by exactly one step of its own output fake-quant, in a
// few elements, compareWithRuntime counts it as float rounding (roundedFromFloat), not a mismatch.
import { describe, expect, it } from 'vitest';
import { isOneStepRounding } from './compare-with-runtime.js';

const tol = { rtol: 1e-5, atol: 1e-6 };
const step = 0.0583;

describe('isOneStepRounding', () => {
  const qtk = Array.from({ length: 200 }, (_, i) => Math.fround(Math.round(i / 7) * step));

  it('one element one step off (and others within the tolerance) is rounding', () => {
    const rt = qtk.map((v, i) => (i === 17 ? v - step : v + 1e-7));
    expect(isOneStepRounding(qtk, rt, step, tol)).toBe(true);
  });

  it('two steps off, or half a step off, is not', () => {
    expect(
      isOneStepRounding(
        qtk,
        qtk.map((v, i) => (i === 17 ? v + 2 * step : v)),
        step,
        tol,
      ),
    ).toBe(false);
    expect(
      isOneStepRounding(
        qtk,
        qtk.map((v, i) => (i === 17 ? v + step / 2 : v)),
        step,
        tol,
      ),
    ).toBe(false);
  });

  it('more than 1 % of the elements one step off is not (a wrong scale, not rounding)', () => {
    const two = qtk.map((v, i) => (i === 3 || i === 9 ? v + step : v));
    expect(isOneStepRounding(qtk, two, step, tol)).toBe(true); // 2 of 200
    const three = qtk.map((v, i) => (i < 3 ? v + step : v));
    expect(isOneStepRounding(qtk, three, step, tol)).toBe(false); // 3 of 200
  });
});
