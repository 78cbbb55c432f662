import { isGradEnabled } from '../autograd.js';
import { poolOutSize, type MaxPoolAttrs } from '../ops/pool.js';
import { make } from '../ops/util.js';
import { registerKernel, type Saved } from '../registry.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';
import type { Tensor } from '../tensor.js';
import { align64, type Arena } from './wasm-arena.js';

// Host side of assembly/_max-pool.ts: the planes go through wasm memory in slices of at most
// SLICE_BYTES, so a large activation (a ResNet stem's 32×64×112×112) never needs all of itself staged.
// Only when no gradient will be asked for: training keeps the cpu kernel, which records the argmax.
// Measured on that activation (3×3, stride 2, padding 1): the cpu kernel about 0.6 s, this one a few
// hundredths.

export interface MaxPoolExports {
  maxPool2d(
    x: number,
    y: number,
    scratch: number,
    planes: number,
    h: number,
    w: number,
    oh: number,
    ow: number,
    kh: number,
    kw: number,
    sh: number,
    sw: number,
    ph: number,
    pw: number,
    dh: number,
    dw: number,
    hp: number,
    wp: number,
  ): void;
}

export interface WasmMaxPool {
  run(
    x: Float32Array,
    planes: number,
    h: number,
    w: number,
    a: MaxPoolAttrs,
  ): { y: Float32Array; oh: number; ow: number };
}

const SLICE_BYTES = 16 << 20;
/** Smallest input the wasm kernel takes. */
export const MAX_POOL_MIN_ELEMENTS = 4096;

export function createWasmMaxPool(exports: MaxPoolExports, arena: Arena): WasmMaxPool {
  return {
    run(x, planes, h, w, a) {
      const [kh, kw] = a.kernel as [number, number];
      const [sh, sw] = a.stride as [number, number];
      const [ph, pw] = a.padding as [number, number];
      const [dh, dw] = a.dilation as [number, number];
      const oh = poolOutSize(h, kh, sh, ph, dh, a.ceilMode);
      const ow = poolOutSize(w, kw, sw, pw, dw, a.ceilMode);
      // the padded extent every window's taps fall in, the image starting at (ph, pw)
      const hp = Math.max(h + ph, (oh - 1) * sh + (kh - 1) * dh + 1);
      const wp = Math.max(w + pw, (ow - 1) * sw + (kw - 1) * dw + 1);
      const y = new Float32Array(planes * oh * ow);
      const plane = h * w;
      const slice = Math.max(1, Math.min(planes, Math.floor(SLICE_BYTES / (4 * plane))));
      const xp = arena.base;
      const yp = align64(xp + slice * plane * 4);
      const sp = align64(yp + slice * oh * ow * 4);
      const heap = arena.reserve(align64(sp + (hp * wp + wp + 8) * 4) - arena.base);
      for (let p0 = 0; p0 < planes; p0 += slice) {
        const n = Math.min(slice, planes - p0);
        heap.set(x.subarray(p0 * plane, (p0 + n) * plane), xp >>> 2);
        exports.maxPool2d(xp, yp, sp, n, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, hp, wp);
        y.set(heap.subarray(yp >>> 2, (yp >>> 2) + n * oh * ow), p0 * oh * ow);
      }
      return { y, oh, ow };
    },
  };
}

/** The wasm MaxPool kernel (forward without argmax); a failed memory.grow falls back to the cpu kernel. */
export function registerWasmMaxPoolKernel(maxPool: () => WasmMaxPool | null, noteFallback: NoteFallback): void {
  registerKernel<(i: Tensor[], a: MaxPoolAttrs, s: Saved) => Tensor>({
    op: 'MaxPool',
    backend: 'wasm',
    accepts: (inputs: Tensor[], a: MaxPoolAttrs) => {
      const x = inputs[0]!;
      return (
        maxPool() !== null &&
        x.dtype === 'float32' &&
        x.isContiguous() &&
        x.ndim >= 2 &&
        x.size >= MAX_POOL_MIN_ELEMENTS &&
        a.kernel.length === 2 &&
        !(isGradEnabled() && x.requiresGrad)
      );
    },
    fn: (inputs, a, saved) => {
      const x = inputs[0]!;
      const h = x.shape[x.ndim - 2]!;
      const w = x.shape[x.ndim - 1]!;
      return orCpu(
        noteFallback,
        'MaxPool',
        x.shape.join('×'),
        () => {
          const r = maxPool()!.run(x.values() as Float32Array, x.size / (h * w), h, w, a);
          return make(r.y, [...x.shape.slice(0, -2), r.oh, r.ow]);
        },
        () => cpuKernel<(i: Tensor[], a: MaxPoolAttrs, s: Saved) => Tensor>('MaxPool')(inputs, a, saved),
      );
    },
  });
}
