import { describe, expect, it } from 'vitest';
import '../backends.js';
import '../tensor-methods.js';
import { arange, randn, tensor } from '../creation.js';
import { DTypeError, ShapeError } from '../errors.js';
import { Generator } from '../random.js';
import { gradcheck } from '../testing/gradcheck.js';
import { where } from './where.js';
import { permute } from './view.js';

const gen = (s: number) => new Generator(s);

describe('where', () => {
  it('selects elementwise with equal shapes', () => {
    const c = tensor([1, 0, 0, 1], { dtype: 'bool' });
    expect(where(c, tensor([1, 2, 3, 4]), tensor([10, 20, 30, 40])).toArray()).toEqual([1, 20, 30, 4]);
  });

  it('broadcasts cond [2,1,3], a [4,1] and b [3] against a naive index computation', () => {
    const c = randn([2, 1, 3], { generator: gen(1) }).gt(0);
    const a = randn([4, 1], { generator: gen(2) });
    const b = randn([3], { generator: gen(3) });
    const y = where(c, a, b);
    expect(y.shape).toEqual([2, 4, 3]);
    const expected: number[] = [];
    for (let i = 0; i < 2; i++)
      for (let j = 0; j < 4; j++)
        for (let k = 0; k < 3; k++) {
          expected.push(c.at(i, 0, k) ? a.at(j, 0) : b.at(k));
        }
    expect(y.toArray()).toEqual(expected);
  });

  it('reads non-contiguous operands', () => {
    const a = permute(arange(6).reshape([2, 3]), [1, 0]);
    const c = permute(
      tensor(
        [
          [1, 0, 1],
          [0, 1, 0],
        ],
        { dtype: 'bool' },
      ),
      [1, 0],
    );
    expect(a.isContiguous()).toBe(false);
    // a = [[0,3],[1,4],[2,5]], c = [[1,0],[0,1],[1,0]]
    expect(where(c, a, -1).toArray()).toEqual([0, -1, -1, 4, 2, -1]);
    expect(a.where(c, tensor([[7], [8], [9]])).toArray()).toEqual([0, 7, 8, 4, 2, 9]);
  });

  it('takes numbers for either branch and promotes dtypes', () => {
    const c = tensor([1, 0], { dtype: 'bool' });
    expect(where(c, 1, 0).toArray()).toEqual([1, 0]);
    const ints = where(c, tensor([5, 6], { dtype: 'int32' }), 0);
    expect(ints.dtype).toBe('int32');
    expect(ints.toArray()).toEqual([5, 0]);
    const mixed = where(c, tensor([5, 6], { dtype: 'int32' }), 0.5);
    expect(mixed.dtype).toBe('float32');
    expect(mixed.toArray()).toEqual([5, 0.5]);
  });

  it('requires a bool condition and compatible shapes', () => {
    expect(() => where(tensor([1, 0]), tensor([1, 2]), 0)).toThrow(DTypeError);
    expect(() => where(tensor([1, 0], { dtype: 'bool' }), tensor([1, 2, 3]), 0)).toThrow(ShapeError);
  });

  it('gradients flow to a where cond holds and to b elsewhere, summed over broadcast dims', () => {
    const c = randn([3, 4], { generator: gen(5) }).gt(0);
    const a = randn([3, 4], { generator: gen(6) });
    const b = randn([4], { generator: gen(7) });
    expect(gradcheck((x, y) => where(c, x, y), [a, b])).toEqual([]);
    const a1 = randn([3, 1], { generator: gen(8) });
    expect(gradcheck((x, y) => where(c, x, y).mul(x), [a1, b])).toEqual([]);

    const x = tensor([1, 2, 3], { requiresGrad: true });
    const y = tensor([4], { requiresGrad: true });
    where(tensor([1, 0, 1], { dtype: 'bool' }), x, y)
      .mul(tensor([1, 10, 100]))
      .sum()
      .backward();
    expect(x.grad!.toArray()).toEqual([1, 0, 100]);
    expect(y.grad!.toArray()).toEqual([10]);
  });
});
