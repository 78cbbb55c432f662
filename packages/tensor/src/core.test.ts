import { describe, expect, it } from 'vitest';
import {
  add,
  arange,
  div,
  linear,
  matmul,
  mul,
  noGrad,
  randn,
  reshape,
  sub,
  sum,
  tensor,
  Generator,
  ShapeError,
  pow,
  mean,
  permute,
  expand,
} from './index.js';
import { gradcheck } from './testing/gradcheck.js';

const gen = () => new Generator(7);

describe('broadcasting arithmetic', () => {
  it('adds [2,3] and [3] like NumPy', () => {
    const a = tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const b = tensor([10, 20, 30]);
    expect(add(a, b).toArray()).toEqual([11, 22, 33, 14, 25, 36]);
    expect(add(a, b).shape).toEqual([2, 3]);
  });
  it('broadcasts [2,1] against [1,3] and a scalar', () => {
    const a = tensor([[1], [2]]);
    const b = tensor([[1, 2, 3]]);
    expect(mul(a, b).toArray()).toEqual([1, 2, 3, 2, 4, 6]);
    expect(sub(a, 1).toArray()).toEqual([0, 1]);
  });
  it('works on non-contiguous views', () => {
    const a = permute(arange(6).reshape([2, 3]), [1, 0]);
    expect(a.isContiguous()).toBe(false);
    expect(add(a, tensor([[0, 100]])).toArray()).toEqual([0, 103, 1, 104, 2, 105]);
  });
  it('rejects incompatible shapes with a ShapeError naming both', () => {
    expect(() => add(tensor([1, 2]), tensor([1, 2, 3]))).toThrow(ShapeError);
    expect(() => add(tensor([1, 2]), tensor([1, 2, 3]))).toThrow(/\[2\] and \[3\]/);
  });
  it('keeps integer arithmetic in integers', () => {
    const a = tensor([7, -7], { dtype: 'int32' });
    const r = div(a, tensor([2], { dtype: 'int32' }));
    expect(r.dtype).toBe('int32');
    expect(r.toArray()).toEqual([3, -3]);
  });
});

describe('reductions and views', () => {
  it('sums over axes with and without keepdim', () => {
    const x = arange(24).reshape([2, 3, 4]);
    expect(sum(x).item()).toBe(276);
    expect(sum(x, 1).toArray()).toEqual([12, 15, 18, 21, 48, 51, 54, 57]);
    expect(sum(x, [0, 2], true).shape).toEqual([1, 3, 1]);
    expect(sum(x, [0, 2]).toArray()).toEqual([60, 92, 124]);
    expect(mean(x, -1).toArray()).toEqual([1.5, 5.5, 9.5, 13.5, 17.5, 21.5]);
  });
  it('expand is a zero-copy view', () => {
    const x = tensor([1, 2, 3]);
    const e = expand(x, [2, 3]);
    expect(e.data).toBe(x.data);
    expect(e.toArray()).toEqual([1, 2, 3, 1, 2, 3]);
  });
  it('reshape infers -1', () => {
    expect(reshape(arange(12), [3, -1]).shape).toEqual([3, 4]);
    expect(() => reshape(arange(12), [5, -1])).toThrow(ShapeError);
  });
});

describe('matmul and linear', () => {
  it('multiplies matrices', () => {
    const a = tensor([
      [1, 2],
      [3, 4],
    ]);
    const b = tensor([
      [5, 6],
      [7, 8],
    ]);
    expect(matmul(a, b).toArray()).toEqual([19, 22, 43, 50]);
  });
  it('broadcasts batch dimensions and handles 1-d operands', () => {
    const a = randn([2, 1, 3, 4], { generator: gen() });
    const b = randn([5, 4, 2], { generator: gen() });
    const y = matmul(a, b);
    expect(y.shape).toEqual([2, 5, 3, 2]);
    const ref = (i: number, j: number, r: number, c: number) => {
      let s = 0;
      for (let k = 0; k < 4; k++) s += a.at(i, 0, r, k) * b.at(j, k, c);
      return s;
    };
    expect(y.at(1, 3, 2, 1)).toBeCloseTo(ref(1, 3, 2, 1), 5);
    expect(
      matmul(
        tensor([1, 2]),
        tensor([
          [1, 0],
          [0, 1],
        ]),
      ).toArray(),
    ).toEqual([1, 2]);
  });
  it('linear equals x·Wᵀ + b', () => {
    const x = tensor([[1, 2, 3]]);
    const w = tensor([
      [1, 0, 0],
      [0, 1, 1],
    ]);
    const b = tensor([0.5, -1]);
    expect(linear(x, w, b).toArray()).toEqual([1.5, 4]);
  });
});

describe('autograd against finite differences', () => {
  it('add/sub/mul/div with broadcasting', () => {
    const a = randn([3, 4], { generator: gen() });
    const b = randn([4], { generator: gen() }).add(3);
    expect(gradcheck((x, y) => div(mul(add(x, y), sub(x, y)), y), [a, b])).toEqual([]);
  });
  it('pow with tensor exponent', () => {
    const a = randn([5], { generator: gen() }).abs().add(0.5);
    const b = randn([5], { generator: gen() });
    expect(gradcheck((x, y) => pow(x, y), [a, b])).toEqual([]);
  });
  it('sum, mean, reshape, permute, expand', () => {
    const a = randn([2, 3, 4], { generator: gen() });
    expect(
      gradcheck(
        (x) =>
          mean(
            permute(x, [2, 0, 1])
              .reshape([4, 6])
              .mul(x.reshape([4, 6])),
            0,
          ),
        [a],
      ),
    ).toEqual([]);
    const b = randn([3, 1], { generator: gen() });
    expect(gradcheck((x) => sum(expand(x, [2, 3, 5]).mul(2), [0, 2]), [b])).toEqual([]);
  });
  it('matmul (batched, broadcast) and linear', () => {
    const a = randn([2, 3, 4], { generator: gen() });
    const b = randn([4, 5], { generator: gen() });
    expect(gradcheck((x, y) => matmul(x, y), [a, b])).toEqual([]);
    const x = randn([6, 4], { generator: gen() });
    const w = randn([3, 4], { generator: gen() });
    const bias = randn([3], { generator: gen() });
    expect(gradcheck((p, q, r) => linear(p, q, r), [x, w, bias])).toEqual([]);
  });
  it('accumulates into .grad across uses and respects noGrad', () => {
    const x = tensor([1, 2, 3], { requiresGrad: true });
    sum(mul(x, x)).add(sum(x)).backward();
    expect(x.grad!.toArray()).toEqual([3, 5, 7]);
    const y = noGrad(() => mul(x, 2));
    expect(y.requiresGrad).toBe(false);
  });
});

describe('relu fast path', () => {
  it('matches max(x, 0) and its gradient matches finite differences away from 0', async () => {
    const { relu } = await import('./index.js');
    const x = tensor([-2, -0.5, 0.25, 3]);
    expect(relu(x).toArray()).toEqual([0, 0, 0.25, 3]);
    expect(relu(tensor([-3, 4], { dtype: 'int8' })).dtype).toBe('int8');
    const a = randn([4, 5], { generator: gen() });
    expect(gradcheck((t) => relu(t), [a], { eps: 1e-3 })).toEqual([]);
  });
});
