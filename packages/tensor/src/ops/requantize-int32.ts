import { run1 } from '../dispatch.js';
import { dtypeRange } from '../dtype.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import type { Tensor } from '../tensor.js';
import { make } from './util.js';

// RequantizeInt32: the integer epilogue of a quantized conv / linear over an int32 accumulator laid
// out [outer, channels, inner], one pass, per channel c:
//   v = sat32(acc + bias[c])
//   v = sat32(v + term)           term = shrR(e·m, n) if k < 0, else e·m·2^k   (the fused add of e)
//   t = shr(v, pre)               then sat16(t) under the 'int16_intermediate' rule
//   v = shrR(t·m, n)              (requantize; skipped without a plan)
//   y = clamp(v, lo, hi)          (output range, fused ReLU / ReLU6)
// shr is a floor division by 2^s, shrR(x, n) = floor((x + 2^(n−1)) / 2^n) (x when n = 0). The cpu
// kernel is the reference; it computes in float64, exact because multipliers stay within 2^16 and
// the values within int32, so every product stays below 2^53.

export type RequantizeInt32Rule = 'wide' | 'int16_intermediate';

export interface RequantizeInt32Attrs {
  /** Channels of the [outer, channels, inner] layout. */
  channels: number;
  inner: number;
  /** Per channel (length 1 or channels); null: no bias. */
  bias: Int32Array | null;
  /** The fused add's multiplier per channel: k < 0 → shrR(e·m, n), else e·m·2^k; null: no second input. */
  sumin: { m: Int32Array; n: Int32Array; k: Int32Array } | null;
  /** Requantize plan per channel; null: the saturated int32 sum is the value. */
  plan: { rule: RequantizeInt32Rule; pre: Int32Array; m: Int32Array; n: Int32Array } | null;
  /** Output clamp, within the output dtype's range. */
  lo: number;
  hi: number;
  outDtype: 'int8' | 'int16' | 'int32';
}

export interface RequantizeInt32Options {
  channels: number;
  inner: number;
  bias?: Int32Array | null;
  sumin?: { m: Int32Array; n: Int32Array; k: Int32Array } | null;
  plan?: { rule: RequantizeInt32Rule; pre: Int32Array; m: Int32Array; n: Int32Array } | null;
  lo?: number;
  hi?: number;
  outDtype: 'int8' | 'int16' | 'int32';
}

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;
/** Largest |multiplier| accepted: keeps every product exact in float64 and in i64. */
export const REQUANTIZE_MAX_MULTIPLIER = 65536;

const OUT_DTYPES = new Set(['int8', 'int16', 'int32']);

/** One channel's integers (per-tensor vectors broadcast). */
export function channelParams(a: RequantizeInt32Attrs, c: number) {
  const at = (v: Int32Array, dflt: number): number => (v.length === 1 ? v[0]! : (v[c] ?? dflt));
  return {
    bias: a.bias ? at(a.bias, 0) : 0,
    sm: a.sumin ? at(a.sumin.m, 0) : 0,
    sn: a.sumin ? at(a.sumin.n, 0) : 0,
    sk: a.sumin ? at(a.sumin.k, -1) : -1,
    pre: a.plan ? at(a.plan.pre, 0) : 0,
    m: a.plan ? at(a.plan.m, 1) : 1,
    n: a.plan ? at(a.plan.n, 0) : 0,
  };
}

/** The reference epilogue on arrays (the cpu kernel; also the cpu ConvInteger's fused epilogue). */
export function requantizeInt32Values(
  acc: Int32Array,
  e: ArrayLike<number> | null,
  a: RequantizeInt32Attrs,
): Int8Array | Int16Array | Int32Array {
  const out =
    a.outDtype === 'int8'
      ? new Int8Array(acc.length)
      : a.outDtype === 'int16'
        ? new Int16Array(acc.length)
        : new Int32Array(acc.length);
  const { lo, hi, inner, channels } = a;
  const int16 = a.plan?.rule === 'int16_intermediate';
  for (let start = 0, c = 0; start < acc.length; start += inner, c = (c + 1) % channels) {
    const p = channelParams(a, c);
    const sHalf = p.sn === 0 ? 0 : 2 ** (p.sn - 1);
    const sInv = 2 ** -p.sn;
    const sBig = p.sk >= 0 ? p.sm * 2 ** p.sk : 0;
    const preScale = 2 ** -p.pre;
    const half = p.n === 0 ? 0 : 2 ** (p.n - 1);
    const inv = 2 ** -p.n;
    const end = start + inner;
    for (let i = start; i < end; i++) {
      let v = acc[i]! + p.bias;
      v = v < I32_MIN ? I32_MIN : v > I32_MAX ? I32_MAX : v;
      if (e) {
        v += p.sk < 0 ? Math.floor((e[i]! * p.sm + sHalf) * sInv) : e[i]! * sBig;
        v = v < I32_MIN ? I32_MIN : v > I32_MAX ? I32_MAX : v;
      }
      if (a.plan) {
        let t = preScale === 1 ? v : Math.floor(v * preScale);
        if (int16) t = t < -32768 ? -32768 : t > 32767 ? 32767 : t;
        v = Math.floor((t * p.m + half) * inv);
      }
      out[i] = v < lo ? lo : v > hi ? hi : v;
    }
  }
  return out;
}

