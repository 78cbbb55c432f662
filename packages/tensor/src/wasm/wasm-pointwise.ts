import { align64, type Arena } from './wasm-arena.js';

// Host side of assembly/_pointwise.ts: copies the operands into wasm memory, runs the kernel on
// this thread, and copies the result out into a fresh array. One thread only: sharing these
// memory-bound ops with the worker measured slower in the training step, since the main thread's
// copies in and out (which only it can do) slow down while the worker runs.

/** The batch-norm kernels' [N, C, S] layout, the channels [c0, c1) a call covers, and training (1) or not (0). */
type BnChannelSpan = [n: number, c: number, s: number, c0: number, c1: number, training: number];

/** What both wasm builds export for the pointwise kernels (byte addresses, element counts). */
export interface PointwiseExports {
  bnForward(
    ...args: [
      x: number,
      y: number,
      ...BnChannelSpan,
      eps: number,
      w: number,
      b: number,
      mean: number,
      variance: number,
      invstd: number,
    ]
  ): void;
  bnBackward(
    ...args: [
      x: number,
      g: number,
      dx: number,
      ...BnChannelSpan,
      w: number,
      mean: number,
      invstd: number,
      dw: number,
      db: number,
    ]
  ): void;
  relu(x: number, y: number, i0: number, i1: number): void;
  reluBackward(y: number, g: number, dx: number, i0: number, i1: number): void;
  addSame(a: number, b: number, out: number, i0: number, i1: number): void;
}

/** [N, C, S]: batch, channels, floats per channel plane. */
export interface ChannelDims {
  n: number;
  c: number;
  s: number;
}

export interface BnForwardArgs extends ChannelDims {
  x: Float32Array;
  training: boolean;
  eps: number;
  weight?: Float32Array;
  bias?: Float32Array;
  /** Training: filled with the batch statistics. Evaluation: the running statistics to normalise with. */
  mean: Float32Array;
  variance: Float32Array;
}

export interface BnBackwardArgs extends ChannelDims {
  x: Float32Array;
  gy: Float32Array;
  training: boolean;
  weight?: Float32Array;
  mean: Float32Array;
  invstd: Float32Array;
  needInput: boolean;
}

export interface WasmPointwise {
  /** Returns y and invstd; fills mean and variance in training. */
  bnForward(a: BnForwardArgs): { y: Float32Array; invstd: Float32Array };
  bnBackward(a: BnBackwardArgs): { dx?: Float32Array; dw: Float32Array; db: Float32Array };
  relu(x: Float32Array): Float32Array;
  reluBackward(y: Float32Array, g: Float32Array): Float32Array;
  add(a: Float32Array, b: Float32Array): Float32Array;
}

/** Bytes of wasm memory a call on `floats`-element operands stages (at most three arrays plus per-channel vectors). */
export function wasmPointwiseBytes(floats: number, channels = 0): number {
  return 3 * (floats * 4 + 64) + 8 * (channels * 4 + 64);
}

export function createWasmPointwise(exports: PointwiseExports, arena: Arena): WasmPointwise {
  /** Lays out arrays of the given float counts from the arena's base; returns their byte addresses and the heap. */
  function stage(...floats: number[]): { at: number[]; heap: Float32Array } {
    const at: number[] = [];
    let top = arena.base;
    for (const f of floats) {
      at.push(top);
      top = align64(top + f * 4);
    }
    return { at, heap: arena.reserve(top - arena.base) };
  }

  const copyOut = (heap: Float32Array, ptr: number, len: number): Float32Array => {
    const out = new Float32Array(len);
    out.set(heap.subarray(ptr >>> 2, (ptr >>> 2) + len));
    return out;
  };

  /** Stages two equal-length operands, runs `kernel(a, b, out, from, to)` and copies the result out. */
  const binary = (
    a: Float32Array,
    b: Float32Array,
    kernel: (ap: number, bp: number, op: number, from: number, to: number) => void,
  ): Float32Array => {
    const { at, heap } = stage(a.length, a.length, a.length);
    const [ap, bp, op] = at as [number, number, number];
    heap.set(a, ap >>> 2);
    heap.set(b, bp >>> 2);
    kernel(ap, bp, op, 0, a.length);
    return copyOut(heap, op, a.length);
  };

  return {
    bnForward(a) {
      const len = a.x.length;
      const { at, heap } = stage(len, len, a.c, a.c, a.c, a.c, a.c);
      const [xp, yp, wp, bp, mp, vp, ip] = at as [number, number, number, number, number, number, number];
      heap.set(a.x, xp >>> 2);
      if (a.weight) heap.set(a.weight, wp >>> 2);
      if (a.bias) heap.set(a.bias, bp >>> 2);
      if (!a.training) {
        heap.set(a.mean, mp >>> 2);
        heap.set(a.variance, vp >>> 2);
      }
      exports.bnForward(
        xp,
        yp,
        a.n,
        a.c,
        a.s,
        0,
        a.c,
        a.training ? 1 : 0,
        a.eps,
        a.weight ? wp : 0,
        a.bias ? bp : 0,
        mp,
        vp,
        ip,
      );
      if (a.training) {
        a.mean.set(heap.subarray(mp >>> 2, (mp >>> 2) + a.c));
        a.variance.set(heap.subarray(vp >>> 2, (vp >>> 2) + a.c));
      }
      return { y: copyOut(heap, yp, len), invstd: copyOut(heap, ip, a.c) };
    },

    bnBackward(a) {
      const len = a.x.length;
      const { at, heap } = stage(len, len, a.needInput ? len : 0, a.c, a.c, a.c, a.c, a.c);
      const [xp, gp, dxp, wp, mp, ip, dwp, dbp] = at as [
        number,
        number,
        number,
        number,
        number,
        number,
        number,
        number,
      ];
      heap.set(a.x, xp >>> 2);
      heap.set(a.gy, gp >>> 2);
      if (a.weight) heap.set(a.weight, wp >>> 2);
      heap.set(a.mean, mp >>> 2);
      heap.set(a.invstd, ip >>> 2);
      exports.bnBackward(
        xp,
        gp,
        a.needInput ? dxp : 0,
        a.n,
        a.c,
        a.s,
        0,
        a.c,
        a.training ? 1 : 0,
        a.weight ? wp : 0,
        mp,
        ip,
        dwp,
        dbp,
      );
      return {
        ...(a.needInput ? { dx: copyOut(heap, dxp, len) } : {}),
        dw: copyOut(heap, dwp, a.c),
        db: copyOut(heap, dbp, a.c),
      };
    },

    relu(x) {
      const { at, heap } = stage(x.length, x.length);
      const [xp, yp] = at as [number, number];
      heap.set(x, xp >>> 2);
      exports.relu(xp, yp, 0, x.length);
      return copyOut(heap, yp, x.length);
    },

    reluBackward(y, g) {
      return binary(y, g, exports.reluBackward);
    },

    add(a, b) {
      return binary(a, b, exports.addSame);
    },
  };
}
