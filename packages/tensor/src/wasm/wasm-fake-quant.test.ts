import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Generator, Tensor } from '../index.js';
import { fakeQuantizeSymmetric, type FakeQuantizeSymmetricAttrs } from '../ops/fake-quantize-symmetric.js';
import { kernels, type TensorKernel } from '../registry.js';
import { loadWasmBackend, wasmStatus } from './wasm-backend.js';

type Kernel = TensorKernel<FakeQuantizeSymmetricAttrs>;
const forward = {
  wasm: kernels.kernelOn<Kernel>('FakeQuantizeSymmetric', 'wasm')!,
  cpu: kernels.kernelOn<Kernel>('FakeQuantizeSymmetric', 'cpu')!,
};
const backward = {
  wasm: kernels.kernelOn<Kernel>('FakeQuantizeSymmetricBackward', 'wasm')!,
  cpu: kernels.kernelOn<Kernel>('FakeQuantizeSymmetricBackward', 'cpu')!,
};

const f32 = (data: Float32Array, shape: number[]): Tensor => new Tensor({ data, shape, dtype: 'float32' });
const bits = (t: Tensor): number[] => Array.from(new Uint32Array((t.values() as Float32Array).slice().buffer));

/**
 * Values that land on every path: exact ties k + ½ (positive and negative), just beside them, zeros
 * of both signs, the clip points and beyond, NaN and ±Infinity, and random ones; the length is not a
 * multiple of four so the scalar tail runs too.
 */
function awkwardValues(n: number, scales: Float32Array, inner: number, gen: Generator): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const s = scales[Math.floor(i / inner) % scales.length]!;
    const k = (gen.nextUint32() % 300) - 150;
    const kind = gen.nextUint32() % 8;
    out[i] =
      kind === 0
        ? (k + 0.5) * s
        : kind === 1
          ? Math.fround((k + 0.5) * s) * (1 + 2 ** -23)
          : kind === 2
            ? i % 2
              ? -0
              : 0
            : kind === 3
              ? i % 3 === 0
                ? Number.NaN
                : i % 3 === 1
                  ? Infinity
                  : -Infinity
              : kind === 4
                ? (k < 0 ? -128.5 : 127.5) * s
                : (gen.nextUint32() / 2 ** 32 - 0.5) * 400 * s;
  }
  return out;
}

afterEach(() => {
  if (!wasmStatus().loaded) loadWasmBackend();
});

