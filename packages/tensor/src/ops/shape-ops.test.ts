import { describe, expect, it } from 'vitest';
import '../backends.js';
import '../tensor-methods.js';
import { arange, randn, tensor } from '../creation.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { Generator } from '../random.js';
import type { Tensor } from '../tensor.js';
import { gradcheck } from '../testing/gradcheck.js';
import { cat, flatten, slice, split, squeeze, unsqueeze } from './shape-ops.js';
import { permute } from './view.js';

const gen = (s: number) => new Generator(s);

/** Row-major values of a 3-d tensor via at(). */
function entries(x: Tensor, f: (i: number, j: number, k: number) => number): number[] {
  const [a, b, c] = x.shape as [number, number, number];
  const out: number[] = [];
  for (let i = 0; i < a; i++) for (let j = 0; j < b; j++) for (let k = 0; k < c; k++) out.push(f(i, j, k));
  return out;
}

describe('cat', () => {
  const a = randn([2, 3, 4], { generator: gen(1) });
  const b = randn([2, 1, 4], { generator: gen(2) });
  const c = randn([2, 2, 4], { generator: gen(3) });

  it('joins along a middle axis, matching index arithmetic', () => {
    const y = cat([a, b, c], 1);
    expect(y.shape).toEqual([2, 6, 4]);
    expect(y.toArray()).toEqual(
      entries(y, (i, j, k) => (j < 3 ? a.at(i, j, k) : j < 4 ? b.at(i, j - 3, k) : c.at(i, j - 4, k))),
    );
  });

  it('joins along the first and last axes, with negative axes', () => {
    expect(
      cat([
        tensor([[1, 2]]),
        tensor([
          [3, 4],
          [5, 6],
        ]),
      ]).toArray(),
    ).toEqual([1, 2, 3, 4, 5, 6]);
    expect(
      cat(
        [
          tensor([[1], [2]]),
          tensor([
            [3, 4],
            [5, 6],
          ]),
        ],
        -1,
      ).toArray(),
    ).toEqual([1, 3, 4, 2, 5, 6]);
    const big = randn([3, 100], { generator: gen(4) });
    const y = cat([big, big], 0);
    expect(y.toArray()).toEqual([...big.toArray(), ...big.toArray()]);
  });

  it('reads non-contiguous inputs and keeps integer dtypes', () => {
    const t = permute(arange(6).reshape([2, 3]), [1, 0]);
    expect(cat([t, tensor([[9, 9]])], 0).toArray()).toEqual([0, 3, 1, 4, 2, 5, 9, 9]);
    const i = cat([tensor([1, 2], { dtype: 'int32' }), tensor([3], { dtype: 'int32' })]);
    expect(i.dtype).toBe('int32');
    expect(i.toArray()).toEqual([1, 2, 3]);
  });

  it('validates shapes and dtypes', () => {
    expect(() => cat([a, randn([2, 3, 5])], 1)).toThrow(ShapeError);
    expect(() => cat([a, randn([2, 3, 5])], 1)).toThrow(/tensor 1 has shape \[2, 3, 5\]/);
    expect(() => cat([tensor([1]), tensor([1], { dtype: 'int32' })])).toThrow(DTypeError);
    expect(() => cat([])).toThrow(InvalidArgumentError);
  });

  it('gradient splits back to each input', () => {
    expect(gradcheck((p, q, r) => cat([p, q, r], 1), [a.clone(), b.clone(), c.clone()])).toEqual([]);
    expect(gradcheck((p, q) => cat([p, q], -1).mul(2), [randn([3, 2]), randn([3, 5])])).toEqual([]);
  });
});

