import { channelLayout, type FakeQuantizeSymmetricAttrs } from '../ops/fake-quantize-symmetric.js';
import { make } from '../ops/util.js';
import { registerKernel, type TensorKernel } from '../registry.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';
import type { Tensor } from '../tensor.js';
import { align64, type Arena } from './wasm-arena.js';
import { MAX_WASM_BYTES } from './wasm-gemm.js';

// Host side of assembly/_fake-quant.ts: stages x (and the gradient), the scales, runs on this thread
// and copies the result into a fresh array. Measured on a 64×16×28×28 activation: the JavaScript
// loops spend about 11 ns per value (a float64 division, a floor and a clamp per value), the kernel with
// its copies about a quarter of that.

export interface FakeQuantExports {
  fakeQuantizeSymmetric(
    x: number,
    g: number,
    y: number,
    scales: number,
    outer: number,
    channels: number,
    inner: number,
    lo: number,
    hi: number,
    halfEven: number,
  ): void;
}

export interface WasmFakeQuant {
  /** Forward values, or with `g` the straight-through gradient. */
  run(
    x: Float32Array,
    scales: Float32Array,
    g: Float32Array | null,
    layout: [number, number, number],
    a: FakeQuantizeSymmetricAttrs,
  ): Float32Array;
}

/** Smallest tensor the wasm kernels take (below it the staging costs more than the loop). */
export const FAKE_QUANT_MIN_ELEMENTS = 1024;

/** Bytes of wasm memory a call stages. */
export function wasmFakeQuantBytes(values: number, channels: number): number {
  return 3 * (values * 4 + 64) + channels * 4 + 64;
}

export function createWasmFakeQuant(exports: FakeQuantExports, arena: Arena): WasmFakeQuant {
  return {
    run(x, scales, g, [outer, channels, inner], a) {
      const len = x.length;
      let top = arena.base;
      const alloc = (floats: number): number => {
        const at = top;
        top = align64(top + floats * 4);
        return at;
      };
      const xp = alloc(len);
      const gp = g ? alloc(len) : 0;
      const yp = alloc(len);
      const sp = alloc(channels);
      const heap = arena.reserve(top - arena.base);
      heap.set(x, xp >>> 2);
      if (g) heap.set(g, gp >>> 2);
      heap.set(scales.subarray(0, channels), sp >>> 2);
      exports.fakeQuantizeSymmetric(
        xp,
        gp,
        yp,
        sp,
        outer,
        channels,
        inner,
        a.quantMin,
        a.quantMax,
        a.rounding === 'half_even' ? 1 : 0,
      );
      const out = new Float32Array(len);
      out.set(arena.heap().subarray(yp >>> 2, (yp >>> 2) + len));
      return out;
    },
  };
}

const dense = (t: Tensor | undefined): boolean => !!t && t.dtype === 'float32' && t.isContiguous();

/** The wasm FakeQuantizeSymmetric kernels; a failed memory.grow at run time falls back to the cpu kernel. */
export function registerWasmFakeQuantKernels(fakeQuant: () => WasmFakeQuant | null, noteFallback: NoteFallback): void {
  for (const [op, withGradient] of [
    ['FakeQuantizeSymmetric', false],
    ['FakeQuantizeSymmetricBackward', true],
  ] as const) {
    registerKernel<TensorKernel<FakeQuantizeSymmetricAttrs>>({
      op,
      backend: 'wasm',
      accepts: (inputs: Tensor[], a: FakeQuantizeSymmetricAttrs) => {
        const [x, s, g] = inputs;
        return (
          fakeQuant() !== null &&
          dense(x) &&
          dense(s) &&
          (!withGradient || dense(g)) &&
          x!.size >= FAKE_QUANT_MIN_ELEMENTS &&
          Number.isInteger(a.quantMin) &&
          Number.isInteger(a.quantMax) &&
          wasmFakeQuantBytes(x!.size, s!.size) <= MAX_WASM_BYTES
        );
      },
      fn: (inputs, a, saved) => {
        const [x, s, g] = inputs;
        return orCpu(
          noteFallback,
          op,
          x!.shape.join('×'),
          () => {
            const layout = channelLayout(x!.shape, a.chAxis);
            const y = fakeQuant()!.run(
              x!.values() as Float32Array,
              s!.values() as Float32Array,
              withGradient ? (g!.values() as Float32Array) : null,
              layout,
              a,
            );
            return make(y, [...x!.shape]);
          },
          () => cpuKernel<TensorKernel<FakeQuantizeSymmetricAttrs>>(op)(inputs, a, saved),
        );
      },
    });
  }
}
