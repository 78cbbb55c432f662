import type { HistogramCountsAttrs } from '../ops/histogram-counts.js';
import { make } from '../ops/util.js';
import type { NoteFallback } from './cpu-fallback.js';
import { align64, type Arena } from './wasm-arena.js';
import { registerWasmStatisticKernel } from './wasm-statistic-kernel.js';

// Host side of assembly/_histogram.ts: stages the values in slices of at most SLICE_FLOATS, so a large
// activation never needs all of itself in wasm memory, and counts every slice into the same slots.

export interface HistogramExports {
  histogramCounts(x: number, n: number, inv: number, bins: number, counts: number, pow2: number): void;
}

export interface WasmHistogram {
  run(x: Float32Array, a: HistogramCountsAttrs): Int32Array;
}

const SLICE_FLOATS = 4 << 20;
/** Count arrays the kernel spreads the values over (assembly/_histogram.ts HISTOGRAM_COPIES). */
const COPIES = 4;
/** Smallest array the wasm kernel takes. */
export const HISTOGRAM_MIN_ELEMENTS = 1024;

export function createWasmHistogram(exports: HistogramExports, arena: Arena): WasmHistogram {
  return {
    run(x, { bins, inv }) {
      const slots = 2 * bins + 1;
      const pow2 = isFloat32PowerOfTwo(inv) ? 1 : 0;
      const countsP = arena.base;
      const xp = align64(countsP + COPIES * slots * 4);
      const slice = Math.min(x.length, SLICE_FLOATS);
      const heap = arena.reserve(align64(xp + slice * 4) - arena.base);
      new Int32Array(heap.buffer, countsP, COPIES * slots).fill(0);
      for (let at = 0; at < x.length; at += slice) {
        const n = Math.min(slice, x.length - at);
        heap.set(x.subarray(at, at + n), xp >>> 2);
        exports.histogramCounts(xp, n, inv, bins, countsP, pow2);
      }
      const copies = new Int32Array(arena.heap().buffer, countsP, COPIES * slots);
      const counts = copies.slice(0, slots);
      for (let k = 1; k < COPIES; k++) for (let j = 0; j < slots; j++) counts[j]! += copies[k * slots + j]!;
      return counts;
    },
  };
}

/** Whether v is 2^k with k an integer in float32's normal exponent range (so x·v is exact in float32). */
function isFloat32PowerOfTwo(v: number): boolean {
  if (!(v > 0)) return false;
  const k = Math.log2(v);
  return Number.isInteger(k) && k >= -126 && k <= 127 && 2 ** k === v;
}

/** The wasm HistogramCounts kernel; a failed memory.grow at run time falls back to the cpu kernel. */
export function registerWasmHistogramKernel(histogram: () => WasmHistogram | null, noteFallback: NoteFallback): void {
  registerWasmStatisticKernel(
    'HistogramCounts',
    histogram,
    HISTOGRAM_MIN_ELEMENTS,
    (counts) => make(counts, [counts.length], 'int32'),
    noteFallback,
  );
}