describe('wasm FakeQuantizeSymmetric against the cpu reference', () => {
  const cases: [string, number[], number, FakeQuantizeSymmetricAttrs][] = [
    [
      'per tensor, int8, half up',
      [3, 5, 7, 11],
      -1,
      { quantMin: -128, quantMax: 127, chAxis: -1, rounding: 'half_up' },
    ],
    [
      'per tensor, int8, half even',
      [3, 5, 7, 11],
      -1,
      { quantMin: -128, quantMax: 127, chAxis: -1, rounding: 'half_even' },
    ],
    [
      'per channel (axis 1), int16, half up',
      [3, 6, 9, 7],
      1,
      { quantMin: -32768, quantMax: 32767, chAxis: 1, rounding: 'half_up' },
    ],
    [
      'per channel (axis 0), int8, half even',
      [6, 13, 5, 5],
      0,
      { quantMin: -128, quantMax: 127, chAxis: 0, rounding: 'half_even' },
    ],
  ];
  it.each(cases)('%s: the same bits forward and backward', (_name, shape, chAxis, attrs) => {
    const gen = new Generator(11);
    const channels = chAxis < 0 ? 1 : shape[chAxis]!;
    const scales = Float32Array.from({ length: channels }, (_, c) => Math.fround(0.003 * (c + 1) + 0.0171));
    const inner = chAxis < 0 ? shape.reduce((a, b) => a * b, 1) : shape.slice(chAxis + 1).reduce((a, b) => a * b, 1);
    const size = shape.reduce((a, b) => a * b, 1);
    expect(size % 4).not.toBe(0);
    const x = f32(awkwardValues(size, scales, inner, gen), shape);
    const s = f32(scales, [channels]);
    const g = f32(
      Float32Array.from({ length: size }, (_, i) => (i % 5 === 0 ? -0 : Math.sin(i))),
      shape,
    );
    expect(forward.wasm.accepts!([x, s], attrs)).toBe(true);
    const yw = forward.wasm.fn([x, s], attrs, {}) as Tensor;
    const yc = forward.cpu.fn([x, s], attrs, {}) as Tensor;
    expect(bits(yw)).toEqual(bits(yc));
    const dw = backward.wasm.fn([x, s, g], attrs, {}) as Tensor;
    const dc = backward.cpu.fn([x, s, g], attrs, {}) as Tensor;
    expect(bits(dw)).toEqual(bits(dc));
    // the values that matter, from the definition: a tie rounds up (half up) or to even, clipping saturates
    const yv = yc.values();
    const xv = x.values();
    for (let i = 0; i < size; i++) {
      const sc = scales[Math.floor(i / inner) % channels]!;
      const q = xv[i]! / sc;
      if (!Number.isFinite(q)) continue;
      const r =
        attrs.rounding === 'half_up'
          ? Math.floor(q + 0.5)
          : Math.round(q) - (Math.abs(q % 1) === 0.5 && Math.round(q) % 2 !== 0 ? 1 : 0);
      // (by value: the sign of a zero is the kernels' business, checked bit for bit above)
      expect(Math.abs(yv[i]! - Math.fround(Math.min(attrs.quantMax, Math.max(attrs.quantMin, r)) * sc))).toBe(0);
    }
  });

  it('NaN stays NaN, ±Infinity saturates, and the gradient passes only inside the range', () => {
    const attrs: FakeQuantizeSymmetricAttrs = { quantMin: -128, quantMax: 127, chAxis: -1, rounding: 'half_up' };
    const s = f32(Float32Array.of(0.5), [1]);
    const x = f32(
      Float32Array.from(
        { length: 1024 },
        (_, i) => [Number.NaN, Infinity, -Infinity, 63.5, 63.74, -64.25, 64, -65][i % 8]!,
      ),
      [1024],
    );
    const y = fakeQuantizeSymmetric(x, s, attrs).values();
    expect(Array.from(y.slice(0, 8))).toEqual([Number.NaN, 63.5, -64, 63.5, 63.5, -64, 63.5, -64]);
    const g = f32(new Float32Array(1024).fill(2), [1024]);
    const d = backward.wasm.fn([x, s, g], attrs, {}) as Tensor;
    expect(Array.from(d.values().slice(0, 8))).toEqual([0, 0, 0, 2, 2, 2, 0, 0]);
  });

  it('small tensors, non-float scales and a non-contiguous input stay on the cpu kernel', () => {
    const attrs: FakeQuantizeSymmetricAttrs = { quantMin: -128, quantMax: 127, chAxis: -1, rounding: 'half_up' };
    const s = f32(Float32Array.of(0.1), [1]);
    expect(forward.wasm.accepts!([f32(new Float32Array(100), [100]), s], attrs)).toBe(false);
    const big = f32(new Float32Array(64 * 64), [64, 64]);
    expect(forward.wasm.accepts!([big, s], attrs)).toBe(true);
    expect(forward.wasm.accepts!([big.transpose(0, 1), s], attrs)).toBe(false);
  });

  it.each(['gemm.wasm', 'gemm-relaxed.wasm'])('the single-thread build wasm/%s gives the same bits', (file) => {
    const bytes = readFileSync(fileURLToPath(new URL(`../../wasm/${file}`, import.meta.url)));
    const attrs: FakeQuantizeSymmetricAttrs = { quantMin: -128, quantMax: 127, chAxis: 1, rounding: 'half_even' };
    const gen = new Generator(5);
    const scales = Float32Array.of(0.02, 0.05, 0.013);
    const x = f32(awkwardValues(2 * 3 * 401, scales, 401, gen), [2, 3, 401]);
    const s = f32(scales, [3]);
    const expected = bits(forward.cpu.fn([x, s], attrs, {}) as Tensor);
    try {
      expect(loadWasmBackend(bytes)).toMatchObject({ loaded: true, source: 'bytes' });
      expect(bits(forward.wasm.fn([x, s], attrs, {}) as Tensor)).toEqual(expected);
    } finally {
      loadWasmBackend();
    }
  });
});
