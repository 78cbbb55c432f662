import * as T from '@qtk/tensor';
import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import * as nl from './nonlinear-functions.js';

const xs = Float32Array.from({ length: 161 }, (_, i) => (i - 80) / 10); // −8 … 8 in steps of 0.1, float32
const t = (a: Float32Array): Tensor => new Tensor({ data: a, shape: [a.length], dtype: 'float32' });

/** The catalogue agrees with the float op of @qtk/tensor (float32 results) on the float32 inputs. */
function agrees(fn: nl.NonlinearFunction, op: (x: Tensor) => Tensor, inputs: Float32Array = xs): void {
  const y = op(t(inputs)).values();
  for (let i = 0; i < inputs.length; i++) {
    const want = y[i]!;
    const got = fn.f(inputs[i]!);
    if (Number.isNaN(want)) continue; // out of domain: checked separately
    if (!Number.isFinite(want)) expect(got, `${fn.name}(${inputs[i]})`).toBe(want);
    else
      expect(Math.abs(got - want), `${fn.name}(${inputs[i]})`).toBeLessThanOrEqual(2e-7 * Math.max(1, Math.abs(want)));
  }
}

describe('nonlinear function catalogue', () => {
  it('matches the float ops of @qtk/tensor that QAT simulates', () => {
    agrees(nl.sigmoid, T.sigmoid);
    agrees(nl.tanh, T.tanh);
    agrees(nl.exp, T.exp);
    agrees(nl.silu, T.silu);
    agrees(nl.gelu(), (x) => T.gelu(x));
    agrees(nl.gelu('tanh'), (x) => T.gelu(x, { approximate: 'tanh' }));
    agrees(
      nl.reciprocal,
      T.reciprocal,
      xs.filter((v) => v !== 0),
    );
    agrees(nl.sqrt, T.sqrt);
    agrees(nl.rsqrt, T.rsqrt);
    agrees(nl.log, T.log);
    agrees(nl.pow(2), (x) => T.pow(x, 2));
    agrees(nl.pow(3), (x) => T.pow(x, 3));
    agrees(nl.pow(0.5), (x) => T.pow(x, 0.5));
    agrees(nl.softplus(), (x) => T.softplus(x));
    agrees(nl.softplus(2, 5), (x) => T.softplus(x, 2, 5));
    agrees(nl.elu(0.5), (x) => T.elu(x, 0.5));
    agrees(nl.leakyRelu(0.1), (x) => T.leakyRelu(x, 0.1));
    agrees(nl.hardsigmoid, T.hardsigmoid);
    agrees(nl.hardswish, T.hardswish);
  });

  it('has the reference values of functions without a float op', () => {
    expect(nl.sin.f(Math.PI / 6)).toBeCloseTo(0.5, 15);
    expect(nl.cos.f(Math.PI / 3)).toBeCloseTo(0.5, 15);
    // erf(0.5) = 0.5204998778130465, erf(2) = 0.9953222650189527 (the float path's erfc is good to 1.2e-7)
    expect(Math.abs(nl.erf.f(0.5) - 0.5204998778130465)).toBeLessThan(2e-7);
    expect(Math.abs(nl.erf.f(-2) + 0.9953222650189527)).toBeLessThan(2e-7);
    expect(nl.gelu().f(1)).toBeCloseTo(0.8413447460685429, 6);
    expect(nl.softplus(1, 20).f(20.5)).toBe(20.5); // linear above the threshold, as PyTorch
    expect(nl.softplus(1, 20).f(19)).toBeCloseTo(19 + Math.log1p(Math.exp(-19)), 12);
    expect(nl.hardswish.f(1)).toBeCloseTo(4 / 6, 15);
    expect(nl.hardsigmoid.f(-3)).toBe(0);
    expect(nl.hardsigmoid.f(3)).toBe(1);
  });

  it('takes the limit at 0+ outside the domain, never NaN', () => {
    expect(nl.log.f(0)).toBe(-Infinity);
    expect(nl.log.f(-1)).toBe(-Infinity);
    expect(nl.sqrt.f(-4)).toBe(0);
    expect(nl.rsqrt.f(0)).toBe(Infinity);
    expect(nl.rsqrt.f(-4)).toBe(Infinity);
    expect(nl.reciprocal.f(0)).toBe(Infinity);
    expect(nl.reciprocal.f(-0.5)).toBe(-2);
    expect(nl.pow(0.5).f(-1)).toBe(0);
    expect(nl.pow(-0.5).f(-1)).toBe(Infinity);
    expect(nl.pow(-1).f(0)).toBe(Infinity);
    expect(nl.pow(-1).f(-2)).toBe(-0.5);
    expect(nl.pow(3).f(-2)).toBe(-8);
    for (const fn of nl.NONLINEAR_FUNCTIONS) {
      for (const x of [-1e6, -3, -1, -1e-9, 0, 1e-9, 1, 3, 1e6])
        expect(Number.isNaN(fn.f(x)), `${fn.name}(${x})`).toBe(false);
    }
  });

  it('flags exactly the odd functions, and they are exactly odd', () => {
    const odd = nl.NONLINEAR_FUNCTIONS.filter((f) => f.odd).map((f) => f.name);
    expect(odd).toEqual(['tanh', 'reciprocal', 'sin', 'erf']);
    expect(nl.pow(3).odd).toBe(true);
    expect(nl.pow(-1).odd).toBe(true);
    expect(nl.pow(2).odd).toBe(false);
    expect(nl.pow(0.5).odd).toBe(false);
    expect(nl.leakyRelu(1).odd).toBe(true);
    for (const fn of [...nl.NONLINEAR_FUNCTIONS.filter((f) => f.odd), nl.pow(3)]) {
      for (const x of [0.001, 0.3, 1, 2.5, 7]) expect(fn.f(-x), `${fn.name}(-${x})`).toBe(-fn.f(x));
    }
  });

  it('names parameters and rejects invalid ones', () => {
    expect(nl.pow(2).name).toBe('pow(2)');
    expect(nl.softplus(2, 5).name).toBe('softplus(2,5)');
    expect(nl.elu(0.5).name).toBe('elu(0.5)');
    expect(nl.leakyRelu(0.2).name).toBe('leaky_relu(0.2)');
    expect(() => nl.softplus(0)).toThrow(/beta/);
    expect(() => nl.pow(Number.NaN)).toThrow(/exponent/);
    expect(() => nl.gelu('fast' as 'tanh')).toThrow(/approximate/);
  });
});
