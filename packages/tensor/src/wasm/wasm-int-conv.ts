import { convPlan } from '../ops/conv.js';
import type { ConvIntegerAttrs } from '../ops/conv-integer.js';
import type { RequantizeInt32Attrs } from '../ops/requantize-int32.js';
import { make } from '../ops/util.js';
import { registerKernel, type Saved, type TensorKernel } from '../registry.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';
import type { Tensor } from '../tensor.js';
import { align64, type Arena } from './wasm-arena.js';
import { stageImages } from './wasm-staging.js';
import { CONV_SLOTS, type ConvJobRunner, type ConvProblem, writeConvHeader } from './wasm-conv.js';
import { MAX_WASM_BYTES } from './wasm-gemm.js';
import { epilogueFlags, packParams } from './wasm-requantize.js';

// Host side of assembly/_int-conv.ts (the ConvInteger forward): stages int8/int16 images as int16
// and the weight as interleaved int16 pairs in wasm memory, writes the same job descriptor as the
// float conv (kind 3), runs it on one thread or two (one image per chunk) and copies the int32
// result out. Sums wrap modulo 2^32, so the result does not depend on the split. With an epilogue
// each image's sums are requantized in wasm memory right after they are computed (by whichever
// thread computed them) and only the int8/int16/int32 result is copied out.

type IntArray = Int8Array | Int16Array | Int32Array;

/** The epilogue of a ConvInteger (channels = Cout, inner = output positions) and its fused-add input. */
export interface IntConvEpilogue {
  attrs: RequantizeInt32Attrs;
  other: IntArray | null;
}

export interface WasmIntConv {
  forward(x: Int8Array | Int16Array, w: Int8Array | Int16Array, p: ConvProblem, epilogue?: IntConvEpilogue): IntArray;
}

const BYTES = { int8: 1, int16: 2, int32: 4 } as const;

const KIND_INT_CONV = 3;
/** i32 words of one column buffer (pairs of reduction rows × a band of output positions). */
export const INT_COLS_BUDGET = 1 << 16;
const INT_COLS_SLACK = 16;

/** Descriptor slots (i32): wasm-conv.ts's, and the int conv's own (pairs, int8 input, the integer epilogue). */
const F = {
  ...CONV_SLOTS,
  pairs: 43,
  xInt8: 44,
  epiOut: 45,
  epiOutBytes: 46,
  epiOther: 47,
  epiOtherBytes: 48,
  epiParams: 49,
  epiFlags: 50,
  epiLo: 51,
  epiHi: 52,
} as const;

interface IntLayout {
  p: number;
  plane: number;
  kg: number;
  pairs: number;
  blocks: number;
  tile: number;
  /** i32 words of one column buffer. */
  colsLen: number;
  padDims: [number, number, number];
  /** int16 values of the padded image buffer (slack included); 0 when the conv does not pad. */
  padLen: number;
  /** int16 values whole-vector reads may run past a row's end. */
  readSlack: number;
  /** Bytes of one thread's scratch. */
  scratchBytes: number;
  /** i32 words of the packed weight. */
  wWords: number;
}

