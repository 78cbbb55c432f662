import { describe, expect, it } from 'vitest';
import { Generator, InvalidArgumentError, ShapeError, arange, pad, randn, tensor, type Tensor } from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';

describe('pad: hand-computed 1-d results', () => {
  const x = tensor([1, 2, 3, 4]);
  it('constant, reflect, replicate', () => {
    expect(pad(x, [2, 1], 'constant', 9).toArray()).toEqual([9, 9, 1, 2, 3, 4, 9]);
    expect(pad(x, [2, 1]).toArray()).toEqual([0, 0, 1, 2, 3, 4, 0]);
    expect(pad(x, [3, 2], 'reflect').toArray()).toEqual([4, 3, 2, 1, 2, 3, 4, 3, 2]);
    expect(pad(x, [2, 3], 'replicate').toArray()).toEqual([1, 1, 1, 2, 3, 4, 4, 4, 4]);
  });
  it('negative constant pads crop', () => {
    expect(pad(x, [-1, 1]).toArray()).toEqual([2, 3, 4, 0]);
    expect(pad(x, [-2, -2]).shape).toEqual([0]);
  });
  it('keeps integer dtypes', () => {
    const y = pad(tensor([1, 2], { dtype: 'int32' }), [1, 1], 'constant', -1);
    expect(y.dtype).toBe('int32');
    expect(y.toArray()).toEqual([-1, 1, 2, -1]);
  });
  it('pads rows with F.pad order: last dim first', () => {
    const m = arange(6).reshape([2, 3]);
    expect(pad(m, [0, 1, 1, 0]).toArray()).toEqual([0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 5, 0]);
  });
});

/** Input index for output index o along a dim, or -1 for the constant; written per mode. */
function src(o: number, size: number, begin: number, mode: string): number {
  const i = o - begin;
  if (mode === 'constant') return i >= 0 && i < size ? i : -1;
  if (mode === 'replicate') return Math.min(Math.max(i, 0), size - 1);
  if (i < 0) return -i;
  if (i >= size) return 2 * size - 2 - i;
  return i;
}

function naive3(x: Tensor, pads: number[], mode: string, value: number): { data: number[]; shape: number[] } {
  const s = x.shape as number[];
  const b = [0, 0, 0];
  const e = [0, 0, 0];
  for (let k = 0; k < pads.length / 2; k++) {
    b[2 - k] = pads[2 * k]!;
    e[2 - k] = pads[2 * k + 1]!;
  }
  const o = s.map((d, i) => d + b[i]! + e[i]!);
  const data: number[] = [];
  for (let i = 0; i < o[0]!; i++)
    for (let j = 0; j < o[1]!; j++)
      for (let k = 0; k < o[2]!; k++) {
        const a = src(i, s[0]!, b[0]!, mode);
        const c = src(j, s[1]!, b[1]!, mode);
        const d = src(k, s[2]!, b[2]!, mode);
        data.push(a < 0 || c < 0 || d < 0 ? value : x.at(a, c, d));
      }
  return { data, shape: o };
}

describe('pad against direct loops, with gradients', () => {
  const cases: [string, number[], number[], 'constant' | 'reflect' | 'replicate', number][] = [
    ['constant on 2 dims', [2, 3, 4], [1, 2, 0, 1], 'constant', 0.5],
    ['constant crop and pad on 3 dims', [3, 4, 3], [-1, 2, 1, -2, 1, 0], 'constant', -1],
    ['reflect on 2 dims', [2, 4, 5], [2, 3, 1, 3], 'reflect', 0],
    ['reflect on 1 dim', [2, 3, 4], [3, 1], 'reflect', 0],
    ['replicate on 3 dims', [2, 3, 2], [3, 1, 0, 2, 1, 1], 'replicate', 0],
  ];
  for (const [name, xs, pads, mode, value] of cases) {
    it(name, () => {
      const x = randn(xs, { generator: new Generator(8) });
      const y = pad(x, pads, mode, value);
      const ref = naive3(x, pads, mode, value);
      expect(y.shape).toEqual(ref.shape);
      const yv = y.toArray();
      for (let i = 0; i < yv.length; i++) expect(yv[i]).toBeCloseTo(ref.data[i]!, 6);
      expect(gradcheck((xx) => pad(xx!, pads, mode, value), [x])).toEqual([]);
    });
  }
  it('reflect gradient sums mirrored copies (hand-computed)', () => {
    const x = tensor([1, 2, 3]).requiresGrad_();
    pad(x, [2, 2], 'reflect').sum().backward();
    // output reads [3, 2, 1, 2, 3, 2, 1]: index 0 twice, index 1 three times, index 2 twice
    expect(x.grad!.toArray()).toEqual([2, 3, 2]);
  });
});

describe('pad validation', () => {
  it('rejects bad pads and modes', () => {
    const x = randn([2, 3]);
    expect(() => pad(x, [1])).toThrow(InvalidArgumentError);
    expect(() => pad(x, [1, 1, 1, 1, 1, 1])).toThrow(/at most 2 pairs/);
    expect(() => pad(x, [3, 0], 'reflect')).toThrow(ShapeError);
    expect(() => pad(x, [-1, 0], 'replicate')).toThrow(/negative pads crop only/);
    expect(() => pad(x, [0, 0, -2, -1])).toThrow(/crop more than/);
    expect(() => pad(x, [1, 1], 'wrap' as 'reflect')).toThrow(InvalidArgumentError);
    expect(() => pad(x, [0.5, 1])).toThrow(/integers/);
  });
});
