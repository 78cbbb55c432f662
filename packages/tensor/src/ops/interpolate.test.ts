import { describe, expect, it } from 'vitest';
import {
  Generator,
  InvalidArgumentError,
  ShapeError,
  arange,
  interpolate,
  randn,
  tensor,
  type Tensor,
} from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';
import { expectAllNear } from '../testing/expect-near.js';
import { naiveNchw } from '../testing/naive-nchw.js';

const expectNear = (a: number[], b: number[], tol = 1e-5) => expectAllNear(a, b, tol);

/** PyTorch's source coordinate for one output index, written out directly (double precision). */
function source(o: number, inSize: number, outSize: number, scale: number, mode: string, align: boolean): number {
  if (mode === 'nearest') return Math.min(Math.floor(o * scale), inSize - 1);
  if (align) return outSize > 1 ? (o * (inSize - 1)) / (outSize - 1) : 0;
  return Math.max((o + 0.5) * scale - 0.5, 0);
}

function naive(x: Tensor, oh: number, ow: number, scales: [number, number], mode: string, align: boolean): number[] {
  return naiveNchw(x, oh, ow, (n, c, i, j, H, W) => {
    const sy = source(i, H, oh, scales[0], mode, align);
    const sx = source(j, W, ow, scales[1], mode, align);
    if (mode === 'nearest') return x.at(n, c, sy, sx);
    const y0 = Math.floor(sy);
    const x0 = Math.floor(sx);
    const y1 = Math.min(y0 + 1, H - 1);
    const x1 = Math.min(x0 + 1, W - 1);
    const ly = sy - y0;
    const lx = sx - x0;
    return (
      (1 - ly) * ((1 - lx) * x.at(n, c, y0, x0) + lx * x.at(n, c, y0, x1)) +
      ly * ((1 - lx) * x.at(n, c, y1, x0) + lx * x.at(n, c, y1, x1))
    );
  });
}

describe('interpolate: hand-computed PyTorch results', () => {
  const x = tensor([
    [
      [
        [1, 2],
        [3, 4],
      ],
    ],
  ]);
  it('nearest 2x', () => {
    expect(interpolate(x, { scaleFactor: 2 }).toArray()).toEqual([1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
  });
  it('bilinear 2x, half-pixel', () => {
    expectNear(
      interpolate(x, { scaleFactor: 2, mode: 'bilinear' }).toArray(),
      [1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4],
    );
  });
  it('bilinear to 4x4 with alignCorners', () => {
    const y = interpolate(x, { size: 4, mode: 'bilinear', alignCorners: true }).toArray();
    expectNear(y.slice(0, 4), [1, 4 / 3, 5 / 3, 2]);
    expectNear(y.slice(12), [3, 10 / 3, 11 / 3, 4]);
  });
  it('nearest down 5 → 3 by size and up 4 → 6 by factor 1.5', () => {
    expect(interpolate(arange(5).reshape([1, 1, 1, 5]), { size: [1, 3] }).toArray()).toEqual([0, 1, 3]);
    expect(interpolate(arange(4).reshape([1, 1, 1, 4]), { scaleFactor: [1, 1.5] }).toArray()).toEqual([
      0, 0, 1, 2, 2, 3,
    ]);
  });
});

describe('interpolate against direct loops, with gradients', () => {
  const cases: [
    string,
    number[],
    { size?: [number, number]; scaleFactor?: number | [number, number] },
    'nearest' | 'bilinear',
    boolean,
  ][] = [
    ['nearest up by size', [2, 2, 3, 4], { size: [7, 5] }, 'nearest', false],
    ['nearest down by factor', [1, 2, 6, 5], { scaleFactor: 0.5 }, 'nearest', false],
    ['bilinear up by size', [2, 1, 3, 4], { size: [5, 7] }, 'bilinear', false],
    ['bilinear down by factor', [1, 2, 7, 6], { scaleFactor: [0.6, 0.5] }, 'bilinear', false],
    ['bilinear alignCorners up', [1, 2, 3, 3], { size: [5, 4] }, 'bilinear', true],
    ['bilinear alignCorners to one row', [1, 1, 4, 3], { size: [1, 5] }, 'bilinear', true],
  ];
  for (const [name, xs, o, mode, align] of cases) {
    it(name, () => {
      const x = randn(xs, { generator: new Generator(2) });
      const opts = { ...o, mode, ...(mode === 'bilinear' ? { alignCorners: align } : {}) };
      const y = interpolate(x, opts);
      const [oh, ow] = [y.shape[2]!, y.shape[3]!];
      const sf =
        o.scaleFactor === undefined
          ? undefined
          : typeof o.scaleFactor === 'number'
            ? [o.scaleFactor, o.scaleFactor]
            : o.scaleFactor;
      const scales: [number, number] = sf ? [1 / sf[0]!, 1 / sf[1]!] : [xs[2]! / oh, xs[3]! / ow];
      if (sf) expect([oh, ow]).toEqual([Math.floor(xs[2]! * sf[0]!), Math.floor(xs[3]! * sf[1]!)]);
      expectNear(y.toArray(), naive(x, oh, ow, scales, mode, align));
      expect(gradcheck((xx) => interpolate(xx!, opts), [x])).toEqual([]);
    });
  }
});

describe('interpolate validation', () => {
  it('rejects bad arguments with typed errors', () => {
    const x = randn([1, 1, 4, 4]);
    expect(() => interpolate(randn([4, 4]), { size: 2 })).toThrow(ShapeError);
    expect(() => interpolate(x, {})).toThrow(/exactly one of size and scaleFactor/);
    expect(() => interpolate(x, { size: 2, scaleFactor: 2 })).toThrow(InvalidArgumentError);
    expect(() => interpolate(x, { size: 2, alignCorners: true })).toThrow(/only applies to 'bilinear'/);
    expect(() => interpolate(x, { size: 2, mode: 'bicubic' as 'nearest' })).toThrow(InvalidArgumentError);
    expect(() => interpolate(x, { scaleFactor: 0.1 })).toThrow(/empty output/);
    expect(() => interpolate(x, { size: [2, 0] })).toThrow(InvalidArgumentError);
  });
});