/** int8 images are staged as bytes and widened while padded into the scratch, so they always pad. */
function layout(pr: ConvProblem, int8: boolean): IntLayout {
  const g = pr.geom;
  const kvol = g.kd * g.kh * g.kw;
  const rows = g.od * g.oh;
  const kg = (g.c / pr.groups) * kvol;
  const pairs = Math.ceil(kg / 2);
  const coutG = pr.cout / pr.groups;
  const blocks = Math.ceil(coutG / 4);
  const tile = Math.max(1, Math.min(rows, Math.floor(INT_COLS_BUDGET / (Math.max(1, pairs) * g.ow))));
  const dp = Math.max(g.id + g.pd, (g.od - 1) * g.sd + (g.kd - 1) * g.dd + 1);
  const hp = Math.max(g.ih + g.ph, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1);
  const wp = Math.max(g.iw + g.pw, (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1);
  const padded = int8 || g.pd > 0 || g.ph > 0 || g.pw > 0 || dp > g.id || hp > g.ih || wp > g.iw;
  // Stride-2 rows read 16 int16 per 8 outputs: at most 2·WP + 32 past a row's start.
  const readSlack = 2 * wp + 48;
  const padLen = padded ? g.c * dp * hp * wp + readSlack : 0;
  const colsLen = pairs * (Math.ceil((tile * g.ow) / 8) * 8);
  return {
    p: rows * g.ow,
    plane: g.id * g.ih * g.iw,
    kg,
    pairs,
    blocks,
    tile,
    colsLen,
    padDims: [dp, hp, wp],
    padLen,
    readSlack,
    scratchBytes: align64((colsLen + INT_COLS_SLACK) * 4 + padLen * 2),
    wWords: pr.groups * blocks * pairs * 4,
  };
}

/** Bytes of wasm memory (beyond the fixed work areas) one call stages. */
export function wasmIntConvBytes(
  pr: ConvProblem,
  threads: number,
  int8 = false,
  epilogue?: { outBytes: number; otherBytes: number },
): number {
  const L = layout(pr, int8);
  const { n, c } = pr.geom;
  const yLen = n * pr.cout * L.p;
  const epi = epilogue ? yLen * (epilogue.outBytes + epilogue.otherBytes) + 7 * pr.cout * 4 + 3 * 64 : 0;
  return (n * c * L.plane + L.readSlack) * 2 + L.wWords * 4 + yLen * 4 + threads * L.scratchBytes + 8 * 64 + epi;
}

/**
 * The weight [Cout, Cin/groups, ...kernel] as int16 pairs: per group, per block of 4 output
 * channels, per pair q of reduction rows, the 4 channels' (w[2q], w[2q + 1]); zero past the ends.
 */
function packWeight(w: Int8Array | Int16Array, pr: ConvProblem, L: IntLayout, dst: Int16Array, at: number): void {
  const coutG = pr.cout / pr.groups;
  dst.fill(0, at, at + 2 * L.wWords);
  for (let g = 0; g < pr.groups; g++) {
    for (let co = 0; co < coutG; co++) {
      const src = (g * coutG + co) * L.kg;
      const blockBase = at + 2 * 4 * ((g * L.blocks + (co >> 2)) * L.pairs);
      const lane = co & 3;
      for (let k = 0; k < L.kg; k++) dst[blockBase + 8 * (k >> 1) + 2 * lane + (k & 1)] = w[src + k]!;
    }
  }
}

export function createWasmIntConv(opts: {
  arena: Arena;
  /** Byte address of the job descriptor (shared with the float conv and gemm jobs). */
  job: number;
  threads: 1 | 2;
  run: ConvJobRunner;
}): WasmIntConv {
  const { arena, job, threads } = opts;
  return {
    forward(x, w, pr, epilogue) {
      const int8 = x instanceof Int8Array;
      const L = layout(pr, int8);
      const { n, c } = pr.geom;
      const yLen = n * pr.cout * L.p;
      let top = arena.base;
      const alloc = (bytes: number): number => {
        const at = top;
        top = align64(top + bytes);
        return at;
      };
      const imgLen = c * L.plane;
      const xBytes = int8 ? 1 : 2;
      const xp = alloc((n * imgLen + L.readSlack) * xBytes);
      const wp = alloc(L.wWords * 4);
      const yp = alloc(yLen * 4);
      const s0 = alloc(L.scratchBytes);
      const s1 = threads === 2 ? alloc(L.scratchBytes) : s0;
      const epi = epilogue?.attrs;
      const outBytes = epi ? BYTES[epi.outDtype] : 4;
      const other = epilogue?.other ?? null;
      const otherBytes = other ? other.BYTES_PER_ELEMENT : 1;
      const op = epi ? alloc(yLen * outBytes) : 0;
      const ep = other ? alloc(yLen * otherBytes) : 0;
      const pp = epi ? alloc(7 * pr.cout * 4) : 0;
      const buffer = arena.reserve(top - arena.base).buffer;
      if (epi) {
        if (other)
          new (other.constructor as new (b: ArrayBufferLike, at: number, n: number) => IntArray)(buffer, ep, yLen).set(
            other,
          );
        packParams(epi, new Int32Array(buffer), pp >>> 2);
      }
      const h16 = new Int16Array(buffer);
      packWeight(w, pr, L, h16, wp >>> 1);
      // Images are copied as they are (int8 ones as bytes); xh is their view, xAt their first element.
      const xh = int8 ? new Int8Array(buffer) : h16;
      const xAt = xp / xBytes;
      // The slack after the images is read (never used) by whole-vector row loads: keep it defined.
      xh.fill(0, xAt + n * imgLen, xAt + n * imgLen + L.readSlack);
      const d = new Int32Array(buffer, job, 64);
      writeConvHeader(d, KIND_INT_CONV, pr);
      d[F.x] = xp;
      d[F.w] = wp;
      d[F.y] = yp;
      d[F.chunk] = 1;
      d[F.chunks] = n;
      d[F.tile] = L.tile;
      d[F.colsLen] = L.colsLen;
      d[F.scratch0] = s0;
      d[F.scratch1] = s1;
      d[F.padD] = L.padDims[0];
      d[F.padH] = L.padDims[1];
      d[F.padW] = L.padDims[2];
      d[F.padLen] = L.padLen;
      d[F.pairs] = L.pairs;
      d[F.xInt8] = int8 ? 1 : 0;
      if (epi) {
        d[F.epiOut] = op;
        d[F.epiOutBytes] = outBytes;
        d[F.epiOther] = ep;
        d[F.epiOtherBytes] = otherBytes;
        d[F.epiParams] = pp;
        d[F.epiFlags] = epilogueFlags(epi);
        d[F.epiLo] = epi.lo;
        d[F.epiHi] = epi.hi;
      }
      const fresh = (): IntArray =>
        outBytes === 1 ? new Int8Array(yLen) : outBytes === 2 ? new Int16Array(yLen) : new Int32Array(yLen);
      let out: IntArray | undefined;
      const prepare = (shared: boolean): void => {
        // Images in small groups, so the worker can start on the first while the rest are copied.
        stageImages(d, F.staged, n, shared, Math.max(1, Math.ceil(n / 16)), (from, to) => {
          xh.set(x.subarray(from * imgLen, to * imgLen), xAt + from * imgLen);
        });
        if (shared) out = fresh().fill(0);
      };
      opts.run(2 * n * pr.cout * L.p * L.kg, n, prepare);
      const result = out ?? fresh();
      const heap = arena.heap().buffer;
      if (result instanceof Int8Array) result.set(new Int8Array(heap, op, yLen));
      else if (result instanceof Int16Array) result.set(new Int16Array(heap, op, yLen));
      else result.set(new Int32Array(heap, epi ? op : yp, yLen));
      return result;
    },
  };
}

function problem(x: Tensor, w: Tensor, attrs: ConvIntegerAttrs): ConvProblem & { out: number[] } {
  const pl = convPlan(x, w, attrs);
  return { geom: pl.geom, cout: pl.cout, groups: attrs.groups, out: pl.out };
}

/** The wasm ConvInteger kernel; a failed memory.grow at run time falls back to the cpu kernel. */
export function registerWasmIntConvKernel(
  intConv: () => WasmIntConv | null,
  threads: () => number,
  noteFallback: NoteFallback,
): void {
  registerKernel<TensorKernel<ConvIntegerAttrs>>({
    op: 'ConvInteger',
    backend: 'wasm',
    accepts: (inputs: Tensor[], attrs: ConvIntegerAttrs) =>
      intConv() !== null &&
      wasmIntConvBytes(
        problem(inputs[0]!, inputs[1]!, attrs),
        threads(),
        inputs[0]!.dtype === 'int8',
        attrs.epilogue
          ? {
              outBytes: BYTES[attrs.epilogue.outDtype],
              otherBytes: inputs[2] ? BYTES[inputs[2].dtype as keyof typeof BYTES] : 0,
            }
          : undefined,
      ) <= MAX_WASM_BYTES,
    fn: (inputs, attrs, saved: Saved) => {
      const [x, w, other] = inputs;
      const pr = problem(x!, w!, attrs);
      const epilogue = attrs.epilogue
        ? { attrs: attrs.epilogue, other: other ? (other.values() as IntArray) : null }
        : undefined;
      return orCpu(
        noteFallback,
        'ConvInteger',
        x!.shape.join('×'),
        () => {
          const xv = x!.values() as Int8Array | Int16Array;
          const y = intConv()!.forward(xv, w!.values() as Int8Array | Int16Array, pr, epilogue);
          return make(y, [pr.geom.n, pr.cout, ...pr.out], attrs.epilogue?.outDtype ?? 'int32');
        },
        () => cpuKernel<TensorKernel<ConvIntegerAttrs>>('ConvInteger')(inputs, attrs, saved),
      );
    },
  });
}
