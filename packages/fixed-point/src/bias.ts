// Bias and fused-add ("sumin") terms of the conv family (march-semantics.md §1): integers added to
// the int32 accumulator, derived once per output channel.
import { fitMul } from './fit-mul.js';
import { roundReal, sat, shrR, rhu } from './integer-math.js';
import type { RoundingMode } from '@qtk/tensor';

/** An int32 bias: `b_q = sat(R(b / s_acc[c]), qint32)`. Returns the integer added to each channel's accumulator. */
export function quantizeBiasInt32(
  bias: ArrayLike<number>,
  sAcc: ArrayLike<number>,
  rounding: RoundingMode,
): Int32Array {
  const out = new Int32Array(bias.length);
  for (let c = 0; c < bias.length; c++)
    out[c] = sat(roundReal(Math.fround(bias[c]!) / sAcc[sAcc.length === 1 ? 0 : c]!, rounding), 'qint32');
  return out;
}

/**
 * A 16-bit bias with a left shift [choice]: `bl` = the smallest n >= 0 with
 * `|R(b / (s_acc·2^n))| <= 32767`; the accumulator gets `R(b / (s_acc·2^bl))·2^bl` (saturated to int32).
 */
export function quantizeBiasShifted16(
  bias: ArrayLike<number>,
  sAcc: ArrayLike<number>,
  rounding: RoundingMode,
): Int32Array {
  const out = new Int32Array(bias.length);
  for (let c = 0; c < bias.length; c++) {
    const r = Math.fround(bias[c]!) / sAcc[sAcc.length === 1 ? 0 : c]!;
    let bl = 0;
    while (Math.abs(roundReal(r / 2 ** bl, rounding)) > 32767) bl++;
    out[c] = sat(roundReal(r / 2 ** bl, rounding) * 2 ** bl, 'qint32');
  }
  return out;
}

/**
 * The fused add of a second input e (scale s_e) into an accumulator at s_acc[c]: `r = s_e / s_acc`;
 * r < 32767: `acc += shrR(e·m, n)` with (m, n) = fitMul(r, 15, 31); else `acc += e·mult·2^k`
 * with `k = ceil(log2(r / 32767))`, `mult = rhu(r / 2^k)`.
 */
export interface SuminPlan {
  readonly version: 1;
  /** Per channel: either a rounding-shift multiplier (k = -1) or a plain multiplier `mult·2^k`. */
  readonly m: Int32Array;
  readonly n: Int32Array;
  readonly k: Int32Array;
}

export function planSumin(sE: number, sAcc: ArrayLike<number>): SuminPlan {
  const c = sAcc.length;
  const m = new Int32Array(c);
  const n = new Int32Array(c);
  const k = new Int32Array(c).fill(-1);
  const se = Math.fround(sE);
  for (let i = 0; i < c; i++) {
    const r = se / sAcc[i]!;
    if (r < 32767) {
      const fit = fitMul(r, 15, 31);
      m[i] = fit.m;
      n[i] = fit.n;
    } else {
      const kk = Math.ceil(Math.log2(r / 32767));
      k[i] = kk;
      m[i] = rhu(r / 2 ** kk);
    }
  }
  return { version: 1, m, n, k };
}

/** The integer a sumin term adds for input value e on channel c. */
export function suminTerm(e: number, plan: SuminPlan, c: number): number {
  const k = plan.k[c]!;
  return k < 0 ? shrR(e * plan.m[c]!, plan.n[c]!) : e * plan.m[c]! * 2 ** k;
}
