import { align64, type Arena } from './wasm-arena.js';

// Host side of assembly/_pointwise.ts: copies the operands into wasm memory, writes a job
// descriptor, runs it on one thread or two, and copies the results out into fresh arrays. Chunks
// are channel groups for batch normalisation (each channel's statistics and gradient sums are
// computed whole by one thread) and element ranges otherwise, so results do not depend on how
// chunks were spread over threads.

/** What both wasm builds export for the pointwise kernels. */
export interface PointwiseExports {
  jobBytes(): number;
  /** Every chunk of the pointwise job at `job`, on the calling thread. */
  pointwiseRun(job: number): void;
}

/**
 * Runs the pointwise job written at the job address, with `chunks` chunks over `elements`
 * elements, on one thread or two. `prepare(shared)` runs on the calling thread first (when shared,
 * after the worker was woken; it waits for each chunk's inputs to be staged).
 */
export type PointwiseJobRunner = (elements: number, chunks: number, prepare: (shared: boolean) => void) => void;

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

const KIND_POINTWISE = 3;
const OP = { bnForward: 0, bnBackward: 1, relu: 2, reluBackward: 3, add: 4 } as const;
/** Descriptor field indices (i32 slots; assembly/_pointwise.ts has the byte offsets). */
const F = {
  next: 0, kind: 1, op: 2, n: 3, c: 4, s: 5, a: 6, b: 7, out: 8, training: 9, w: 10, bias: 11,
  mean: 12, variance: 13, invstd: 14, dw: 15, db: 16, chunk: 17, chunks: 18, len: 19, staged: 20,
} as const;
/** Byte offset of eps (f64) in the descriptor. */
const EPS_AT = 88;

/** Elements per chunk of an elementwise op: the unit of staging and of sharing between threads. */
export const ELEMENT_CHUNK = 1 << 16;
/** A batch-norm chunk covers whole channels, at least this many elements when channels are small. */
const BN_CHUNK_ELEMENTS = 1 << 14;

