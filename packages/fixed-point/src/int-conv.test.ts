import {
  conv2d,
  DTypeError,
  Generator,
  InvalidArgumentError,
  kernels,
  profileOps,
  ShapeError,
  Tensor,
  wasmStatus,
} from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { intConv, intConvTranspose } from './int-conv.js';

const I32_MAX = 2147483647;
const I32_MIN = -2147483648;

function ints(g: Generator, shape: number[], lo: number, hi: number, dtype: 'int8' | 'int16'): Tensor {
  const n = shape.reduce((p, d) => p * d, 1);
  const data = dtype === 'int8' ? new Int8Array(n) : new Int16Array(n);
  for (let i = 0; i < n; i++) data[i] = lo + g.int(hi - lo + 1);
  return new Tensor({ data, shape, dtype });
}

interface Geo {
  stride: number[];
  pad: number[];
  dil: number[];
  groups: number;
  outPad?: number[];
}

const lift = (a: number[], f: number) => [...new Array<number>(3 - a.length).fill(f), ...a];
const sat32 = (v: number) => Math.min(I32_MAX, Math.max(I32_MIN, v));

/** Direct float64 cross-correlation over 3 spatial dims; returns the saturated sums and the shape. */
function refConv(x: Tensor, w: Tensor, o: Geo): { data: number[]; shape: number[] } {
  const r = x.ndim - 2;
  const xv = x.values();
  const wv = w.values();
  const [N, C] = x.shape as [number, number];
  const [D, H, W] = lift(x.shape.slice(2), 1) as [number, number, number];
  const [CO, CIG] = w.shape as [number, number];
  const [KD, KH, KW] = lift(w.shape.slice(2), 1) as [number, number, number];
  const s = lift(o.stride, 1);
  const p = lift(o.pad, 0);
  const d = lift(o.dil, 1);
  const ins = [D, H, W];
  const ks = [KD, KH, KW];
  const out = [0, 1, 2].map((i) => Math.floor((ins[i]! + 2 * p[i]! - d[i]! * (ks[i]! - 1) - 1) / s[i]!) + 1);
  const [OD, OH, OW] = out as [number, number, number];
  const COG = CO / o.groups;
  const data: number[] = [];
  for (let n = 0; n < N; n++)
    for (let co = 0; co < CO; co++) {
      const g = Math.floor(co / COG);
      for (let z = 0; z < OD; z++)
        for (let y = 0; y < OH; y++)
          for (let xo = 0; xo < OW; xo++) {
            let acc = 0;
            for (let ci = 0; ci < CIG; ci++)
              for (let a = 0; a < KD; a++)
                for (let b = 0; b < KH; b++)
                  for (let c = 0; c < KW; c++) {
                    const zi = z * s[0]! - p[0]! + a * d[0]!;
                    const yi = y * s[1]! - p[1]! + b * d[1]!;
                    const xi = xo * s[2]! - p[2]! + c * d[2]!;
                    if (zi < 0 || zi >= D || yi < 0 || yi >= H || xi < 0 || xi >= W) continue;
                    acc +=
                      xv[(((n * C + g * CIG + ci) * D + zi) * H + yi) * W + xi]! *
                      wv[(((co * CIG + ci) * KD + a) * KH + b) * KW + c]!;
                  }
            data.push(sat32(acc));
          }
    }
  return { data, shape: [N, CO, ...out.slice(3 - r)] };
}

/** Direct float64 transposed convolution (scatter): weight [Cin, Cout/groups, k...]. */
function refConvT(x: Tensor, w: Tensor, o: Geo): { data: number[]; shape: number[] } {
  const r = x.ndim - 2;
  const xv = x.values();
  const wv = w.values();
  const [N, C] = x.shape as [number, number];
  const [D, H, W] = lift(x.shape.slice(2), 1) as [number, number, number];
  const COG = w.shape[1]!;
  const [KD, KH, KW] = lift(w.shape.slice(2), 1) as [number, number, number];
  const s = lift(o.stride, 1);
  const p = lift(o.pad, 0);
  const d = lift(o.dil, 1);
  const op = lift(o.outPad ?? [0], 0);
  const ins = [D, H, W];
  const ks = [KD, KH, KW];
  const out = [0, 1, 2].map((i) => (ins[i]! - 1) * s[i]! - 2 * p[i]! + d[i]! * (ks[i]! - 1) + op[i]! + 1);
  const [OD, OH, OW] = out as [number, number, number];
  const CO = COG * o.groups;
  const CIG = C / o.groups;
  const acc = new Float64Array(N * CO * OD * OH * OW);
  for (let n = 0; n < N; n++)
    for (let ci = 0; ci < C; ci++) {
      const g = Math.floor(ci / CIG);
      for (let z = 0; z < D; z++)
        for (let y = 0; y < H; y++)
          for (let xi = 0; xi < W; xi++)
            for (let co = 0; co < COG; co++)
              for (let a = 0; a < KD; a++)
                for (let b = 0; b < KH; b++)
                  for (let c = 0; c < KW; c++) {
                    const zo = z * s[0]! - p[0]! + a * d[0]!;
                    const yo = y * s[1]! - p[1]! + b * d[1]!;
                    const xo = xi * s[2]! - p[2]! + c * d[2]!;
                    if (zo < 0 || zo >= OD || yo < 0 || yo >= OH || xo < 0 || xo >= OW) continue;
                    const o = (((n * CO + g * COG + co) * OD + zo) * OH + yo) * OW + xo;
                    acc[o] =
                      acc[o]! +
                      xv[(((n * C + ci) * D + z) * H + y) * W + xi]! *
                        wv[(((ci * COG + co) * KD + a) * KH + b) * KW + c]!;
                  }
    }
  return { data: Array.from(acc, sat32), shape: [N, CO, ...out.slice(3 - r)] };
}

