import { describe, expect, it } from 'vitest';
import {
  Generator,
  InvalidArgumentError,
  ShapeError,
  adaptiveAvgPool2d,
  arange,
  avgPool2d,
  maxPool2d,
  randn,
  tensor,
  type Tensor,
} from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';
import { expectAllNear } from '../testing/expect-near.js';
import { naiveNchw } from '../testing/naive-nchw.js';

/** Values spaced ≥ 0.1 apart in random order, so a finite-difference step never changes an argmax. */
function distinct(shape: number[], seed = 3): Tensor {
  const g = new Generator(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  const v = Array.from({ length: n }, (_, i) => i * 0.1 - n * 0.05);
  for (let i = n - 1; i > 0; i--) {
    const j = g.int(i + 1);
    [v[i], v[j]] = [v[j]!, v[i]!];
  }
  return tensor(v).reshape(shape);
}

function outSize(n: number, k: number, s: number, p: number, d: number, ceil: boolean): number {
  const num = n + 2 * p - d * (k - 1) - 1;
  let o = (ceil ? Math.ceil(num / s) : Math.floor(num / s)) + 1;
  if (ceil && (o - 1) * s >= n + p) o -= 1;
  return o;
}

function naiveMax(x: Tensor, k: number[], s: number[], p: number[], d: number[], ceil: boolean): number[] {
  const [N, C, H, W] = x.shape as number[];
  const OH = outSize(H!, k[0]!, s[0]!, p[0]!, d[0]!, ceil);
  const OW = outSize(W!, k[1]!, s[1]!, p[1]!, d[1]!, ceil);
  const out: number[] = [];
  for (let n = 0; n < N!; n++)
    for (let c = 0; c < C!; c++)
      for (let i = 0; i < OH; i++)
        for (let j = 0; j < OW; j++) {
          let m = -Infinity;
          for (let a = 0; a < k[0]!; a++)
            for (let b = 0; b < k[1]!; b++) {
              const y = i * s[0]! - p[0]! + a * d[0]!;
              const xx = j * s[1]! - p[1]! + b * d[1]!;
              if (y >= 0 && y < H! && xx >= 0 && xx < W!) m = Math.max(m, x.at(n, c, y, xx));
            }
          out.push(m);
        }
  return out;
}

function naiveAvg(x: Tensor, k: number[], s: number[], p: number[], ceil: boolean, includePad: boolean): number[] {
  const [N, C, H, W] = x.shape as number[];
  const OH = outSize(H!, k[0]!, s[0]!, p[0]!, 1, ceil);
  const OW = outSize(W!, k[1]!, s[1]!, p[1]!, 1, ceil);
  const out: number[] = [];
  for (let n = 0; n < N!; n++)
    for (let c = 0; c < C!; c++)
      for (let i = 0; i < OH; i++)
        for (let j = 0; j < OW; j++) {
          let sum = 0;
          let inside = 0;
          let padded = 0;
          for (let a = 0; a < k[0]!; a++)
            for (let b = 0; b < k[1]!; b++) {
              const y = i * s[0]! - p[0]! + a;
              const xx = j * s[1]! - p[1]! + b;
              // Positions in the padding count when includePad; positions past the padding (ceil mode) never do.
              if (y < H! + p[0]! && xx < W! + p[1]!) padded++;
              if (y >= 0 && y < H! && xx >= 0 && xx < W!) {
                sum += x.at(n, c, y, xx);
                inside++;
              }
            }
          out.push(inside === 0 ? 0 : sum / (includePad ? padded : inside));
        }
  return out;
}

const expectNear = (a: number[], b: number[], tol = 1e-5) => expectAllNear(a, b, tol);

describe('maxPool2d', () => {
  it('matches the hand-computed ceil-mode result', () => {
    const x = arange(25).reshape([1, 1, 5, 5]);
    expect(maxPool2d(x, 2).toArray()).toEqual([6, 8, 16, 18]);
    expect(maxPool2d(x, 2, { ceilMode: true }).toArray()).toEqual([6, 8, 9, 16, 18, 19, 21, 23, 24]);
  });
  const cases: [string, number[], number[], number[], number[], number[], boolean][] = [
    ['2x2', [2, 3, 6, 6], [2, 2], [2, 2], [0, 0], [1, 1], false],
    ['3x3 stride 2 pad 1', [1, 2, 7, 6], [3, 3], [2, 2], [1, 1], [1, 1], false],
    ['3x2 stride (2,1) ceil', [2, 1, 7, 5], [3, 2], [2, 1], [1, 0], [1, 1], true],
    ['dilation 2 ceil', [1, 2, 9, 8], [2, 3], [2, 3], [1, 1], [2, 2], true],
  ];
  for (const [name, xs, k, s, p, d, ceil] of cases) {
    it(`forward and gradient: ${name}`, () => {
      const x = distinct(xs);
      const y = maxPool2d(x, k, { stride: s, padding: p, dilation: d, ceilMode: ceil });
      expectNear(y.toArray(), naiveMax(x, k, s, p, d, ceil));
      expect(gradcheck((xx) => maxPool2d(xx!, k, { stride: s, padding: p, dilation: d, ceilMode: ceil }), [x])).toEqual(
        [],
      );
    });
  }
  it('routes the gradient of overlapping windows to the shared maximum', () => {
    const x = tensor([
      [
        [
          [0, 1, 0],
          [0, 9, 0],
          [0, 2, 0],
        ],
      ],
    ]).requiresGrad_();
    maxPool2d(x, 2, { stride: 1 }).sum().backward();
    expect(x.grad!.toArray()).toEqual([0, 0, 0, 0, 4, 0, 0, 0, 0]);
  });
  it('accepts [C, H, W] and validates arguments', () => {
    expect(maxPool2d(distinct([2, 4, 4]), 2).shape).toEqual([2, 2, 2]);
    expect(() => maxPool2d(randn([1, 1, 4, 4]), 2, { padding: 2 })).toThrow(InvalidArgumentError);
    expect(() => maxPool2d(randn([1, 1, 4, 4]), 0)).toThrow(InvalidArgumentError);
    expect(() => maxPool2d(randn([4, 4]), 2)).toThrow(ShapeError);
    expect(() => maxPool2d(randn([1, 1, 2, 2]), 3)).toThrow(/smaller than the kernel/);
  });
});

describe('avgPool2d', () => {
  it('hand-computed 3x3 stride 2 pad 1 on a 4x4 ramp, with and without pad counting', () => {
    const x = arange(16).reshape([1, 1, 4, 4]);
    // Window at (0,0) covers rows -1..1, cols -1..1: inputs 0,1,4,5.
    expectNear(avgPool2d(x, 3, { stride: 2, padding: 1 }).toArray(), [10 / 9, 24 / 9, 51 / 9, 90 / 9]);
    expectNear(avgPool2d(x, 3, { stride: 2, padding: 1, countIncludePad: false }).toArray(), [
      10 / 4,
      24 / 6,
      51 / 6,
      90 / 9,
    ]);
  });
  const cases: [string, number[], number[], number[], number[], boolean, boolean][] = [
    ['2x2', [2, 2, 6, 4], [2, 2], [2, 2], [0, 0], false, true],
    ['3x3 s2 p1 include pad', [1, 2, 7, 6], [3, 3], [2, 2], [1, 1], false, true],
    ['3x3 s2 p1 exclude pad, ceil', [1, 2, 6, 6], [3, 3], [2, 2], [1, 1], true, false],
    ['ceil with window past the padding, include pad', [1, 1, 5, 5], [2, 3], [2, 2], [0, 1], true, true],
  ];
  for (const [name, xs, k, s, p, ceil, inc] of cases) {
    it(`forward and gradient: ${name}`, () => {
      const x = randn(xs, { generator: new Generator(9) });
      const f = (xx: Tensor) => avgPool2d(xx, k, { stride: s, padding: p, ceilMode: ceil, countIncludePad: inc });
      expectNear(f(x).toArray(), naiveAvg(x, k, s, p, ceil, inc));
      expect(gradcheck(f, [x])).toEqual([]);
    });
  }
  it('divisorOverride divides every window by the given number', () => {
    const x = arange(16).reshape([1, 1, 4, 4]);
    expectNear(avgPool2d(x, 2, { divisorOverride: 2 }).toArray(), [5, 9, 21, 25]);
  });
});

describe('adaptiveAvgPool2d', () => {
  function naiveAdaptive(x: Tensor, oh: number, ow: number): number[] {
    return naiveNchw(x, oh, ow, (n, c, i, j, H, W) => {
      const y0 = Math.floor((i * H) / oh);
      const y1 = Math.ceil(((i + 1) * H) / oh);
      const x0 = Math.floor((j * W) / ow);
      const x1 = Math.ceil(((j + 1) * W) / ow);
      let s = 0;
      for (let y = y0; y < y1; y++) for (let xx = x0; xx < x1; xx++) s += x.at(n, c, y, xx);
      return s / ((y1 - y0) * (x1 - x0));
    });
  }
  it('hand-computed 5 → 3 over a ramp (overlapping windows)', () => {
    const x = arange(5).reshape([1, 1, 1, 5]);
    // windows [0,2), [1,4), [3,5)
    expectNear(adaptiveAvgPool2d(x, [1, 3]).toArray(), [0.5, 2, 3.5]);
  });
  for (const [xs, o] of [
    [
      [2, 3, 7, 5],
      [3, 2],
    ],
    [
      [1, 2, 4, 4],
      [1, 1],
    ],
    [
      [1, 1, 3, 5],
      [6, 4],
    ],
  ] as [number[], [number, number]][]) {
    it(`forward and gradient: ${xs.join('x')} → ${o.join('x')}`, () => {
      const x = randn(xs, { generator: new Generator(4) });
      expectNear(adaptiveAvgPool2d(x, o).toArray(), naiveAdaptive(x, o[0], o[1]));
      expect(gradcheck((xx) => adaptiveAvgPool2d(xx!, o), [x])).toEqual([]);
    });
  }
  it('null keeps a dimension; bad sizes are rejected', () => {
    expect(adaptiveAvgPool2d(randn([1, 2, 6, 5]), [null, 1]).shape).toEqual([1, 2, 6, 1]);
    expect(() => adaptiveAvgPool2d(randn([1, 2, 6, 5]), 0)).toThrow(InvalidArgumentError);
  });
});
