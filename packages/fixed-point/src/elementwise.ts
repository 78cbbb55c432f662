// Elementwise integer formulas (march-semantics.md §1 "Elementwise"): add / sub as a sum of two
// scaled integer terms, mul, and the one-element operand a scalar becomes. Plans are derived once
// from float32 scales; applying them is integer arithmetic (every value exact below 2^53).
import { InvalidArgumentError } from '@qtk/tensor';
import { rhu, sat, shr } from './integer-math.js';
import type { QTensorDType } from './qtensor.js';

/** One operand of an add / sub: its float32 scale and dtype. */
export interface EwOperand {
  readonly scale: number;
  readonly dtype: QTensorDType;
}

/**
 * One term of the accumulator: `v' = negate ? sat(-v, qint8) : v`, then
 * `shift >= 0 ? v'·m·2^shift : shr(v', -shift)·m`.
 */
export interface AddTerm {
  readonly m: number;
  readonly shift: number;
  readonly negate: boolean;
}

/**
 * `acc = term_a(a) + term_b(b)` at scale `sAcc` (then requantized); `saturate32`: the acc is an int32 conv accumulator.
 * The plan is its own integers: applying and storing it needs no knowledge of the planner that made it.
 * Version 1 plans also named their planner (`rule`); codecs read them and drop the name.
 */
export interface AddPlan {
  readonly version: 2;
  readonly a: AddTerm;
  readonly b: AddTerm;
  readonly sAcc: number;
  readonly saturate32: boolean;
}

/** Plans an add (or `a - b` when `sub`) of two per-tensor operands; each march supplies one. */
export type AddPlanner = (a: EwOperand, b: EwOperand, sub: boolean) => AddPlan;

function checkScale(s: number, what: string): number {
  const f = Math.fround(s);
  if (!(f > 0) || !Number.isFinite(f))
    throw new InvalidArgumentError(`elementwise: the ${what} scale must be positive and finite, got ${s}`);
  return f;
}

/** Round half away from zero. */
export function roundHalfAway(v: number): number {
  return v < 0 ? -Math.floor(-v + 0.5) : Math.floor(v + 0.5);
}

/** The largest left shift of the larger-scale operand, by its dtype (a march's choice). */
export type ShiftLimit = (largerScaleDtype: QTensorDType) => number;

/**
 * Shift the larger-scale operand, multiply the other: x = the operand with the larger scale (a on a tie),
 * y the other. `sh = min(maxShift(x.dtype), floor(log2(32767·s_x/s_y)))`, `Q = sat(rhu(±s_y·2^sh/s_x), ±32767)`,
 * `acc = x·2^sh + y·Q`, `s_acc = s_x / 2^sh`, no saturation. Q is negative when y is the
 * subtrahend; when x is the subtrahend its term is negated instead (m = -1) [choice].
 */
export function planAddShiftLarger(a: EwOperand, b: EwOperand, sub: boolean, maxShift: ShiftLimit): AddPlan {
  const sa = checkScale(a.scale, 'first operand');
  const sb = checkScale(b.scale, 'second operand');
  const aIsX = sa >= sb;
  const [x, sx, sy] = aIsX ? [a, sa, sb] : [b, sb, sa];
  const cap = maxShift(x.dtype);
  if (!Number.isInteger(cap) || cap < 0 || cap > 62)
    throw new InvalidArgumentError(`planAddShiftLarger: the shift limit must be an integer in [0, 62], got ${cap}`);
  const sh = Math.min(cap, Math.floor(Math.log2((32767 * sx) / sy)));
  const yNeg = sub && aIsX; // y = b is the subtrahend
  const xNeg = sub && !aIsX; // x = b is the subtrahend
  const raw = (sy * 2 ** sh) / sx;
  const q = Math.max(-32767, Math.min(32767, rhu(yNeg ? -raw : raw)));
  const xTerm: AddTerm = { m: xNeg ? -1 : 1, shift: sh, negate: false };
  const yTerm: AddTerm = { m: q, shift: 0, negate: false };
  return {
    version: 2,
    a: aIsX ? xTerm : yTerm,
    b: aIsX ? yTerm : xTerm,
    sAcc: sx / 2 ** sh,
    saturate32: false,
  };
}

