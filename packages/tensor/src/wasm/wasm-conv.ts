import type { ConvGeometry } from '../ops/conv-im2col.js';
import { isPointwise } from '../ops/conv-im2col.js';
import { align64, type Arena } from './wasm-arena.js';
import { stageImages } from './wasm-staging.js';

// Host side of assembly/_conv.ts: stages x, w (and gy) in wasm memory once per call, writes the job
// descriptor, runs it (on one thread or two), and copies the results out. Each thread gets its own
// column buffers; the weight gradient is summed from one partial per chunk of images, in chunk
// order, so it does not depend on how chunks were spread over threads.

/** What both wasm builds export for convolutions. */
export interface ConvExports {
  jobBytes(): number;
  convRun(job: number, work: number): void;
  sumPartials(dst: number, src: number, count: number, len: number): void;
  /** Absent from binaries built before the forward packed its weights once. */
  convPackWeights?(job: number): void;
  convPackedWeightBytes?(coutG: number, kg: number, groups: number): number;
}

/** A convolution's shape: geometry (3-d, batch included), output channels and groups. */
export interface ConvProblem {
  geom: ConvGeometry;
  cout: number;
  groups: number;
}

/**
 * Runs the conv job written at the job address with `chunks` chunks, on one or two threads.
 * `prepare(shared)` runs on the calling thread first: when shared, after the worker has been woken
 * (it waits for each chunk's images to be staged), so copying in overlaps with its work.
 */
export type ConvJobRunner = (flops: number, chunks: number, prepare: (shared: boolean) => void) => void;

/** What the forward applies to each image's output after the bias (assembly/_conv.ts `epilogue`). */
export interface ConvForwardEpilogue {
  /** Added to the output, [N, COUT, P] like it. */
  add?: Float32Array;
  activation: 'relu' | 'relu6' | null;
}

const ACT_CODES = { relu: 1, relu6: 2 } as const;

export interface WasmConv {
  forward(
    x: Float32Array,
    w: Float32Array,
    bias: Float32Array | undefined,
    p: ConvProblem,
    epilogue?: ConvForwardEpilogue,
  ): Float32Array;
  backward(
    x: Float32Array,
    w: Float32Array,
    gy: Float32Array,
    p: ConvProblem,
    need: { input: boolean; weight: boolean },
  ): { dx?: Float32Array; dw?: Float32Array };
}

/** Clears a job descriptor and writes its head: the kind, the geometry, cout and groups (slots 0 to 23 of F). */
export function writeConvHeader(d: Int32Array, kind: number, pr: ConvProblem): void {
  const g = pr.geom;
  d.fill(0);
  d.set([
    0,
    kind,
    g.n,
    g.c,
    g.id,
    g.ih,
    g.iw,
    g.kd,
    g.kh,
    g.kw,
    g.od,
    g.oh,
    g.ow,
    g.sd,
    g.sh,
    g.sw,
    g.pd,
    g.ph,
    g.pw,
    g.dd,
    g.dh,
    g.dw,
    pr.cout,
    pr.groups,
  ]);
}

const KIND_FORWARD = 1;
const KIND_BACKWARD = 2;
/** Floats of one column buffer: a band of output rows sized to stay in L2 with its gemm packing. */
export const COLS_BUDGET = 1 << 17;
/** The weight gradient is split into at most this many per-chunk partials... */
export const MAX_DW_CHUNKS = 32;
/** ...holding at most this many floats together (summing them is serial), but at least 4 chunks. */
const DW_PARTIALS_BUDGET = 1 << 20;

