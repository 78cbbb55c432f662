import { describe, expect, it } from 'vitest';
import {
  Generator,
  InvalidArgumentError,
  ShapeError,
  batchNorm,
  ones,
  rand,
  randn,
  tensor,
  zeros,
  type Tensor,
} from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';
import { expectAllNear } from '../testing/expect-near.js';

/** Per-channel mean and biased variance by direct loops over [N, C, S]. */
function stats(x: Tensor): { mean: number[]; variance: number[] } {
  const [N, C] = x.shape as number[];
  const S = x.size / (N! * C!);
  const v = x.toArray();
  const mean: number[] = [];
  const variance: number[] = [];
  for (let c = 0; c < C!; c++) {
    const vals: number[] = [];
    for (let n = 0; n < N!; n++) for (let i = 0; i < S; i++) vals.push(v[(n * C! + c) * S + i]!);
    const m = vals.reduce((a, b) => a + b, 0) / vals.length;
    mean.push(m);
    variance.push(vals.reduce((a, b) => a + (b - m) ** 2, 0) / vals.length);
  }
  return { mean, variance };
}

function naive(
  x: Tensor,
  mean: number[],
  variance: number[],
  w: Tensor | null,
  b: Tensor | null,
  eps: number,
): number[] {
  const [N, C] = x.shape as number[];
  const S = x.size / (N! * C!);
  const v = x.toArray();
  const out: number[] = [];
  for (let n = 0; n < N!; n++)
    for (let c = 0; c < C!; c++)
      for (let i = 0; i < S; i++) {
        const xh = (v[(n * C! + c) * S + i]! - mean[c]!) / Math.sqrt(variance[c]! + eps);
        out.push(xh * (w ? w.toArray()[c]! : 1) + (b ? b.toArray()[c]! : 0));
      }
  return out;
}

const expectNear = (a: number[], b: number[], tol = 1e-4) => expectAllNear(a, b, tol);

describe('batchNorm forward', () => {
  it('hand-computed [N=2, C=1] training step and running-stat update', () => {
    const x = tensor([[1], [3]]);
    const rm = zeros([1]);
    const rv = ones([1]);
    const y = batchNorm(x, rm, rv, null, null, { training: true });
    expectNear(y.toArray(), [-1 / Math.sqrt(1 + 1e-5), 1 / Math.sqrt(1 + 1e-5)], 1e-6);
    // batch mean 2, unbiased variance 2, momentum 0.1
    expectNear(rm.toArray(), [0.2], 1e-6);
    expectNear(rv.toArray(), [1.1], 1e-6);
  });
  for (const shape of [
    [6, 3],
    [4, 3, 5],
    [3, 2, 4, 5],
    [2, 3, 2, 3, 2],
  ]) {
    it(`training on [${shape.join(', ')}] with weight and bias; running stats follow PyTorch's convention`, () => {
      const g = new Generator(1);
      const C = shape[1]!;
      const x = randn(shape, { generator: g, mean: 3, std: 2 });
      const w = randn([C], { generator: g });
      const b = randn([C], { generator: g });
      const rm0 = randn([C], { generator: g });
      const rv0 = rand([C], { generator: g, low: 0.5, high: 2 });
      const rm = rm0.clone();
      const rv = rv0.clone();
      const y = batchNorm(x, rm, rv, w, b, { training: true, momentum: 0.3, eps: 1e-3 });
      const { mean, variance } = stats(x);
      expectNear(y.toArray(), naive(x, mean, variance, w, b, 1e-3));
      const M = x.size / C;
      expectNear(
        rm.toArray(),
        rm0.toArray().map((r, c) => 0.7 * r + 0.3 * mean[c]!),
        1e-5,
      );
      expectNear(
        rv.toArray(),
        rv0.toArray().map((r, c) => 0.7 * r + (0.3 * variance[c]! * M) / (M - 1)),
        1e-5,
      );
    });
  }
  it('evaluation uses running stats and leaves them alone', () => {
    const g = new Generator(2);
    const x = randn([2, 3, 4], { generator: g });
    const rm = randn([3], { generator: g });
    const rv = rand([3], { generator: g, low: 0.5, high: 2 });
    const before = [...rm.toArray(), ...rv.toArray()];
    const w = randn([3], { generator: g });
    const y = batchNorm(x, rm, rv, w, null);
    expectNear(y.toArray(), naive(x, rm.toArray(), rv.toArray(), w, null, 1e-5));
    expect([...rm.toArray(), ...rv.toArray()]).toEqual(before);
  });
  it('training without running stats', () => {
    const x = randn([4, 2, 3], { generator: new Generator(3) });
    const { mean, variance } = stats(x);
    expectNear(
      batchNorm(x, null, null, null, null, { training: true }).toArray(),
      naive(x, mean, variance, null, null, 1e-5),
    );
  });
});

describe('batchNorm gradients', () => {
  it('training, 4-d, weight and bias', () => {
    const g = new Generator(4);
    const x = randn([3, 2, 3, 2], { generator: g });
    const w = randn([2], { generator: g });
    const b = randn([2], { generator: g });
    const rm = zeros([2]);
    const rv = ones([2]);
    expect(gradcheck((xx, ww, bb) => batchNorm(xx!, rm, rv, ww, bb, { training: true }), [x, w, b])).toEqual([]);
  });
  it('training, 2-d, no affine parameters', () => {
    const x = randn([5, 3], { generator: new Generator(5) });
    expect(gradcheck((xx) => batchNorm(xx!, null, null, null, null, { training: true }), [x])).toEqual([]);
  });
  it('evaluation, 3-d', () => {
    const g = new Generator(6);
    const x = randn([2, 3, 4], { generator: g });
    const w = randn([3], { generator: g });
    const b = randn([3], { generator: g });
    const rm = randn([3], { generator: g });
    const rv = rand([3], { generator: g, low: 0.5, high: 2 });
    expect(gradcheck((xx, ww, bb) => batchNorm(xx!, rm, rv, ww, bb), [x, w, b])).toEqual([]);
  });
});

describe('batchNorm validation', () => {
  it('rejects bad shapes and options', () => {
    const x = randn([2, 3, 4]);
    expect(() => batchNorm(randn([4]), null, null, null, null, { training: true })).toThrow(ShapeError);
    expect(() => batchNorm(x, zeros([2]), ones([2]))).toThrow(/runningMean must have shape \[3\]/);
    expect(() => batchNorm(x, zeros([3]), null)).toThrow(InvalidArgumentError);
    expect(() => batchNorm(x, null, null)).toThrow(/evaluation mode needs runningMean/);
    expect(() => batchNorm(randn([1, 3]), null, null, null, null, { training: true })).toThrow(
      /more than one value per channel/,
    );
    expect(() => batchNorm(x, zeros([3]), ones([3]), null, null, { momentum: 2 })).toThrow(InvalidArgumentError);
  });
});