describe('split', () => {
  const x = arange(20).reshape([4, 5]);

  it('into chunks (last one smaller) as views', () => {
    const parts = split(x, 2, 1);
    expect(parts.map((p) => p.shape)).toEqual([
      [4, 2],
      [4, 2],
      [4, 1],
    ]);
    expect(parts[1]!.toArray()).toEqual([2, 3, 7, 8, 12, 13, 17, 18]);
    expect(parts[2]!.toArray()).toEqual([4, 9, 14, 19]);
    expect(parts[0]!.data).toBe(x.data);
  });

  it('into listed sizes, along negative axes, and on non-contiguous input', () => {
    const [p, q] = x.split([1, 3], 0);
    expect(p!.toArray()).toEqual([0, 1, 2, 3, 4]);
    expect(q!.shape).toEqual([3, 5]);
    const xt = permute(x, [1, 0]);
    const parts = split(xt, [3, 0, 1], -1);
    expect(parts[0]!.toArray()).toEqual([0, 5, 10, 1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14]);
    expect(parts[1]!.shape).toEqual([5, 0]);
    expect(parts[2]!.toArray()).toEqual([15, 16, 17, 18, 19]);
  });

  it('validates sizes', () => {
    expect(() => split(x, [2, 2], 1)).toThrow(ShapeError);
    expect(() => split(x, [2, 2], 1)).toThrow(/add up to 4, but axis 1 of \[4, 5\] has 5/);
    expect(() => split(x, 0)).toThrow(InvalidArgumentError);
  });

  it('gradient, including pieces that receive no gradient', () => {
    const a = randn([3, 7], { generator: gen(5) });
    expect(gradcheck((t) => split(t, 3, 1), [a])).toEqual([]);
    expect(gradcheck((t) => split(t, [1, 2], 0), [a.clone()])).toEqual([]);
    const t = tensor(
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      { requiresGrad: true },
    );
    const [, mid] = split(t, 1, 1);
    mid!
      .mul(tensor([[10], [20]]))
      .sum()
      .backward();
    expect(t.grad!.toArray()).toEqual([0, 10, 0, 0, 20, 0]);
  });
});

describe('slice', () => {
  const x = arange(24).reshape([2, 3, 4]);
  const py = (n: number, start?: number, end?: number, step = 1) => {
    // Reference: Python's list slicing semantics, spelled out on an index list.
    const idx = Array.from({ length: n }, (_, i) => i);
    const norm = (v: number | undefined, d: number, lo: number, hi: number) =>
      v === undefined ? d : Math.min(Math.max(v < 0 ? v + n : v, lo), hi);
    const out: number[] = [];
    if (step > 0) for (let i = norm(start, 0, 0, n); i < norm(end, n, 0, n); i += step) out.push(idx[i]!);
    else for (let i = norm(start, n - 1, -1, n - 1); i > norm(end, -1, -1, n - 1); i += step) out.push(idx[i]!);
    return out;
  };

  const specs: [number | undefined, number | undefined, number][] = [
    [1, 3, 1],
    [-3, -1, 1],
    [undefined, undefined, 2],
    [1, undefined, 2],
    [-10, 10, 1],
    [3, 1, 1],
    [undefined, undefined, -1],
    [2, 0, -1],
    [-1, -5, -2],
    [10, undefined, -3],
    [0, 0, 1],
  ];
  for (const [start, end, step] of specs) {
    it(`[${start ?? ''}:${end ?? ''}:${step}] along the last axis is a view with Python's rules`, () => {
      const want = py(4, start, end, step);
      const y = slice(x, { axis: -1, start, end, step });
      expect(y.shape).toEqual([2, 3, want.length]);
      expect(y.data).toBe(x.data);
      expect(y.toArray()).toEqual(entries(y, (i, j, k) => x.at(i, j, want[k]!)));
    });
  }

  it('slices other axes and non-contiguous views', () => {
    expect(slice(x, { axis: 1, start: 1 }).toArray()).toEqual(
      entries(x, (i, j, k) => x.at(i, j, k)).filter((_, p) => Math.floor(p / 4) % 3 !== 0),
    );
    const xt = permute(x, [2, 0, 1]);
    const y = xt.slice({ axis: 0, start: 1, end: 4, step: 2 });
    expect(y.shape).toEqual([2, 2, 3]);
    expect(y.toArray()).toEqual(entries(y, (i, j, k) => x.at(j, k, 1 + 2 * i)));
    expect(slice(slice(x, { axis: 2, step: -1 }), { axis: 2, step: -1 }).toArray()).toEqual(x.toArray());
  });

  it('validates arguments', () => {
    expect(() => slice(x, { axis: 0, step: 0 })).toThrow(/step cannot be 0/);
    expect(() => slice(x, { axis: 3 })).toThrow(InvalidArgumentError);
    expect(() => slice(x, { start: 0.5 })).toThrow(/start must be an integer/);
  });

  it('gradient scatters back into the sliced positions', () => {
    const a = randn([3, 6], { generator: gen(6) });
    expect(gradcheck((t) => slice(t, { axis: 1, start: 1, end: -1, step: 2 }), [a])).toEqual([]);
    expect(
      gradcheck((t) => slice(t, { axis: 0, start: -1, step: -2 }).mul(t.slice({ axis: 0, end: 2 })), [a.clone()]),
    ).toEqual([]);
    const t = tensor([1, 2, 3, 4, 5], { requiresGrad: true });
    slice(t, { start: 4, end: 0, step: -2 })
      .mul(tensor([10, 20]))
      .sum()
      .backward();
    expect(t.grad!.toArray()).toEqual([0, 0, 20, 0, 10]);
  });
});