function expectExact(y: Tensor, ref: { data: number[]; shape: number[] }): void {
  expect(y.dtype).toBe('int32');
  expect(y.isContiguous()).toBe(true);
  expect(y.shape).toEqual(ref.shape);
  const v = y.values();
  let bad = 0;
  for (let i = 0; i < ref.data.length; i++) if (v[i] !== ref.data[i]) bad++;
  expect(bad).toBe(0);
}

const geo = (o: Partial<Geo> & { r: number }): Geo => ({
  stride: o.stride ?? new Array<number>(o.r).fill(1),
  pad: o.pad ?? new Array<number>(o.r).fill(0),
  dil: o.dil ?? new Array<number>(o.r).fill(1),
  groups: o.groups ?? 1,
  ...(o.outPad ? { outPad: o.outPad } : {}),
});

describe('intConv', () => {
  const cases: { name: string; x: number[]; w: number[]; o: Geo }[] = [
    { name: '1-d, stride 2, padding 1', x: [2, 4, 11], w: [6, 4, 3], o: geo({ r: 1, stride: [2], pad: [1] }) },
    { name: '1-d dilated', x: [1, 3, 12], w: [2, 3, 3], o: geo({ r: 1, dil: [3], pad: [2] }) },
    {
      name: '2-d groups 2, anisotropic stride/pad/dilation',
      x: [2, 6, 9, 8],
      w: [4, 3, 3, 3],
      o: geo({ r: 2, stride: [1, 2], pad: [2, 1], dil: [2, 1], groups: 2 }),
    },
    { name: '2-d depthwise', x: [2, 5, 7, 7], w: [10, 1, 3, 3], o: geo({ r: 2, pad: [1, 1], groups: 5 }) },
    { name: '2-d pointwise', x: [3, 7, 5, 4], w: [5, 7, 1, 1], o: geo({ r: 2 }) },
    {
      name: '3-d stride/padding/dilation',
      x: [1, 3, 5, 6, 4],
      w: [2, 3, 2, 3, 2],
      o: geo({ r: 3, stride: [1, 2, 1], pad: [1, 1, 0], dil: [2, 1, 1] }),
    },
  ];
  for (const { name, x: xs, w: ws, o } of cases) {
    it(`matches direct sums: ${name} (int8 full range)`, () => {
      const g = new Generator(7);
      const x = ints(g, xs, -128, 127, 'int8');
      const w = ints(g, ws, -128, 127, 'int8');
      expectExact(
        intConv(x, w, { stride: o.stride, padding: o.pad, dilation: o.dil, groups: o.groups }),
        refConv(x, w, o),
      );
    });
  }

  it("supports padding 'same' and an unbatched input", () => {
    const g = new Generator(3);
    const x = ints(g, [4, 6, 5], -128, 127, 'int8');
    const w = ints(g, [3, 4, 3, 3], -128, 127, 'int8');
    const y = intConv(x, w, { padding: 'same' });
    const ref = refConv(
      new Tensor({ data: x.values(), shape: [1, 4, 6, 5], dtype: 'int8' }),
      w,
      geo({ r: 2, pad: [1, 1] }),
    );
    expectExact(y, { data: ref.data, shape: [3, 6, 5] });
  });

  it('is exact for int16 inputs at full range, where a float32 conv rounds (byte split)', () => {
    const g = new Generator(5);
    const x = ints(g, [2, 24, 6, 6], 20000, 32767, 'int16');
    const w = ints(g, [4, 24, 3, 3], 90, 127, 'int8');
    const o = geo({ r: 2, pad: [1, 1] });
    const ref = refConv(x, w, o);
    expect(Math.max(...ref.data)).toBeGreaterThan(2 ** 28);
    const y = intConv(x, w, { padding: 1 });
    expectExact(y, ref);
    // The same sums in float32 are not exact: the test exercises the hard case.
    const f = conv2d(x.toType('float32'), w.toType('float32'), null, { padding: 1 }).values();
    expect(ref.data.some((v, i) => v !== f[i])).toBe(true);
  });

  it('is exact for int16 inputs of both signs with groups', () => {
    const g = new Generator(9);
    const x = ints(g, [1, 8, 5, 5], -32768, 32767, 'int16');
    const w = ints(g, [6, 4, 3, 3], -128, 127, 'int8');
    const o = geo({ r: 2, stride: [2, 1], pad: [1, 0], groups: 2 });
    expectExact(intConv(x, w, { stride: [2, 1], padding: [1, 0], groups: 2 }), refConv(x, w, o));
  });

  it('chunks a long int8 reduction (K = 2304) whose float32 sum would round', () => {
    const g = new Generator(13);
    const x = ints(g, [2, 256, 4, 4], 100, 127, 'int8');
    const w = ints(g, [3, 256, 3, 3], 100, 127, 'int8');
    const ref = refConv(x, w, geo({ r: 2 }));
    expect(Math.min(...ref.data)).toBeGreaterThan(2 ** 24);
    expectExact(intConv(x, w), ref);
    const f = conv2d(x.toType('float32'), w.toType('float32')).values();
    expect(ref.data.some((v, i) => v !== f[i])).toBe(true);
  });

  it('saturates to int32 when the true sum leaves its range', () => {
    // 64 channels · 9 taps · 32767 · 127 ≈ 2.4e9 > 2^31 − 1; channel 1 with weight −128 goes below −2^31.
    const x = new Tensor({ data: new Int16Array(64 * 9).fill(32767), shape: [1, 64, 3, 3], dtype: 'int16' });
    const wd = new Int8Array(3 * 64 * 9);
    wd.fill(127, 0, 576);
    wd.fill(-128, 576, 1152);
    wd.fill(1, 1152);
    const w = new Tensor({ data: wd, shape: [3, 64, 3, 3], dtype: 'int8' });
    expect(Array.from(intConv(x, w).values())).toEqual([I32_MAX, I32_MIN, 576 * 32767]);
  });

  it('falls back to float64 for a kernel too long for one channel (1-d, 640 taps, int16)', () => {
    // 640 taps of |w| >= 120 times a low byte of 255 exceed 2^24 within a single channel.
    const g = new Generator(17);
    const x = ints(g, [1, 2, 650], -32768, 32767, 'int16');
    const w = ints(g, [2, 2, 640], 120, 127, 'int8');
    const wv = w.values();
    for (let i = 0; i < wv.length; i += 2) wv[i] = -wv[i]!;
    expectExact(intConv(x, w, { stride: 3 }), refConv(x, w, geo({ r: 1, stride: [3] })));
  });

  it("runs on the backend's ConvInteger kernel while Σ|x·w| fits int32, on the exact float path beyond", () => {
    const opsOf = (fn: () => unknown) => profileOps(fn).timings.map((t) => t.op);
    const g = new Generator(19);
    // 64 channels · 9 taps · 127 · 20000 ≈ 1.46e9: over the int16 dtype bound, within int32 by the data's maxima.
    const x = ints(g, [2, 64, 4, 4], 15000, 20000, 'int16');
    const w = ints(g, [3, 64, 3, 3], 120, 127, 'int8');
    const ref = refConv(x, w, geo({ r: 2, pad: [1, 1] }));
    expect(Math.max(...ref.data)).toBeGreaterThan(2 ** 30);
    let y: Tensor | undefined;
    const ops = opsOf(() => (y = intConv(x, w, { padding: 1 })));
    expectExact(y!, ref);
    const native = wasmStatus().loaded && kernels.kernelOn('ConvInteger', 'wasm') !== undefined;
    expect(ops.includes('ConvInteger')).toBe(native);
    expect(ops.includes('Conv')).toBe(!native);
    // One input of 32767 in every channel pushes the bound past 2^31 − 1: the float path, same exact sums.
    const xv = x.values();
    for (let c = 0; c < 64; c++) xv[c * 16 + 5] = 32767;
    const ref2 = refConv(x, w, geo({ r: 2, pad: [1, 1] }));
    const ops2 = opsOf(() => (y = intConv(x, w, { padding: 1 })));
    expect(ops2).not.toContain('ConvInteger');
    expectExact(y!, ref2);
  });

  it('rejects bad arguments with typed errors naming intConv', () => {
    const x = new Tensor({ data: new Int8Array(2 * 4 * 4), shape: [1, 2, 4, 4], dtype: 'int8' });
    const w = new Tensor({ data: new Int8Array(3 * 2 * 9), shape: [3, 2, 3, 3], dtype: 'int8' });
    expect(() => intConv(x.toType('float32'), w)).toThrow(DTypeError);
    expect(() => intConv(x, w.toType('int16'))).toThrow(/intConv: weight must have dtype 'int8'/);
    expect(() => intConv(x, w, { groups: 2 })).toThrow(ShapeError);
    expect(() => intConv(x, w, { stride: 0 })).toThrow(InvalidArgumentError);
    expect(() => intConv(x, w, { padding: 'same', stride: 2 })).toThrow(/intConv: padding 'same' needs stride 1/);
    expect(() => intConv(x, w, { dilation: 3 })).toThrow(/intConv: input \[1, 2, 4, 4\] is too small/);
  });
});

