import { describe, expect, it } from 'vitest';
import { Generator, InvalidArgumentError, ShapeError, layerNorm, randn, tensor, type Tensor } from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';
import { expectAllNear } from '../testing/expect-near.js';

function naive(x: Tensor, d: number, w: Tensor | null, b: Tensor | null, eps: number): number[] {
  const v = x.toArray();
  const out: number[] = [];
  for (let r = 0; r < v.length / d; r++) {
    const row = v.slice(r * d, (r + 1) * d);
    const m = row.reduce((a, c) => a + c, 0) / d;
    const variance = row.reduce((a, c) => a + (c - m) ** 2, 0) / d;
    row.forEach((c, j) => {
      out.push(((c - m) / Math.sqrt(variance + eps)) * (w ? w.toArray()[j]! : 1) + (b ? b.toArray()[j]! : 0));
    });
  }
  return out;
}

const expectNear = (a: number[], b: number[], tol = 1e-4) => expectAllNear(a, b, tol);

describe('layerNorm', () => {
  it('hand-computed row', () => {
    const s = 1 / Math.sqrt(2 / 3 + 1e-5);
    expectNear(layerNorm(tensor([[1, 2, 3]]), 3).toArray(), [-s, 0, s], 1e-6);
  });
  it('matches direct loops over one and two normalized dims', () => {
    const g = new Generator(1);
    const x = randn([2, 3, 4, 5], { generator: g, mean: 2, std: 3 });
    const w = randn([4, 5], { generator: g });
    const b = randn([4, 5], { generator: g });
    expectNear(layerNorm(x, [4, 5], w, b).toArray(), naive(x, 20, w, b, 1e-5));
    const w1 = randn([5], { generator: g });
    expectNear(layerNorm(x, 5, w1, null, 1e-3).toArray(), naive(x, 5, w1, null, 1e-3));
  });
  it('gradients to input, weight and bias', () => {
    const g = new Generator(2);
    const x = randn([3, 2, 4], { generator: g });
    const w = randn([2, 4], { generator: g });
    const b = randn([2, 4], { generator: g });
    expect(gradcheck((xx, ww, bb) => layerNorm(xx!, [2, 4], ww, bb), [x, w, b])).toEqual([]);
  });
  it('gradient without affine parameters, and with weight only', () => {
    const g = new Generator(3);
    const x = randn([4, 5], { generator: g });
    expect(gradcheck((xx) => layerNorm(xx!, 5), [x])).toEqual([]);
    const w = randn([5], { generator: g });
    expect(gradcheck((xx, ww) => layerNorm(xx!, 5, ww), [x, w])).toEqual([]);
  });
  it('validates shapes and eps', () => {
    const x = randn([2, 3]);
    expect(() => layerNorm(x, 2)).toThrow(ShapeError);
    expect(() => layerNorm(x, [2, 3, 1])).toThrow(ShapeError);
    expect(() => layerNorm(x, 3, randn([2]))).toThrow(/weight must have the normalized shape \[3\]/);
    expect(() => layerNorm(x, 3, null, null, 0)).toThrow(InvalidArgumentError);
  });
});