/** Descriptor field indices (i32 slots; assembly/_conv.ts has the byte offsets); wasm-int-conv.ts adds its own. */
export const CONV_SLOTS = {
  next: 0,
  kind: 1,
  n: 2,
  c: 3,
  id: 4,
  ih: 5,
  iw: 6,
  kd: 7,
  kh: 8,
  kw: 9,
  od: 10,
  oh: 11,
  ow: 12,
  sd: 13,
  sh: 14,
  sw: 15,
  pd: 16,
  ph: 17,
  pw: 18,
  dd: 19,
  dh: 20,
  dw: 21,
  cout: 22,
  groups: 23,
  x: 24,
  w: 25,
  bias: 26,
  y: 27,
  gy: 28,
  dx: 29,
  dwp: 30,
  chunk: 31,
  chunks: 32,
  tile: 33,
  pointwise: 34,
  colsLen: 35,
  scratch0: 36,
  scratch1: 37,
  padD: 38,
  padH: 39,
  padW: 40,
  padLen: 41,
  staged: 42,
  epiAdd: 53,
  epiAct: 54,
  wpack: 55,
} as const;
const F = CONV_SLOTS;

/** Floats past a column buffer that row copies may spill into (assembly/_conv.ts COLS_SLACK). */
const COLS_SLACK = 16;

interface Layout {
  rows: number;
  p: number;
  plane: number;
  /** Rows of one group's columns. */
  kg: number;
  /** Output rows per band. */
  tile: number;
  colsLen: number;
  pointwise: boolean;
  wsize: number;
  /** Zero-padded image dims covering every tap; padLen is 0 when the conv does not pad. */
  padDims: [number, number, number];
  padLen: number;
  /** Floats of one thread's scratch: cols, dcols, pad, dpad. */
  scratchLen: number;
  /** Floats that whole-vector reads may run past the end of an unpadded image. */
  readSlack: number;
}