describe('flatten, squeeze, unsqueeze', () => {
  const x = randn([2, 3, 4, 5], { generator: gen(8) });

  it('flatten merges a dimension range', () => {
    expect(flatten(x).shape).toEqual([120]);
    expect(flatten(x, 1).shape).toEqual([2, 60]);
    expect(flatten(x, 1, 2).shape).toEqual([2, 12, 5]);
    expect(x.flatten(-2).shape).toEqual([2, 3, 20]);
    expect(flatten(x, 1).toArray()).toEqual(x.toArray());
    expect(flatten(tensor(7)).shape).toEqual([1]);
    const xt = permute(x, [3, 2, 1, 0]);
    expect(flatten(xt).toArray()).toEqual(xt.toArray());
    expect(() => flatten(x, 2, 1)).toThrow(InvalidArgumentError);
  });

  it('squeeze removes size-1 dims (a listed non-1 dim is left alone)', () => {
    const y = randn([1, 3, 1, 2], { generator: gen(9) });
    expect(squeeze(y).shape).toEqual([3, 2]);
    expect(squeeze(y, 2).shape).toEqual([1, 3, 2]);
    expect(squeeze(y, [0, -2]).shape).toEqual([3, 2]);
    expect(squeeze(y, 1).shape).toEqual([1, 3, 1, 2]);
    expect(y.squeeze().data).toBe(y.data);
    expect(squeeze(y).toArray()).toEqual(y.toArray());
  });

  it('unsqueeze inserts a size-1 dim as a view, keeping contiguity', () => {
    const y = tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(unsqueeze(y, 0).shape).toEqual([1, 2, 3]);
    expect(unsqueeze(y, 1).shape).toEqual([2, 1, 3]);
    expect(y.unsqueeze(-1).shape).toEqual([2, 3, 1]);
    expect(unsqueeze(y, 1).isContiguous()).toBe(true);
    expect(unsqueeze(y, 1).data).toBe(y.data);
    const yt = permute(y, [1, 0]);
    expect(unsqueeze(yt, 1).toArray()).toEqual([1, 4, 2, 5, 3, 6]);
    expect(unsqueeze(tensor(5), 0).shape).toEqual([1]);
    expect(() => unsqueeze(y, 3)).toThrow(InvalidArgumentError);
  });

  it('gradients', () => {
    const a = randn([2, 1, 3], { generator: gen(10) });
    expect(gradcheck((t) => squeeze(t).mul(2), [a])).toEqual([]);
    expect(gradcheck((t) => unsqueeze(t, 1).mul(unsqueeze(t, 1)), [a.clone()])).toEqual([]);
    expect(gradcheck((t) => flatten(t, 0, 1), [randn([2, 3, 2])])).toEqual([]);
  });
});
