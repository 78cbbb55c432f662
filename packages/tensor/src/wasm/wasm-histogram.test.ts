import { describe, expect, it } from 'vitest';
import { Generator, histogramCounts, Tensor } from '../index.js';
import type { HistogramCountsAttrs } from '../ops/histogram-counts.js';
import { kernels } from '../registry.js';

type Kernel = (inputs: Tensor[], a: HistogramCountsAttrs) => Tensor;
const onWasm = kernels.kernelOn<Kernel>('HistogramCounts', 'wasm')!;
const onCpu = kernels.kernelOn<Kernel>('HistogramCounts', 'cpu')!;
const tensorOf = (v: Float32Array) => new Tensor({ data: v, shape: [v.length], dtype: 'float32' });

describe('HistogramCounts: wasm against the cpu reference', () => {
  it('random data with NaN, ±0, values on bin edges and tiny values, for several bin counts and ranges', () => {
    const gen = new Generator(21);
    const u = (n: number): number => gen.nextUint32() % n;
    for (let t = 0; t < 24; t++) {
      const bins = [2, 64, 512, 2048, 4096][t % 5]!;
      const range = 2 ** (u(12) - 6);
      const n = 1024 + u(20000);
      const v = Float32Array.from({ length: n }, () => (gen.nextUint32() / 2 ** 32 - 0.5) * 2 * range * 0.999);
      for (let k = 0; k < 200; k++) {
        const edge = ((u(2 * bins - 1) - bins + 1) * range) / bins; // exactly on a bin edge inside the range
        v[u(n)] = [Number.NaN, 0, -0, edge, -edge, 1e-40, -1e-40, Math.fround(range * 0.9999)][k % 8]!;
      }
      if (t % 3 === 0) v.fill(0, 0, n >> 1); // half zeros, as after a ReLU
      const a = { bins, inv: bins / range };
      const x = tensorOf(v);
      expect(onWasm.accepts!([x], a)).toBe(true);
      const w = Array.from(onWasm.fn([x], a).values());
      const c = Array.from(onCpu.fn([x], a).values());
      expect(w).toEqual(c);
      expect(w.reduce((s, k) => s + k, 0)).toBe(n);
    }
  });

  it('the slots of known values: ±0 in the first bin above zero, NaN last, inv 0 for an all-zero array', () => {
    const v = new Float32Array(2048);
    v.set([0.5, -0.5, 1.75, -1.75, -0, Number.NaN, 0.25, -0.25]);
    // bins 4 over [-2, 2): width 0.5; slot 4 + k for x >= 0, 3 − k for x < 0
    const counts = histogramCounts(v, { bins: 4, inv: 2 });
    expect(Array.from(counts)).toEqual([1, 0, 1, 1, 2042, 1, 0, 1, 1]);
    expect(Array.from(histogramCounts(new Float32Array(4096).fill(-0), { bins: 4, inv: 0 }))).toEqual([
      0, 0, 0, 0, 4096, 0, 0, 0, 0,
    ]);
  });

  it('counts arrays larger than one staged slice (4M floats)', () => {
    const n = (4 << 20) + 4099;
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = ((i % 7) - 3) * 0.25;
    const counts = histogramCounts(v, { bins: 8, inv: 8 }); // range 1, width 1/8
    const expected = new Int32Array(17);
    for (let i = 0; i < n; i++) {
      const y = v[i]! * 8;
      expected[y >= 0 ? 8 + Math.floor(y) : 7 - Math.floor(-y)]!++;
    }
    expect(Array.from(counts)).toEqual(Array.from(expected));
  });
});
