import { describe, expect, it } from 'vitest';
import '../backends.js';
import '../tensor-methods.js';
import { tensor, zeros } from '../creation.js';
import { InvalidArgumentError } from '../errors.js';
import { Generator } from '../random.js';
import type { Tensor } from '../tensor.js';
import { gradcheck } from '../testing/gradcheck.js';
import { argmax, argmin, max, min } from './reduce-extra.js';
import { permute } from './view.js';

/** Distinct values 0.2 apart in shuffled order, so finite differences never cross a tie. */
function shuffled(shape: number[], seed: number): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const order = Array.from({ length: n }, (_, i) => i);
  const g = new Generator(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = g.int(i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return tensor(
    order.map((v) => (v - n / 2) * 0.2),
    shape,
  );
}

/** Extreme along `axis` of a 3-d tensor by index loops: [values, first index]. */
function naive(x: Tensor, axis: number, isMax: boolean): [number[], number[]] {
  const shape = x.shape as number[];
  const vals: number[] = [];
  const idxs: number[] = [];
  const outer = shape.map((d, i) => (i === axis ? 1 : d));
  for (let i = 0; i < outer[0]!; i++)
    for (let j = 0; j < outer[1]!; j++)
      for (let k = 0; k < outer[2]!; k++) {
        let best = NaN;
        let at = -1;
        for (let r = 0; r < shape[axis]!; r++) {
          const idx = [i, j, k];
          idx[axis] = r;
          const v = x.at(...idx);
          if (at < 0 || (isMax ? v > best : v < best)) {
            best = v;
            at = r;
          }
        }
        vals.push(best);
        idxs.push(at);
      }
  return [vals, idxs];
}

describe('max, min, argmax, argmin', () => {
  const x = shuffled([3, 4, 5], 1);

  for (const axis of [0, 1, 2]) {
    it(`along axis ${axis}`, () => {
      const [mx, amx] = naive(x, axis, true);
      const [mn, amn] = naive(x, axis, false);
      expect(max(x, axis).toArray()).toEqual(mx.map(Math.fround));
      expect(min(x, axis).toArray()).toEqual(mn.map(Math.fround));
      expect(argmax(x, axis).toArray()).toEqual(amx);
      expect(argmin(x, axis).toArray()).toEqual(amn);
      expect(argmax(x, axis).dtype).toBe('int32');
      const kept = [3, 4, 5].map((d, i) => (i === axis ? 1 : d));
      expect(max(x, axis, true).shape).toEqual(kept);
      expect(max(x, axis).shape).toEqual(kept.filter((_, i) => i !== axis));
    });
  }

  it('over the whole tensor when the axis is omitted', () => {
    const v = x.toArray();
    expect(max(x).item()).toBe(Math.max(...v));
    expect(min(x).item()).toBe(Math.min(...v));
    expect(max(x).shape).toEqual([]);
    expect(argmax(x).item()).toBe(v.indexOf(Math.max(...v)));
    expect(argmin(x).item()).toBe(v.indexOf(Math.min(...v)));
    expect(x.max(null, true).shape).toEqual([1, 1, 1]);
  });

  it('negative axes, methods and non-contiguous input', () => {
    expect(x.max(-1).toArray()).toEqual(max(x, 2).toArray());
    expect(x.argmin(-3).toArray()).toEqual(argmin(x, 0).toArray());
    const xt = permute(x, [2, 0, 1]);
    expect(xt.isContiguous()).toBe(false);
    expect(max(xt, 0).toArray()).toEqual(max(x, 2).toArray());
    expect(argmin(xt, 2).toArray()).toEqual(permute(argmin(x, 1), [1, 0]).toArray());
    expect(argmax(xt).item()).toBe(xt.toArray().indexOf(Math.max(...x.toArray())));
  });

  it('ties go to the first position; NaN wins like in PyTorch', () => {
    const t = tensor([
      [1, 3, 3],
      [2, 2, 0],
    ]);
    expect(argmax(t, 1).toArray()).toEqual([1, 0]);
    expect(argmin(t, 0).toArray()).toEqual([0, 1, 1]);
    const n = tensor([
      [1, NaN, 5, NaN],
      [NaN, 0, 1, 2],
    ]);
    expect(argmax(n, 1).toArray()).toEqual([1, 0]);
    expect(max(n, 1).toArray()).toEqual([NaN, NaN]);
    expect(argmin(n, 0).toArray()).toEqual([1, 0, 1, 0]);
    expect(min(n, 0).toArray()).toEqual([NaN, NaN, 1, NaN]);
  });

  it('keeps integer dtypes and handles 0-d input', () => {
    const t = tensor(
      [
        [4, -2],
        [7, 1],
      ],
      { dtype: 'int16' },
    );
    expect(max(t, 0).dtype).toBe('int16');
    expect(max(t, 0).toArray()).toEqual([7, 1]);
    expect(min(t).item()).toBe(-2);
    expect(max(tensor(3), -1).item()).toBe(3);
    expect(argmax(tensor(3)).item()).toBe(0);
  });

  it('rejects empty reductions and bad axes', () => {
    expect(() => max(tensor([]))).toThrow(InvalidArgumentError);
    expect(() => max(zeros([2, 0, 3]), 1)).toThrow(/size 0/);
    expect(() => argmax(x, 3)).toThrow(/axis 3 is out of range/);
  });

  for (const axis of [0, 1, 2, undefined]) {
    it(`gradient along axis ${axis ?? 'all'}`, () => {
      const a = shuffled([2, 3, 4], 7);
      expect(gradcheck((t) => max(t, axis), [a])).toEqual([]);
      expect(gradcheck((t) => min(t, axis, true), [a])).toEqual([]);
    });
  }

  it('gradient goes to the first arg position only on ties', () => {
    const t = tensor(
      [
        [2, 5, 5],
        [1, 1, 0],
      ],
      { requiresGrad: true },
    );
    max(t, 1)
      .mul(tensor([10, 20]))
      .sum()
      .backward();
    expect(t.grad!.toArray()).toEqual([0, 10, 0, 20, 0, 0]);
    const u = tensor([3, 1, 3], { requiresGrad: true });
    max(u).backward();
    expect(u.grad!.toArray()).toEqual([1, 0, 0]);
  });
});
