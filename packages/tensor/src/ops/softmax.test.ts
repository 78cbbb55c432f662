import { describe, expect, it } from 'vitest';
import '../backends.js';
import '../tensor-methods.js';
import { randn, tensor } from '../creation.js';
import { DTypeError } from '../errors.js';
import { Generator } from '../random.js';
import type { Tensor } from '../tensor.js';
import { gradcheck } from '../testing/gradcheck.js';
import { logSoftmax, softmax } from './softmax.js';
import { permute } from './view.js';

/** Softmax along `axis` of a 3-d tensor by explicit index loops in float64 (no max shift needed for small inputs). */
function naive(x: Tensor, axis: number, log: boolean): number[] {
  const [d0, d1, d2] = x.shape as [number, number, number];
  const out: number[] = [];
  for (let i = 0; i < d0; i++)
    for (let j = 0; j < d1; j++)
      for (let k = 0; k < d2; k++) {
        let s = 0;
        for (let r = 0; r < x.shape[axis]!; r++) {
          const idx = [i, j, k];
          idx[axis] = r;
          s += Math.exp(x.at(...idx));
        }
        out.push(log ? x.at(i, j, k) - Math.log(s) : Math.exp(x.at(i, j, k)) / s);
      }
  return out;
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (!(Math.abs(actual[i]! - expected[i]!) <= tol))
      throw new Error(`index ${i}: got ${actual[i]}, expected ${expected[i]}`);
  }
}

describe('softmax and logSoftmax', () => {
  const x = randn([3, 4, 5], { generator: new Generator(3), std: 2 });

  for (const axis of [0, 1, 2]) {
    it(`match a direct computation along axis ${axis}`, () => {
      expectClose(softmax(x, axis).values(), naive(x, axis, false), 1e-6);
      expectClose(logSoftmax(x, axis).values(), naive(x, axis, true), 2e-6);
    });
  }

  it('default to the last axis and accept negative axes', () => {
    expect(softmax(x).toArray()).toEqual(softmax(x, 2).toArray());
    expect(x.logSoftmax(-2).toArray()).toEqual(logSoftmax(x, 1).toArray());
    expect(x.softmax().toArray()).toEqual(softmax(x, -1).toArray());
  });

  it('rows sum to one', () => {
    const y = softmax(x, 1);
    for (let i = 0; i < 3; i++)
      for (let k = 0; k < 5; k++) {
        let s = 0;
        for (let j = 0; j < 4; j++) s += y.at(i, j, k);
        expect(s).toBeCloseTo(1, 6);
      }
  });

  it('are stable for huge logits', () => {
    const big = tensor([
      [1000, 1001, 1002],
      [-1000, -1000, -1000],
    ]);
    const e = [Math.exp(-2), Math.exp(-1), 1];
    const z = e[0]! + e[1]! + e[2]!;
    expectClose(softmax(big).values(), [...e.map((v) => v / z), 1 / 3, 1 / 3, 1 / 3], 1e-7);
    expectClose(
      logSoftmax(big).values(),
      [...e.map((v) => Math.log(v / z)), -Math.log(3), -Math.log(3), -Math.log(3)],
      1e-6,
    );
  });

  it('read non-contiguous inputs', () => {
    const xt = permute(x, [2, 0, 1]);
    expect(xt.isContiguous()).toBe(false);
    expect(softmax(xt, 0).toArray()).toEqual(permute(softmax(x, 2), [2, 0, 1]).toArray());
    expect(logSoftmax(xt, -1).toArray()).toEqual(permute(logSoftmax(x, 1), [2, 0, 1]).toArray());
  });

  it('handle 0-d and 1-d inputs', () => {
    expect(softmax(tensor(3)).item()).toBe(1);
    expectClose(softmax(tensor([0, Math.log(3)])).values(), [0.25, 0.75], 1e-7);
  });

  it('need float input', () => {
    expect(() => softmax(tensor([1, 2], { dtype: 'int32' }))).toThrow(DTypeError);
  });

  for (const axis of [0, 1, -1]) {
    it(`gradients along axis ${axis}`, () => {
      const a = randn([3, 4, 5], { generator: new Generator(9) });
      expect(gradcheck((t) => softmax(t, axis), [a])).toEqual([]);
      expect(gradcheck((t) => logSoftmax(t, axis), [a])).toEqual([]);
    });
  }

  it('gradient of a composed use (softmax feeding a product)', () => {
    const a = randn([2, 6], { generator: new Generator(4) });
    const b = randn([2, 6], { generator: new Generator(5) });
    expect(gradcheck((p, q) => softmax(p).mul(q).sum(1), [a, b])).toEqual([]);
  });
});