describe('intConvTranspose', () => {
  const cases: { name: string; x: number[]; w: number[]; o: Geo; dtype: 'int8' | 'int16' }[] = [
    { name: '1-d stride 2', x: [2, 3, 7], w: [3, 2, 3], o: geo({ r: 1, stride: [2], pad: [1] }), dtype: 'int8' },
    {
      name: '2-d stride 2, output padding 1, groups 2',
      x: [2, 4, 5, 4],
      w: [4, 3, 3, 3],
      o: geo({ r: 2, stride: [2, 2], pad: [1, 1], outPad: [1, 1], groups: 2 }),
      dtype: 'int8',
    },
    {
      name: '2-d dilated, output padding from dilation',
      x: [1, 3, 4, 5],
      w: [3, 2, 2, 3],
      o: geo({ r: 2, stride: [1, 3], dil: [2, 1], outPad: [1, 2] }),
      dtype: 'int8',
    },
    {
      name: '3-d',
      x: [1, 2, 3, 4, 3],
      w: [2, 3, 2, 3, 2],
      o: geo({ r: 3, stride: [2, 1, 2], pad: [0, 1, 1], outPad: [1, 0, 1] }),
      dtype: 'int8',
    },
    {
      name: '2-d int16 full range (byte split)',
      x: [2, 40, 4, 4],
      w: [40, 3, 3, 3],
      o: geo({ r: 2, stride: [2, 2], pad: [1, 1], outPad: [1, 1] }),
      dtype: 'int16',
    },
  ];
  for (const { name, x: xs, w: ws, o, dtype } of cases) {
    it(`matches direct sums: ${name}`, () => {
      const g = new Generator(21);
      const x = ints(g, xs, dtype === 'int8' ? -128 : -32768, dtype === 'int8' ? 127 : 32767, dtype);
      const w = ints(g, ws, -128, 127, 'int8');
      const y = intConvTranspose(x, w, {
        stride: o.stride,
        padding: o.pad,
        dilation: o.dil,
        groups: o.groups,
        outputPadding: o.outPad ?? 0,
      });
      expectExact(y, refConvT(x, w, o));
    });
  }

  it('is exact for same-signed int16 data whose float32 sums round', () => {
    const g = new Generator(23);
    const x = ints(g, [1, 64, 3, 3], 30000, 32767, 'int16');
    const w = ints(g, [64, 2, 3, 3], 100, 127, 'int8');
    const o = geo({ r: 2, stride: [2, 2], outPad: [1, 1] });
    const ref = refConvT(x, w, o);
    expect(Math.max(...ref.data)).toBeGreaterThan(2 ** 27);
    expectExact(intConvTranspose(x, w, { stride: 2, outputPadding: 1 }), ref);
  });

  it('falls back to float64 for a kernel too long for one channel (1-d, 640 taps, int16)', () => {
    const g = new Generator(29);
    const x = ints(g, [1, 2, 9], -32768, 32767, 'int16');
    const w = ints(g, [2, 2, 640], 120, 127, 'int8');
    const wv = w.values();
    for (let i = 1; i < wv.length; i += 2) wv[i] = -wv[i]!;
    const o = geo({ r: 1, stride: [2], pad: [3], outPad: [1] });
    expectExact(intConvTranspose(x, w, { stride: 2, padding: 3, outputPadding: 1 }), refConvT(x, w, o));
  });

  it('rejects bad arguments with typed errors naming intConvTranspose', () => {
    const x = new Tensor({ data: new Int8Array(2 * 9), shape: [1, 2, 3, 3], dtype: 'int8' });
    const w = new Tensor({ data: new Int8Array(3 * 2 * 9), shape: [3, 2, 3, 3], dtype: 'int8' });
    expect(() => intConvTranspose(x, w)).toThrow(
      /intConvTranspose: weight \[3, 2, 3, 3\] must have the input's 2 channels/,
    );
    const w2 = new Tensor({ data: new Int8Array(2 * 2 * 9), shape: [2, 2, 3, 3], dtype: 'int8' });
    expect(() => intConvTranspose(x, w2, { outputPadding: 1 })).toThrow(InvalidArgumentError);
    expect(() => intConvTranspose(x, w2.toType('float32'))).toThrow(DTypeError);
  });
});
