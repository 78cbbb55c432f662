import { kernels, registerKernel } from '../registry.js';
import { Tensor } from '../tensor.js';
import { make } from './util.js';

// HistogramCounts: how many values fall in each bin of a signed histogram, as the histogram observers
// need on every activation of every calibration batch. With y = x·inv (in float64), bins per sign `bins`:
// slot bins + floor(|y|) for x >= 0 (−0 included), bins − 1 − floor(|y|) for x < 0, and slot 2·bins for
// NaN. The caller picks inv so that every |y| < bins (inv 0 when all values are zero or NaN). The cpu
// kernel is the reference; the wasm one (assembly/_histogram.ts) gives the same counts.

export interface HistogramCountsAttrs {
  /** Bins per sign; the result has 2·bins + 1 slots. */
  bins: number;
  /** Bins per unit of x: bins / range, range above every |x|. */
  inv: number;
}

/** Adds the slot counts of `values` to `counts` (2·bins + 1 slots); the loop of the cpu kernel. */
export function addHistogramCounts(
  values: ArrayLike<number>,
  { bins, inv }: HistogramCountsAttrs,
  counts: Int32Array,
): void {
  const nanSlot = 2 * bins;
  const n = values.length;
  for (let i = 0; i < n; i++) {
    const y = values[i]! * inv;
    // |y| < bins < 2^31, so `| 0` floors it
    const k = Math.abs(y) | 0;
    const slot = y >= 0 ? bins + k : y < 0 ? bins - 1 - k : nanSlot;
    counts[slot] = counts[slot]! + 1;
  }
}

type Kernel = (inputs: Tensor[], a: HistogramCountsAttrs) => Tensor;

registerKernel<Kernel>({
  op: 'HistogramCounts',
  backend: 'cpu',
  fn: ([x], a) => {
    const counts = new Int32Array(2 * a.bins + 1);
    addHistogramCounts(x!.values(), a, counts);
    return make(counts, [counts.length], 'int32');
  },
});

/** The slot counts (2·bins + 1, NaN last) of float32 `values` on the fastest kernel that serves them. */
export function histogramCounts(values: Float32Array, attrs: HistogramCountsAttrs): Int32Array {
  const x = new Tensor({ data: values, shape: [values.length], dtype: 'float32' });
  return kernels.resolve<Kernel>('HistogramCounts', [x], attrs).fn([x], attrs).values() as Int32Array;
}
