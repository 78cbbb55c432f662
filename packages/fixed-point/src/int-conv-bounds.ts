// Per input channel bounds on a convolution's sums: which channels can be added exactly in float32
// (split into bytes or not, in which chunks) and whether int32 sums are exact. A weight's Σ|w| per
// output and input channel times the input's largest |x| per channel bounds what that channel adds.
import type { TypedArray } from '@qtk/tensor';
import {
  dtypeMaxAbs,
  EXACT_F32_SUM,
  EXACT_I32_SUM,
  partMaxima,
  planChunks,
  planCost,
  unitMaxima,
} from './exact-sum.js';

/** The largest Σ over the first `cols` columns of any row: the worst output's Σ|w| per unit |x|. */
function worstRowSum(rows: readonly Float64Array[], cols: number): number {
  let worst = 0;
  for (const row of rows) {
    let s = 0;
    for (let c = 0; c < cols; c++) s += row[c]!;
    if (s > worst) worst = s;
  }
  return worst;
}

/**
 * Σ|w| of each kernel of a weight laid out [rows, cols, kvol]: conv w [Cout, Cin/groups, k] gives
 * one row per output over its group-local inputs; convT w [Cin, Cout/groups, k] is transposed so
 * that it does too. Row o, column c bounds what input channel c adds to Σ|x·w| of output o, per |x|.
 */
export function kernelL1(
  wv: TypedArray,
  rows: number,
  cols: number,
  kvol: number,
  transposed: boolean,
): Float64Array[] {
  const out = Array.from({ length: transposed ? cols : rows }, () => new Float64Array(transposed ? rows : cols));
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      let s = 0;
      const base = (i * cols + j) * kvol;
      for (let t = 0; t < kvol; t++) {
        const v = wv[base + t]!;
        s += v < 0 ? -v : v;
      }
      if (transposed) out[j]![i] = s;
      else out[i]![j] = s;
    }
  }
  return out;
}

export interface ChannelPlan {
  split: boolean;
  /** Chunk ends over the group-local input channels. */
  ends: number[];
}

/**
 * What bounds a convolution's sums per input channel: the input values (`pin` per image and channel) and
 * their dtype, and `l1[o]`, one row per output channel of Σ|w| over each group-local input channel.
 */
export interface ChannelBoundInput {
  readonly xv: TypedArray;
  readonly dtype: string;
  readonly n: number;
  readonly cin: number;
  readonly pin: number;
  readonly groups: number;
  readonly l1: Float64Array[];
}

/**
 * Picks the byte split and the channel chunks. `l1[o]` (one row per output channel, over the
 * group-local input channels) bounds Σ|w| that output o sees from each input channel; outputs of
 * group g read input channels g·cinG + c. Returns null when no plan keeps one channel within 2^24.
 */
export function planChannels(input: ChannelBoundInput): ChannelPlan | null {
  const { xv, dtype, n, cin, pin, groups, l1 } = input;
  const cinG = cin / groups;
  const perGroup = l1.length / groups;
  if (worstRowSum(l1, cinG) * dtypeMaxAbs(dtype) <= EXACT_F32_SUM) return { split: false, ends: [cinG] };
  const m = unitMaxima(xv, n, cin, pin, dtype === 'int16');
  let best: ChannelPlan | null = null;
  let bestCost = Infinity;
  for (const split of dtype === 'int16' ? [false, true] : [false]) {
    const rows: Float64Array[] = [];
    l1.forEach((row, o) => {
      const off = Math.floor(o / perGroup) * cinG;
      for (const mp of partMaxima(m, split)) rows.push(row.map((v, c) => v * mp[off + c]!));
    });
    const ends = planChunks(rows, cinG);
    if (!ends) continue;
    const cost = planCost(split ? 2 : 1, ends.length);
    if (cost < bestCost) {
      bestCost = cost;
      best = { split, ends };
    }
  }
  return best;
}

/**
 * Whether Σ|x·w| stays within int32 whatever the values: `k` terms (input channels per group × kernel volume) of
 * the weight dtype's largest |w| times the input dtype's largest |x|. True for int8 weights and activations up to
 * k = 131,071, so such convolutions need not read their weights for a bound (a ResNet-18's are 11.7M values, read
 * on every call before).
 */
export function fitsInt32ByDtype(xDtype: string, wDtype: string, k: number): boolean {
  return dtypeMaxAbs(wDtype) * k * dtypeMaxAbs(xDtype) <= EXACT_I32_SUM;
}

/**
 * Whether Σ|x·w| of every output stays within int32 (so int32 sums, in any order, are exact):
 * by the dtype's largest |x| first, else by each input channel's largest |x| in this batch.
 */
export function fitsInt32(input: ChannelBoundInput): boolean {
  const { xv, dtype, n, cin, pin, groups, l1 } = input;
  const cinG = cin / groups;
  if (worstRowSum(l1, cinG) * dtypeMaxAbs(dtype) <= EXACT_I32_SUM) return true;
  const m = unitMaxima(xv, n, cin, pin, false).abs;
  const perGroup = l1.length / groups;
  return l1.every((row, o) => {
    const off = Math.floor(o / perGroup) * cinG;
    let s = 0;
    for (let ch = 0; ch < cinG; ch++) s += row[ch]! * m[off + ch]!;
    return s <= EXACT_I32_SUM;
  });
}

/** Rows per output channel g·coutG + o over the group-local inputs of a convT weight [Cin, Cout/groups, k]. */
export function convTL1(wv: TypedArray, cin: number, coutG: number, kvol: number, groups: number): Float64Array[] {
  const cinG = cin / groups;
  const rows: Float64Array[] = [];
  for (let g = 0; g < groups; g++)
    rows.push(
      ...kernelL1(wv.subarray(g * cinG * coutG * kvol, (g + 1) * cinG * coutG * kvol), cinG, coutG, kvol, true),
    );
  return rows;
}
