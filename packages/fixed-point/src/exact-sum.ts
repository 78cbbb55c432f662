import { DTypeError, Tensor, type TypedArray } from '@qtk/tensor';

// The exact-integer-sum helpers shared by int-matmul.ts and int-conv.ts. A float32 sum of integer
// products is exact while every partial sum stays within 2^24: a reduction is cut into chunks whose
// bound on Σ|terms| per output stays within it, int16 operands may be split into a signed high byte
// and an unsigned low byte (v = 256·hi + lo), and the chunks are added in float64 and saturated to int32.

/** Σ|terms| up to which a float32 sum of integers is exact, whatever the summation order. */
export const EXACT_F32_SUM = 2 ** 24;
/** Σ|terms| up to which an int32 sum of integers is exact (no partial sum leaves int32), whatever the order. */
export const EXACT_I32_SUM = 2 ** 31 - 1;
const I32_MIN = -2147483648;
const I32_MAX = 2147483647;

/** Largest magnitude of each integer input dtype. */
export function dtypeMaxAbs(dtype: string): number {
  return dtype === 'int8' ? 128 : 32768;
}

export function requireIntInput(fn: string, t: unknown, what: string, allowInt16: boolean): asserts t is Tensor {
  if (!(t instanceof Tensor)) throw new DTypeError(`${fn}: ${what} must be a Tensor, got ${typeof t}`);
  const ok = t.dtype === 'int8' || (allowInt16 && t.dtype === 'int16');
  if (!ok) {
    const want = allowInt16 ? "'int8' or 'int16'" : "'int8'";
    throw new DTypeError(
      `${fn}: ${what} must have dtype ${want} (quantized integers), got '${t.dtype}'; quantize it first`,
    );
  }
}

/**
 * Per reduction unit u of data laid out [outer, units, inner]: the largest |v| and, for the byte
 * split, the largest |hi| (hi = v >> 8) and the largest lo (lo = v & 255).
 */
export interface UnitMaxima {
  abs: Float64Array;
  hi: Float64Array;
  lo: Float64Array;
}

export function unitMaxima(v: TypedArray, outer: number, units: number, inner: number, split: boolean): UnitMaxima {
  const abs = new Float64Array(units);
  const hi = new Float64Array(units);
  const lo = new Float64Array(units);
  if (inner === 1) {
    // Units along the last axis: keep the running maxima in place.
    for (let o = 0; o < outer; o++) {
      const base = o * units;
      for (let u = 0; u < units; u++) {
        const x = v[base + u]!;
        const a = x < 0 ? -x : x;
        if (a > abs[u]!) abs[u] = a;
      }
    }
    if (split) {
      for (let u = 0; u < units; u++) hi[u] = (abs[u]! + 255) >> 8;
      for (let o = 0; o < outer; o++) {
        const base = o * units;
        for (let u = 0; u < units; u++) {
          const l = v[base + u]! & 255;
          if (l > lo[u]!) lo[u] = l;
        }
      }
    }
    return { abs, hi, lo };
  }
  for (let o = 0; o < outer; o++) {
    for (let u = 0; u < units; u++) {
      const base = (o * units + u) * inner;
      let ma = abs[u]!;
      let mh = hi[u]!;
      let ml = lo[u]!;
      for (let i = 0; i < inner; i++) {
        const x = v[base + i]!;
        const a = x < 0 ? -x : x;
        if (a > ma) ma = a;
        if (split) {
          const h = x >> 8;
          const ah = h < 0 ? -h : h;
          if (ah > mh) mh = ah;
          const l = x & 255;
          if (l > ml) ml = l;
        }
      }
      abs[u] = ma;
      hi[u] = mh;
      lo[u] = ml;
    }
  }
  return { abs, hi, lo };
}

/** The maxima of each part: one part (the values) unsplit, [hi, lo] split. */
export function partMaxima(m: UnitMaxima, split: boolean): Float64Array[] {
  return split ? [m.hi, m.lo] : [m.abs];
}

/** Weight of each part in the sum: [1] unsplit, [256, 1] split. */
export function partScales(split: boolean): number[] {
  return split ? [256, 1] : [1];
}

/** Value of part `p` of integer x. */
export function partValue(x: number, split: boolean, p: number): number {
  return split ? (p === 0 ? x >> 8 : x & 255) : x;
}

/**
 * Cuts a reduction of `units` units into consecutive chunks such that, for every bound row,
 * Σ over the chunk of row[u] <= limit (row[u] bounds what unit u adds to Σ|terms| of one output).
 * Returns the chunk ends, or null when a single unit exceeds the limit.
 */
export function planChunks(rows: readonly Float64Array[], units: number, limit = EXACT_F32_SUM): number[] | null {
  const ends: number[] = [];
  const sums = new Float64Array(rows.length);
  let start = 0;
  for (let u = 0; u < units; u++) {
    let fits = true;
    for (let r = 0; r < rows.length; r++) if (sums[r]! + rows[r]![u]! > limit) fits = false;
    if (!fits) {
      if (u === start) return null;
      ends.push(u);
      start = u;
      sums.fill(0);
      for (let r = 0; r < rows.length; r++) if (rows[r]![u]! > limit) return null;
    }
    for (let r = 0; r < rows.length; r++) sums[r] = sums[r]! + rows[r]![u]!;
  }
  ends.push(units);
  return ends;
}

/**
 * Relative cost of a plan: the byte split multiplies the work; chunking keeps the work but each
 * extra chunk is a smaller, less efficient float call plus a float64 accumulation pass.
 */
export function planCost(passes: number, chunks: number): number {
  return passes * (1 + (chunks - 1) / 2);
}

/** Saturates exact integer sums to int32. */
export function saturateInt32(acc: ArrayLike<number>): Int32Array {
  const out = new Int32Array(acc.length);
  for (let i = 0; i < acc.length; i++) {
    const v = acc[i]!;
    out[i] = v > I32_MAX ? I32_MAX : v < I32_MIN ? I32_MIN : v;
  }
  return out;
}

export function int32Tensor(data: Int32Array, shape: readonly number[]): Tensor {
  return new Tensor({ data, shape: [...shape], dtype: 'int32' });
}

export function f32Tensor(data: Float32Array, shape: readonly number[]): Tensor {
  return new Tensor({ data, shape: [...shape], dtype: 'float32' });
}