export function createWasmPointwise(opts: { arena: Arena; job: number; run: PointwiseJobRunner }): WasmPointwise {
  const { arena, job } = opts;

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

  /** A zeroed descriptor for op (taken after reserving: views of a plain memory detach when it grows). */
  function describe(op: number, len: number, chunk: number, chunks: number): Int32Array {
    const d = new Int32Array(arena.memory.buffer, job, 24);
    d.fill(0);
    d[F.kind] = KIND_POINTWISE;
    d[F.op] = op;
    d[F.len] = len;
    d[F.chunk] = chunk;
    d[F.chunks] = chunks;
    return d;
  }

  function bnDescriptor(op: number, a: ChannelDims & { training: boolean }, len: number): Int32Array {
    const plane = a.n * a.s;
    const chunk = Math.max(1, Math.min(a.c, Math.floor(BN_CHUNK_ELEMENTS / Math.max(1, plane))));
    const d = describe(op, len, chunk, Math.ceil(a.c / chunk));
    d[F.n] = a.n;
    d[F.c] = a.c;
    d[F.s] = a.s;
    d[F.training] = a.training ? 1 : 0;
    return d;
  }

  /**
   * Stages `inputs` (source, byte address) and runs the job: whole when a chunk needs every element
   * (batch norm) or when on one thread, else chunk by chunk so the worker can start on the first.
   * Returns the result arrays, allocated (and touched) while the worker computes when shared.
   */
  function runStaged(d: Int32Array, heap: Float32Array, inputs: [Float32Array, number][], whole: boolean, results: number[]): Float32Array[] {
    const len = d[F.len]!;
    const arrays: Float32Array[] = [];
    const prepare = (shared: boolean): void => {
      let staged = 0;
      const publish = (count: number): void => {
        Atomics.store(d, F.staged, count);
        if (shared) Atomics.notify(d, F.staged);
      };
      try {
        if (!shared || whole) {
          for (const [src, at] of inputs) heap.set(src, at >>> 2);
          staged = len;
          publish(len);
        } else {
          for (; staged < len; ) {
            const end = Math.min(len, staged + ELEMENT_CHUNK);
            for (const [src, at] of inputs) heap.set(src.subarray(staged, end), (at >>> 2) + staged);
            publish((staged = end));
          }
        }
        // A fresh array faults a page per 4 KiB on first write, costing as much as the copy: do it while the worker computes.
        if (shared) for (const n of results) arrays.push(new Float32Array(n).fill(0));
      } finally {
        // Never leave the worker waiting, even if copying threw (the caller then throws too).
        if (staged < len) publish(len);
      }
    };
    opts.run(len, d[F.chunks]!, prepare);
    return arrays;
  }

  function copyOut(ptr: number, len: number, into?: Float32Array): Float32Array {
    const heap = arena.heap();
    const out = into ?? new Float32Array(len);
    out.set(heap.subarray(ptr >>> 2, (ptr >>> 2) + len));
    return out;
  }

  function elementwise(op: number, inputs: Float32Array[]): Float32Array {
    const len = inputs[0]!.length;
    const { at, heap } = stage(...inputs.map(() => len), len);
    const d = describe(op, len, ELEMENT_CHUNK, Math.ceil(len / ELEMENT_CHUNK));
    d[F.a] = at[0]!;
    d[F.b] = inputs.length > 1 ? at[1]! : 0;
    const out = at[inputs.length]!;
    d[F.out] = out;
    const arrays = runStaged(d, heap, inputs.map((src, i) => [src, at[i]!]), false, [len]);
    return copyOut(out, len, arrays[0]);
  }

  return {
    bnForward(a) {
      const len = a.x.length;
      const { at, heap } = stage(len, len, a.c, a.c, a.c, a.c, a.c);
      const [xp, yp, wp, bp, mp, vp, ip] = at as [number, number, number, number, number, number, number];
      if (a.weight) heap.set(a.weight, wp >>> 2);
      if (a.bias) heap.set(a.bias, bp >>> 2);
      if (!a.training) {
        heap.set(a.mean, mp >>> 2);
        heap.set(a.variance, vp >>> 2);
      }
      const d = bnDescriptor(OP.bnForward, a, len);
      d.set([xp, 0, yp, a.training ? 1 : 0, a.weight ? wp : 0, a.bias ? bp : 0, mp, vp, ip], F.a);
      new Float64Array(arena.memory.buffer, job + EPS_AT, 1)[0] = a.eps;
      const arrays = runStaged(d, heap, [[a.x, xp]], true, [len]);
      const h = arena.heap();
      if (a.training) {
        a.mean.set(h.subarray(mp >>> 2, (mp >>> 2) + a.c));
        a.variance.set(h.subarray(vp >>> 2, (vp >>> 2) + a.c));
      }
      return { y: copyOut(yp, len, arrays[0]), invstd: copyOut(ip, a.c) };
    },

    bnBackward(a) {
      const len = a.x.length;
      const { at, heap } = stage(len, len, a.needInput ? len : 0, a.c, a.c, a.c, a.c, a.c);
      const [xp, gp, dxp, wp, mp, ip, dwp, dbp] = at as [number, number, number, number, number, number, number, number];
      if (a.weight) heap.set(a.weight, wp >>> 2);
      heap.set(a.mean, mp >>> 2);
      heap.set(a.invstd, ip >>> 2);
      const d = bnDescriptor(OP.bnBackward, a, len);
      d.set([xp, gp, a.needInput ? dxp : 0, a.training ? 1 : 0, a.weight ? wp : 0, 0, mp, 0, ip, dwp, dbp], F.a);
      const arrays = runStaged(d, heap, [[a.x, xp], [a.gy, gp]], true, a.needInput ? [len] : []);
      return {
        ...(a.needInput ? { dx: copyOut(dxp, len, arrays[0]) } : {}),
        dw: copyOut(dwp, a.c),
        db: copyOut(dbp, a.c),
      };
    },

    relu: (x) => elementwise(OP.relu, [x]),
    reluBackward: (y, g) => elementwise(OP.reluBackward, [y, g]),
    add: (a, b) => elementwise(OP.add, [a, b]),
  };
}
