import { describe, expect, it } from 'vitest';
import { Generator, InvalidArgumentError, ShapeError, conv1d, conv2d, conv3d, randn, type Tensor } from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';
import { expectTensorNear } from '../testing/expect-near.js';

const gen = () => new Generator(11);

interface Opts {
  stride?: number[];
  pad?: number[];
  padEnd?: number[];
  dil?: number[];
  groups?: number;
}

/** Direct convolution over 3 spatial dims (1-d and 2-d shapes are lifted by the caller). */
function naiveConv3(
  x: Tensor,
  xs: number[],
  w: Tensor,
  ws: number[],
  b: Tensor | null,
  o: Required<Opts>,
): { data: number[]; shape: number[] } {
  const [N, C, D, H, W] = xs as [number, number, number, number, number];
  const [CO, CIG, KD, KH, KW] = ws as [number, number, number, number, number];
  const G = o.groups;
  const out = [0, 1, 2].map(
    (i) =>
      Math.floor(([D, H, W][i]! + o.pad[i]! + o.padEnd[i]! - o.dil[i]! * ([KD, KH, KW][i]! - 1) - 1) / o.stride[i]!) +
      1,
  );
  const [OD, OH, OW] = out as [number, number, number];
  const xv = x.toArray();
  const wv = w.toArray();
  const res: number[] = [];
  for (let n = 0; n < N; n++)
    for (let co = 0; co < CO; co++) {
      const g = Math.floor(co / (CO / G));
      for (let z = 0; z < OD; z++)
        for (let y = 0; y < OH; y++)
          for (let xx = 0; xx < OW; xx++) {
            let s = b ? b.toArray()[co]! : 0;
            for (let ci = 0; ci < CIG; ci++)
              for (let a = 0; a < KD; a++)
                for (let bb = 0; bb < KH; bb++)
                  for (let e = 0; e < KW; e++) {
                    const iz = z * o.stride[0]! - o.pad[0]! + a * o.dil[0]!;
                    const iy = y * o.stride[1]! - o.pad[1]! + bb * o.dil[1]!;
                    const ix = xx * o.stride[2]! - o.pad[2]! + e * o.dil[2]!;
                    if (iz < 0 || iy < 0 || ix < 0 || iz >= D || iy >= H || ix >= W) continue;
                    const c = g * CIG + ci;
                    s +=
                      xv[(((n * C + c) * D + iz) * H + iy) * W + ix]! *
                      wv[(((co * CIG + ci) * KD + a) * KH + bb) * KW + e]!;
                  }
            res.push(s);
          }
    }
  return { data: res, shape: [N, CO, OD, OH, OW] };
}

function lift(v: number[] | undefined, fill: number, r: number): number[] {
  const full = v ?? new Array<number>(r).fill(fill);
  return [...new Array<number>(3 - r).fill(fill === 1 ? 1 : 0), ...full];
}

function reference(x: Tensor, w: Tensor, b: Tensor | null, o: Opts): { data: number[]; shape: number[] } {
  const r = x.ndim - 2;
  const liftShape = (s: readonly number[]) => [s[0]!, s[1]!, ...new Array<number>(3 - r).fill(1), ...s.slice(2)];
  const full: Required<Opts> = {
    stride: lift(o.stride, 1, r),
    pad: lift(o.pad, 0, r),
    padEnd: lift(o.padEnd ?? o.pad, 0, r),
    dil: lift(o.dil, 1, r),
    groups: o.groups ?? 1,
  };
  const res = naiveConv3(x, liftShape(x.shape), w, liftShape(w.shape), b, full);
  return { data: res.data, shape: [res.shape[0]!, res.shape[1]!, ...res.shape.slice(2 + 3 - r)] };
}

const expectClose = (actual: Tensor, expected: { data: number[]; shape: number[] }, tol = 1e-4) =>
  expectTensorNear(actual, expected, tol);

