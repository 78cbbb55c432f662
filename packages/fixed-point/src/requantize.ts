// Requantize (march-semantics.md §0): an int32 accumulator at scale s_acc to an output at s_out.
// A plan holds the integers, derived once from float32 scales; applying it is integer arithmetic.
// Accumulator scales are float64 products of float32 scales (s_x · s_w[c], exact in float64); only
// the "equal scales" test rounds s_acc to float32.
import type { QuantDType } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import { fitMul, type FixedMultiplier } from './fit-mul.js';
import { INV_POW2, intRange, shrR } from './integer-math.js';

/**
 * How the shift and multiply are arranged:
 * - 'int16_intermediate': `t = sat(shr(acc, pre), qint16)`, `y = sat(shrR(t·m, n))`;
 * - 'wide': `y = sat(shrR(shr(acc, pre)·m, n))` with no intermediate saturation (pre > 0 only when the fitted shift exceeds 31).
 */
export type RequantizeRule = 'int16_intermediate' | 'wide';

export interface RequantizePlan {
  readonly version: 1;
  readonly rule: RequantizeRule;
  readonly outDtype: QuantDType;
  /** Per channel (length 1 for a per-tensor accumulator scale). */
  readonly pre: Int32Array;
  readonly m: Int32Array;
  readonly n: Int32Array;
}

export type Warn = (message: string) => void;

/** Plans the requantize of an accumulator (scale s_acc, per channel or one) to an output at s_out. */
export type RequantizePlanner = (
  sAcc: number | ArrayLike<number>,
  sOut: number,
  outDtype: QuantDType,
  warn?: Warn,
) => RequantizePlan;

function scalesOf(sAcc: number | ArrayLike<number>): number[] {
  const list = typeof sAcc === 'number' ? [sAcc] : Array.from(sAcc);
  if (list.length === 0) throw new InvalidArgumentError('requantize: at least one accumulator scale is needed');
  for (const s of list) {
    if (!(s > 0) || !Number.isFinite(s))
      throw new InvalidArgumentError(`requantize: scales must be positive and finite, got accumulator scale ${s}`);
  }
  return list;
}

function checkOut(sOut: number): number {
  const o = Math.fround(sOut);
  if (!(o > 0) || !Number.isFinite(o))
    throw new InvalidArgumentError(`requantize: the output scale must be positive and finite, got ${sOut}`);
  return o;
}

function vanishingWarning(warn: Warn | undefined, ratio: number, c: number): void {
  warn?.(
    `requantize: the ratio s_acc/s_out = ${ratio} of channel ${c} rounds to a zero multiplier; that output is always 0 (check the scales)`,
  );
}

function saturationWarning(warn: Warn | undefined, ratio: number, c: number): void {
  warn?.(
    `requantize: the ratio s_acc/s_out = ${ratio} of channel ${c} does not fit a 15-bit multiplier; the output saturates`,
  );
}

/**
 * A plan from one fitting rule per channel: equal float32 scales give a pure saturating cast (m = 1),
 * otherwise `fit(s_acc, s_out)` gives (pre, multiplier); warnings for saturated and zero multipliers.
 */
function planPerChannel(
  rule: RequantizeRule,
  sAcc: number | ArrayLike<number>,
  sOut: number,
  outDtype: QuantDType,
  warn: Warn | undefined,
  fit: (sa: number, so: number) => { pre: number; fit: FixedMultiplier },
): RequantizePlan {
  const accs = scalesOf(sAcc);
  const so = checkOut(sOut);
  const pre = new Int32Array(accs.length);
  const m = new Int32Array(accs.length);
  const n = new Int32Array(accs.length);
  accs.forEach((sa, c) => {
    if (Math.fround(sa) === so) {
      m[c] = 1;
      return;
    }
    const r = fit(sa, so);
    if (r.fit.saturated) saturationWarning(warn, sa / so, c);
    else if (r.fit.m === 0) vanishingWarning(warn, sa / so, c);
    pre[c] = r.pre;
    m[c] = r.fit.m;
    n[c] = r.fit.n;
  });
  return { version: 1, rule, outDtype, pre, m, n };
}

/** An int16 intermediate after a pre-shift, then a 15-bit multiplier with shift <= 31. */
export const planRequantizeInt16: RequantizePlanner = (sAcc, sOut, outDtype, warn) =>
  planPerChannel('int16_intermediate', sAcc, sOut, outDtype, warn, (sa, so) => {
    const pre = Math.max(0, Math.ceil(Math.log2(so / (256 * sa))));
    return { pre, fit: fitMul((sa * 2 ** pre) / so, 15, 31) };
  });

/** A 15-bit multiplier with shift <= 62, split into a truncating pre-shift when above 31. */
export const planRequantizeWide: RequantizePlanner = (sAcc, sOut, outDtype, warn) =>
  planPerChannel('wide', sAcc, sOut, outDtype, warn, (sa, so) => {
    const f = fitMul(sa / so, 15, 62);
    const pre = Math.max(0, f.n - 31);
    return { pre, fit: { ...f, n: f.n - pre } };
  });

/** Requantizes one accumulator value with channel `c` of a plan. */
export function requantizeValue(acc: number, plan: RequantizePlan, c = 0): number {
  const { min, max } = intRange(plan.outDtype);
  const pre = plan.pre[c]!;
  let t = pre === 0 ? acc : pre < 64 ? Math.floor(acc * INV_POW2[pre]!) : Math.floor(acc / 2 ** pre);
  if (plan.rule === 'int16_intermediate') t = t < -32768 ? -32768 : t > 32767 ? 32767 : t;
  const y = shrR(t * plan.m[c]!, plan.n[c]!);
  return y < min ? min : y > max ? max : y;
}

/**
 * Requantizes `acc` laid out as [outer, channels, inner] (channels = the plan's length; a
 * per-tensor plan treats everything as one channel) into `out`.
 */
export function requantizeInto(
  acc: ArrayLike<number>,
  plan: RequantizePlan,
  inner: number,
  out: Int8Array | Int16Array | Int32Array,
): void {
  const channels = plan.m.length;
  const { min, max } = intRange(plan.outDtype);
  const int16 = plan.rule === 'int16_intermediate';
  const total = acc.length;
  if (out.length !== total)
    throw new InvalidArgumentError(`requantizeInto: output holds ${out.length} values, accumulator ${total}`);
  const block = channels === 1 ? total : inner;
  if (channels > 1 && total % (channels * inner) !== 0) {
    throw new InvalidArgumentError(
      `requantizeInto: ${total} values do not split into ${channels} channels of ${inner}`,
    );
  }
  for (let start = 0, c = 0; start < total; start += block, c = (c + 1) % channels) {
    const preScale = 2 ** -plan.pre[c]!;
    const m = plan.m[c]!;
    const n = plan.n[c]!;
    const half = n === 0 ? 0 : 2 ** (n - 1);
    const inv = 2 ** -n;
    const end = start + block;
    for (let i = start; i < end; i++) {
      let t = preScale === 1 ? acc[i]! : Math.floor(acc[i]! * preScale);
      if (int16) t = t < -32768 ? -32768 : t > 32767 ? 32767 : t;
      const y = Math.floor((t * m + half) * inv);
      out[i] = y < min ? min : y > max ? max : y;
    }
  }
}