function layout(pr: ConvProblem): Layout {
  const g = pr.geom;
  const kvol = g.kd * g.kh * g.kw;
  const rows = g.od * g.oh;
  const pointwise = isPointwise(g);
  const tile = Math.max(1, Math.min(rows, Math.floor(COLS_BUDGET / (g.c * kvol * g.ow))));
  const dp = Math.max(g.id + g.pd, (g.od - 1) * g.sd + (g.kd - 1) * g.dd + 1);
  const hp = Math.max(g.ih + g.ph, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1);
  const wp = Math.max(g.iw + g.pw, (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1);
  const padded = !pointwise && (g.pd > 0 || g.ph > 0 || g.pw > 0 || dp > g.id || hp > g.ih || wp > g.iw);
  // Stride-2 rows read 8 floats per 4 outputs from up to WP in: at most 2·WP + 8 past the last row's start.
  const readSlack = 2 * wp + 16;
  const padLen = padded ? g.c * dp * hp * wp + readSlack : 0;
  const colsLen = pointwise ? 0 : g.c * kvol * tile * g.ow;
  return {
    rows,
    p: rows * g.ow,
    plane: g.id * g.ih * g.iw,
    kg: (g.c / pr.groups) * kvol,
    tile,
    colsLen,
    pointwise,
    wsize: pr.cout * (g.c / pr.groups) * kvol,
    padDims: [dp, hp, wp],
    padLen,
    scratchLen: 2 * (colsLen + COLS_SLACK) + 2 * padLen,
    readSlack,
  };
}

/**
 * How the batch is cut into chunks (the unit the threads take turns on): single images forward;
 * backward, few enough that the per-chunk dW partials stay cheap to sum. Depends on the problem
 * only, never on the thread count, so the weight gradient is the same on one thread or two.
 */
function chunking(n: number, backward: boolean, wsize: number): { chunk: number; chunks: number } {
  if (n === 0) return { chunk: 1, chunks: 0 };
  const target = backward ? Math.min(n, MAX_DW_CHUNKS, Math.max(4, Math.floor(DW_PARTIALS_BUDGET / wsize))) : n;
  const chunk = Math.ceil(n / target);
  return { chunk, chunks: Math.ceil(n / chunk) };
}

/**
 * Bytes of wasm memory (beyond the fixed work areas) one forward or backward call stages (`withAdd`: a
 * forward with an added tensor).
 */
export function wasmConvBytes(pr: ConvProblem, backward: boolean, threads: number, withAdd = false): number {
  const L = layout(pr);
  const { n, c } = pr.geom;
  const x = n * c * L.plane;
  const y = n * pr.cout * L.p;
  const scratch = threads * L.scratchLen;
  // forward: the bias, the added tensor, and the packed weights (at most 3 padding rows per group)
  const packed = L.wsize + pr.groups * 3 * L.kg;
  const extra = backward ? x + (chunking(n, true, L.wsize).chunks + 1) * L.wsize : pr.cout + (withAdd ? y : 0) + packed;
  return (x + L.readSlack + L.wsize + y + scratch + extra) * 4 + 16 * 64;
}

/** 2·MACs of the call (forward, or the requested backward products), for the threading threshold. */
function flops(pr: ConvProblem, L: Layout, products: number): number {
  return 2 * pr.geom.n * pr.cout * L.p * L.kg * products;
}

/** Per-image inputs to copy into wasm memory: source array, floats per image, destination byte address. */
type Staging = { src: Float32Array; len: number; at: number }[];

/**
 * The `prepare` of a call: copies the images in, one at a time, publishing how many are staged
 * (the worker waits on that count); when shared, then allocates and touches the result arrays,
 * since a fresh large array costs a page fault per 4 KiB on first write, as much as the copy.
 */
function preparer(heap: Float32Array, d: Int32Array, n: number, inputs: Staging, results: number[]) {
  const arrays: Float32Array[] = [];
  const prepare = (shared: boolean): void => {
    stageImages(d, F.staged, n, shared, 1, (from, to) => {
      for (const s of inputs) heap.set(s.src.subarray(from * s.len, to * s.len), (s.at >>> 2) + from * s.len);
    });
    if (shared) for (const len of results) arrays.push(new Float32Array(len).fill(0));
  };
  return { prepare, arrays };
}

/**
 * Copies len floats at byte address ptr into `into` (or a fresh array); slice() on a shared
 * memory's view is several times slower.
 */
function copyOut(heap: Float32Array, ptr: number, len: number, into?: Float32Array): Float32Array {
  const out = into ?? new Float32Array(len);
  out.set(heap.subarray(ptr >>> 2, (ptr >>> 2) + len));
  return out;
}

export function createWasmConv(opts: {
  exports: ConvExports;
  arena: Arena;
  /** Byte address of the job descriptor. */
  job: number;
  /** Threads that may run a job (each needs its own column buffers). */
  threads: 1 | 2;
  run: ConvJobRunner;
}): WasmConv {
  const { exports, arena, job, threads } = opts;

  /** Bump allocator over the arena for one call. */
  function allocator() {
    let top = arena.base;
    return (floats: number): number => {
      const at = top;
      top = align64(top + floats * 4);
      return at;
    };
  }

  /** Two threads' scratch areas (one shared area when single-threaded), allocated before the arena is reserved. */
  function scratchPair(alloc: (floats: number) => number, L: Layout): { scratch0: number; scratch1: number } {
    const scratch0 = alloc(L.scratchLen);
    return { scratch0, scratch1: threads === 2 ? alloc(L.scratchLen) : scratch0 };
  }

  /** Fills the job descriptor: the header, the layout, the chunking and the given slots (byte addresses, flags). */
  function describe(
    pr: ConvProblem,
    L: Layout,
    kind: number,
    chunking: { chunk: number; chunks: number },
    slots: Partial<Record<keyof typeof F, number>>,
  ): Int32Array {
    // Views of a plain (non-shared) memory detach when it grows, so take this one after reserving.
    const d = new Int32Array(arena.memory.buffer, job, 64);
    writeConvHeader(d, kind, pr);
    for (const [slot, value] of Object.entries(slots)) d[F[slot as keyof typeof F]] = value;
    d[F.chunk] = chunking.chunk;
    d[F.chunks] = chunking.chunks;
    d[F.tile] = L.tile;
    d[F.pointwise] = L.pointwise ? 1 : 0;
    d[F.colsLen] = L.colsLen;
    d[F.padD] = L.padDims[0];
    d[F.padH] = L.padDims[1];
    d[F.padW] = L.padDims[2];
    d[F.padLen] = L.padLen;
    return d;
  }

  return {
    forward(x, w, bias, pr, epilogue) {
      const L = layout(pr);
      const { n, c } = pr.geom;
      const alloc = allocator();
      const xp = alloc(n * c * L.plane + L.readSlack);
      const wp = alloc(L.wsize);
      const bp = bias ? alloc(pr.cout) : 0;
      const yLen = n * pr.cout * L.p;
      const yp = alloc(yLen);
      const addp = epilogue?.add ? alloc(yLen) : 0;
      const packBytes = exports.convPackedWeightBytes?.(pr.cout / pr.groups, L.kg, pr.groups) ?? 0;
      const wpackp = packBytes > 0 ? alloc(packBytes / 4) : 0;
      const scratch = scratchPair(alloc, L);
      const heap = arena.reserve(alloc(0) - arena.base);
      heap.set(w, wp >>> 2);
      if (bias) heap.set(bias, bp >>> 2);
      const ch = chunking(n, false, L.wsize);
      const d = describe(pr, L, KIND_FORWARD, ch, {
        x: xp,
        w: wp,
        bias: bp,
        y: yp,
        ...scratch,
        epiAdd: addp,
        epiAct: epilogue?.activation ? ACT_CODES[epilogue.activation] : 0,
        wpack: wpackp,
      });
      if (wpackp) exports.convPackWeights!(job);
      const inputs: Staging = [{ src: x, len: c * L.plane, at: xp }];
      if (epilogue?.add) inputs.push({ src: epilogue.add, len: pr.cout * L.p, at: addp });
      const p = preparer(heap, d, n, inputs, [yLen]);
      opts.run(flops(pr, L, 1), ch.chunks, p.prepare);
      return copyOut(arena.heap(), yp, yLen, p.arrays[0]);
    },

    backward(x, w, gy, pr, need) {
      const L = layout(pr);
      const { n, c } = pr.geom;
      if (n === 0) {
        return {
          ...(need.input ? { dx: new Float32Array(0) } : {}),
          ...(need.weight ? { dw: new Float32Array(L.wsize) } : {}),
        };
      }
      const ch = chunking(n, true, L.wsize);
      const alloc = allocator();
      const xLen = n * c * L.plane;
      // The input is only read to rebuild the columns for dW.
      const xp = need.weight ? alloc(xLen + L.readSlack) : 0;
      const wp = alloc(L.wsize);
      const gyp = alloc(n * pr.cout * L.p);
      const dxp = need.input ? alloc(xLen) : 0;
      const dwp = need.weight ? alloc(ch.chunks * L.wsize) : 0;
      const dwSum = need.weight ? alloc(L.wsize) : 0;
      const scratch = scratchPair(alloc, L);
      const heap = arena.reserve(alloc(0) - arena.base);
      heap.set(w, wp >>> 2);
      const d = describe(pr, L, KIND_BACKWARD, ch, { x: xp, w: wp, gy: gyp, dx: dxp, dwp, ...scratch });
      const inputs: Staging = [{ src: gy, len: pr.cout * L.p, at: gyp }];
      if (xp) inputs.push({ src: x, len: c * L.plane, at: xp });
      const p = preparer(heap, d, n, inputs, need.input ? [xLen] : []);
      opts.run(flops(pr, L, (need.input ? 1 : 0) + (need.weight ? 1 : 0)), ch.chunks, p.prepare);
      const out: { dx?: Float32Array; dw?: Float32Array } = {};
      if (need.input) out.dx = copyOut(arena.heap(), dxp, xLen, p.arrays[0]);
      if (need.weight) {
        exports.sumPartials(dwSum, dwp, ch.chunks, L.wsize);
        out.dw = copyOut(arena.heap(), dwSum, L.wsize);
      }
      return out;
    },
  };
}