describe('conv2d forward', () => {
  const cases: [string, number[], number[], Opts, boolean][] = [
    ['3x3 pad 1 with bias', [2, 3, 6, 5], [4, 3, 3, 3], { pad: [1, 1] }, true],
    ['stride 2, asymmetric kernel', [2, 2, 7, 6], [3, 2, 3, 2], { stride: [2, 2], pad: [1, 0] }, false],
    ['dilation 2, stride (1,2)', [1, 2, 8, 8], [2, 2, 3, 3], { stride: [1, 2], dil: [2, 2], pad: [2, 1] }, true],
    ['groups 2', [2, 4, 5, 5], [6, 2, 3, 3], { pad: [1, 1], groups: 2 }, true],
    ['depthwise', [2, 3, 5, 4], [3, 1, 3, 3], { pad: [1, 1], groups: 3 }, false],
    ['1x1 pointwise batch 3', [3, 4, 3, 5], [5, 4, 1, 1], {}, true],
    ['1x1 pointwise batch 1', [1, 4, 3, 5], [5, 4, 1, 1], {}, false],
    ['1x1 stride 2', [2, 3, 5, 5], [2, 3, 1, 1], { stride: [2, 2] }, true],
    ['kernel larger than stride+pad', [1, 1, 4, 4], [1, 1, 4, 4], { pad: [3, 3], stride: [3, 3] }, false],
  ];
  for (const [name, xs, ws, o, withBias] of cases) {
    it(name, () => {
      const g = gen();
      const x = randn(xs, { generator: g });
      const w = randn(ws, { generator: g });
      const b = withBias ? randn([ws[0]!], { generator: g }) : null;
      const y = conv2d(x, w, b, { stride: o.stride, padding: o.pad, dilation: o.dil, groups: o.groups });
      expectClose(y, reference(x, w, b, o));
    });
  }

  it("padding 'same' puts the odd leftover after, like PyTorch", () => {
    const g = gen();
    const x = randn([1, 2, 5, 6], { generator: g });
    const w = randn([3, 2, 2, 4], { generator: g });
    const y = conv2d(x, w, null, { padding: 'same' });
    expect(y.shape).toEqual([1, 3, 5, 6]);
    expectClose(y, reference(x, w, null, { pad: [0, 1], padEnd: [1, 2] }));
  });

  it('hand-computed 2x2 case', () => {
    const x = randn([1, 1, 3, 3]);
    (x.data as Float32Array).set([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const w = randn([1, 1, 2, 2]);
    (w.data as Float32Array).set([1, 0, 0, -1]);
    expect(conv2d(x, w).toArray()).toEqual([-4, -4, -4, -4]);
  });

  it('accepts unbatched input', () => {
    const g = gen();
    const x = randn([2, 4, 4], { generator: g });
    const w = randn([3, 2, 3, 3], { generator: g });
    const y = conv2d(x, w, null, { padding: 1 });
    expect(y.shape).toEqual([3, 4, 4]);
    const ref = reference(x.reshape([1, 2, 4, 4]), w, null, { pad: [1, 1] });
    expectClose(y, { data: ref.data, shape: [3, 4, 4] });
  });
});

describe('conv1d and conv3d forward', () => {
  it('conv1d with stride, padding, dilation, groups and bias', () => {
    const g = gen();
    const x = randn([2, 4, 11], { generator: g });
    const w = randn([6, 2, 3], { generator: g });
    const b = randn([6], { generator: g });
    const o: Opts = { stride: [2], pad: [2], dil: [2], groups: 2 };
    expectClose(conv1d(x, w, b, { stride: 2, padding: 2, dilation: 2, groups: 2 }), reference(x, w, b, o));
  });
  it('conv3d with mixed per-dim arguments', () => {
    const g = gen();
    const x = randn([2, 2, 4, 5, 6], { generator: g });
    const w = randn([3, 2, 2, 3, 3], { generator: g });
    const b = randn([3], { generator: g });
    const o: Opts = { stride: [1, 2, 2], pad: [1, 1, 0], dil: [1, 1, 2] };
    expectClose(conv3d(x, w, b, { stride: o.stride, padding: o.pad, dilation: o.dil }), reference(x, w, b, o));
  });
});

describe('conv gradients', () => {
  it('conv2d: stride, padding, dilation, groups, bias', () => {
    const g = gen();
    const x = randn([2, 4, 5, 5], { generator: g });
    const w = randn([4, 2, 3, 3], { generator: g });
    const b = randn([4], { generator: g });
    const f = (xx: Tensor, ww: Tensor, bb: Tensor) =>
      conv2d(xx, ww, bb, { stride: [2, 1], padding: 1, dilation: [1, 2], groups: 2 });
    expect(gradcheck(f, [x, w, b])).toEqual([]);
  });
  it('conv2d pointwise (no im2col) with batch 2', () => {
    const g = gen();
    const x = randn([2, 3, 3, 3], { generator: g });
    const w = randn([2, 3, 1, 1], { generator: g });
    const b = randn([2], { generator: g });
    expect(gradcheck((xx, ww, bb) => conv2d(xx!, ww!, bb), [x, w, b])).toEqual([]);
  });
  it('conv2d batch 1 without bias, gradient to the input only', () => {
    const g = gen();
    const x = randn([1, 2, 4, 4], { generator: g });
    const w = randn([3, 2, 3, 3], { generator: g });
    expect(gradcheck((xx) => conv2d(xx!, w, null, { padding: 'same' }), [x])).toEqual([]);
    expect(w.grad).toBeNull();
  });
  it('conv1d and conv3d', () => {
    const g = gen();
    const x1 = randn([2, 2, 7], { generator: g });
    const w1 = randn([2, 1, 3], { generator: g });
    expect(gradcheck((xx, ww) => conv1d(xx!, ww!, null, { padding: 1, stride: 2, groups: 2 }), [x1, w1])).toEqual([]);
    const x3 = randn([1, 2, 3, 4, 3], { generator: g });
    const w3 = randn([2, 2, 2, 2, 2], { generator: g });
    const b3 = randn([2], { generator: g });
    expect(gradcheck((xx, ww, bb) => conv3d(xx!, ww!, bb, { padding: [0, 1, 1] }), [x3, w3, b3])).toEqual([]);
  });
});

describe('conv argument validation', () => {
  it('rejects mismatched channels, bad groups, bad bias and too-small inputs', () => {
    const x = randn([1, 3, 5, 5]);
    expect(() => conv2d(x, randn([2, 2, 3, 3]))).toThrow(ShapeError);
    expect(() => conv2d(x, randn([2, 2, 3, 3]))).toThrow(/3/);
    expect(() => conv2d(x, randn([4, 1, 3, 3]), null, { groups: 2 })).toThrow(/divisible by groups/);
    expect(() => conv2d(x, randn([2, 3, 3, 3]), randn([3]))).toThrow(/bias must have shape \[2\]/);
    expect(() => conv2d(x, randn([2, 3, 7, 7]))).toThrow(/too small/);
    expect(() => conv2d(randn([3, 5]), randn([2, 3, 3, 3]))).toThrow(ShapeError);
  });
  it('rejects bad stride, padding and dilation values', () => {
    const x = randn([1, 1, 5, 5]);
    const w = randn([1, 1, 3, 3]);
    expect(() => conv2d(x, w, null, { stride: 0 })).toThrow(InvalidArgumentError);
    expect(() => conv2d(x, w, null, { padding: -1 })).toThrow(InvalidArgumentError);
    expect(() => conv2d(x, w, null, { dilation: [1, 2, 3] })).toThrow(/1 or 2 values/);
    expect(() => conv2d(x, w, null, { stride: 2, padding: 'same' })).toThrow(/stride 1/);
  });
});
