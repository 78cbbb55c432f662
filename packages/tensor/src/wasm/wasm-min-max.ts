import type { ChannelMinMaxAttrs } from '../ops/channel-min-max.js';
import { make } from '../ops/util.js';
import type { NoteFallback } from './cpu-fallback.js';
import { align64, type Arena } from './wasm-arena.js';
import { registerWasmStatisticKernel } from './wasm-statistic-kernel.js';

// Host side of assembly/_min-max.ts: stages the values in slices of at most SLICE_FLOATS (whole
// [channels, inner] blocks, at least one), so a large activation never needs all of itself in wasm memory.

export interface MinMaxExports {
  channelMinMax(x: number, outer: number, channels: number, inner: number, out: number): void;
}

export interface WasmMinMax {
  run(x: Float32Array, a: ChannelMinMaxAttrs): Float32Array;
}

const SLICE_FLOATS = 4 << 20;
/** Smallest array the wasm kernel takes. */
export const MIN_MAX_MIN_ELEMENTS = 4096;

export function createWasmMinMax(exports: MinMaxExports, arena: Arena): WasmMinMax {
  return {
    run(x, { outer, channels, inner }) {
      const block = channels * inner;
      const blocks = Math.max(1, Math.min(outer, Math.floor(SLICE_FLOATS / Math.max(1, block))));
      const xp = arena.base;
      const outP = align64(xp + blocks * block * 4);
      const partP = align64(outP + channels * 16);
      const heap = arena.reserve(align64(partP + channels * 16) - arena.base);
      const result = new Float32Array(2 * channels);
      for (let c = 0; c < channels; c++) {
        result[2 * c] = Infinity;
        result[2 * c + 1] = -Infinity;
      }
      for (let o = 0; o < outer; o += blocks) {
        const n = Math.min(blocks, outer - o);
        heap.set(x.subarray(o * block, (o + n) * block), xp >>> 2);
        exports.channelMinMax(xp, n, channels, inner, outP);
        const part = new Float64Array(arena.heap().buffer, outP, 2 * channels);
        for (let c = 0; c < channels; c++) {
          if (part[2 * c]! < result[2 * c]!) result[2 * c] = part[2 * c]!;
          if (part[2 * c + 1]! > result[2 * c + 1]!) result[2 * c + 1] = part[2 * c + 1]!;
        }
      }
      return result;
    },
  };
}

/** The wasm ChannelMinMax kernel; a failed memory.grow at run time falls back to the cpu kernel. */
export function registerWasmMinMaxKernel(minMax: () => WasmMinMax | null, noteFallback: NoteFallback): void {
  registerWasmStatisticKernel(
    'ChannelMinMax',
    minMax,
    MIN_MAX_MIN_ELEMENTS,
    (minima: Float32Array, a: ChannelMinMaxAttrs) => make(minima, [a.channels, 2]),
    noteFallback,
  );
}