registerKernel<(i: Tensor[], a: RequantizeInt32Attrs) => Tensor>({
  op: 'RequantizeInt32',
  backend: 'cpu',
  fn: ([accT, otherT], a) =>
    make(
      requantizeInt32Values(accT!.values() as Int32Array, otherT ? otherT.values() : null, a),
      [...accT!.shape],
      a.outDtype,
    ),
});

function checkVector(op: string, what: string, v: Int32Array, channels: number, min: number, max: number): void {
  if (!(v instanceof Int32Array) || (v.length !== 1 && v.length !== channels)) {
    throw new InvalidArgumentError(
      `${op}: ${what} must be an Int32Array of length 1 or ${channels} (the channels), got ${v instanceof Int32Array ? `length ${v.length}` : typeof v}`,
    );
  }
  for (const x of v) {
    if (x < min || x > max)
      throw new InvalidArgumentError(`${op}: ${what} values must lie in [${min}, ${max}], got ${x}`);
  }
}

/**
 * The integer epilogue of a quantized conv (bias, fused add, requantize, clamp; see the file
 * comment) over `acc` int32 laid out [outer, channels, inner]; `other` (int8/int16/int32, the same
 * number of values) is the fused add's input. Returns a tensor of acc's shape in `outDtype`.
 */
export function requantizeInt32(acc: Tensor, other: Tensor | null, o: RequantizeInt32Options): Tensor {
  const op = 'requantizeInt32';
  if (acc.dtype !== 'int32') throw new DTypeError(`${op}: the accumulator must be int32, got '${acc.dtype}'`);
  const attrs = requantizeAttrs(op, acc.size, other, o);
  return run1<RequantizeInt32Attrs>('RequantizeInt32', other ? [acc, other] : [acc], attrs);
}

/** Validates the options of an epilogue over `size` accumulator values (and its added input) into attrs. */
export function requantizeAttrs(
  op: string,
  size: number,
  other: Tensor | null,
  o: RequantizeInt32Options,
): RequantizeInt32Attrs {
  const { channels, inner } = o;
  if (
    !Number.isInteger(channels) ||
    channels < 1 ||
    !Number.isInteger(inner) ||
    inner < 1 ||
    size % (channels * inner) !== 0
  ) {
    throw new ShapeError(
      `${op}: ${size} values do not split into [outer, ${channels}, ${inner}]; channels and inner must be positive integers dividing the size`,
    );
  }
  if (!OUT_DTYPES.has(o.outDtype))
    throw new DTypeError(`${op}: outDtype must be 'int8', 'int16' or 'int32', got '${String(o.outDtype)}'`);
  const { min: dmin, max: dmax } = dtypeRange(o.outDtype);
  const lo = o.lo ?? dmin;
  const hi = o.hi ?? dmax;
  if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo < dmin || hi > dmax || lo > hi) {
    throw new InvalidArgumentError(
      `${op}: the clamp [${lo}, ${hi}] must be integers within ${o.outDtype}'s range [${dmin}, ${dmax}] with lo <= hi`,
    );
  }
  const M = REQUANTIZE_MAX_MULTIPLIER;
  const bias = o.bias ?? null;
  const sumin = o.sumin ?? null;
  const plan = o.plan ?? null;
  if (bias) checkVector(op, 'bias', bias, channels, I32_MIN, I32_MAX);
  if (sumin) {
    checkVector(op, 'sumin.m', sumin.m, channels, -M, M);
    checkVector(op, 'sumin.n', sumin.n, channels, 0, 1000);
    checkVector(op, 'sumin.k', sumin.k, channels, -1, 1000);
  }
  if (plan) {
    if (plan.rule !== 'wide' && plan.rule !== 'int16_intermediate') {
      throw new InvalidArgumentError(
        `${op}: plan.rule must be 'wide' or 'int16_intermediate', got '${String(plan.rule)}'`,
      );
    }
    checkVector(op, 'plan.pre', plan.pre, channels, 0, 1000);
    checkVector(op, 'plan.m', plan.m, channels, -M, M);
    checkVector(op, 'plan.n', plan.n, channels, 0, 1000);
  }
  if ((sumin !== null) !== (other !== null)) {
    throw new InvalidArgumentError(`${op}: a second input needs a sumin multiplier and vice versa`);
  }
  if (other) {
    if (other.dtype !== 'int8' && other.dtype !== 'int16' && other.dtype !== 'int32') {
      throw new DTypeError(`${op}: the added input must be int8, int16 or int32, got '${other.dtype}'`);
    }
    if (other.size !== size)
      throw new ShapeError(`${op}: the added input has ${other.size} values, the accumulator ${size}`);
  }
  return { channels, inner, bias, sumin, plan, lo, hi, outDtype: o.outDtype };
}