/**
 * An add as a conv with a sumin: f = the operand with the smaller scale (a on a tie), e the other.
 * `s_i = max(s_f/127, s_e/2^25)`, `w_f = sat(rha(s_f/s_i), qint8)`, `w_e = m·2^ls` with
 * `ls` the smallest >= 0 such that `m = rha(s_e/(s_i·2^ls)) <= 32767` [choice: one rounding];
 * `acc = f·w_f + e·m·2^ls` saturated to int32 like a conv accumulator; `s_acc = s_i`. Sub
 * negates the subtrahend with int8 saturation first.
 */
export function planAddConvSumin(a: EwOperand, b: EwOperand, sub: boolean): AddPlan {
  const sa = checkScale(a.scale, 'first operand');
  const sb = checkScale(b.scale, 'second operand');
  const aIsF = sa <= sb;
  const [sf, se] = aIsF ? [sa, sb] : [sb, sa];
  const si = Math.max(sf / 127, se / 2 ** 25);
  const wf = sat(roundHalfAway(sf / si), 'qint8');
  let ls = 0;
  while (roundHalfAway(se / (si * 2 ** ls)) > 32767) ls++;
  const me = roundHalfAway(se / (si * 2 ** ls));
  const fTerm: AddTerm = { m: wf, shift: 0, negate: sub && !aIsF };
  const eTerm: AddTerm = { m: me, shift: ls, negate: sub && aIsF };
  return {
    version: 2,
    a: aIsF ? fTerm : eTerm,
    b: aIsF ? eTerm : fTerm,
    sAcc: si,
    saturate32: true,
  };
}

/**
 * One tensor operand alone (x ± 0, 0 − x, a comparison with 0): the operand in slot `k` with
 * weight `m` (±1), the other slot's term zero, at the operand's scale.
 */
export function planSingleOperand(k: 0 | 1, m: 1 | -1, scale: number): AddPlan {
  const t: AddTerm = { m, shift: 0, negate: false };
  const zero: AddTerm = { m: 0, shift: 0, negate: false };
  return { version: 2, a: k === 0 ? t : zero, b: k === 0 ? zero : t, sAcc: scale, saturate32: false };
}

/** The integer one term contributes for operand value v. */
export function addTermValue(v: number, t: AddTerm): number {
  const u = t.negate ? sat(-v, 'qint8') : v;
  return t.shift >= 0 ? u * t.m * 2 ** t.shift : shr(u, -t.shift) * t.m;
}

/** The accumulator of one element pair. */
export function addAccumulate(a: number, b: number, plan: AddPlan): number {
  const acc = addTermValue(a, plan.a) + addTermValue(b, plan.b);
  return plan.saturate32 ? (acc < -2147483648 ? -2147483648 : acc > 2147483647 ? 2147483647 : acc) : acc;
}

/** mul: `acc = x·y` at `s_acc = s_x·s_y` (float64, exact for float32 scales). */
export function mulAccScale(sx: number, sy: number): number {
  return checkScale(sx, 'first operand') * checkScale(sy, 'second operand');
}

/** What a scalar constant becomes: a one-element quantized operand. */
export interface ScalarOperand {
  readonly value: number;
  readonly scale: number;
  readonly dtype: QTensorDType;
}

/** Turns the scalar of add_scalar / mul_scalar into an operand next to one of `dtype`; each march supplies one. */
export type ScalarOperandRule = (c: number, operandDtype: QTensorDType) => ScalarOperand;

/** The scalar c as `±1` at scale `|c|` (qint8); c must be non-zero. */
export function scalarOperandInt8(c: number): ScalarOperand {
  if (!Number.isFinite(c) || c === 0)
    throw new InvalidArgumentError(`scalar operand: expected a finite non-zero scalar, got ${c}`);
  return { value: Math.sign(c), scale: Math.fround(Math.abs(c)), dtype: 'qint8' };
}

/** Full int16 range for a qint16 neighbour: `±32767` at `|c|/32767` (qint16) next to a qint16 operand, else `±1` at `|c|`. */
export function scalarOperandWide(c: number, operandDtype: QTensorDType): ScalarOperand {
  if (operandDtype !== 'qint16') return scalarOperandInt8(c);
  if (!Number.isFinite(c) || c === 0)
    throw new InvalidArgumentError(`scalar operand: expected a finite non-zero scalar, got ${c}`);
  return { value: 32767 * Math.sign(c), scale: Math.fround(Math.abs(c) / 32767), dtype: 'qint16' };
}
