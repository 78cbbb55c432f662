// The integer vocabulary of march-semantics.md §0. Every value is an exact integer held in a
// float64 `number`; callers keep intermediates below 2^53 (the bounds are stated where they matter).
import type { QuantDType, RoundingMode } from '@qtk/spec';
import { InvalidArgumentError, roundHalfEven } from '@qtk/tensor';

export interface IntRange {
  readonly min: number;
  readonly max: number;
}

const RANGES: Record<QuantDType | 'qbool', IntRange> = {
  qint8: { min: -128, max: 127 },
  qint16: { min: -32768, max: 32767 },
  qint32: { min: -2147483648, max: 2147483647 },
  qbool: { min: 0, max: 1 },
};

/** The integer range of a quantized dtype. */
export function intRange(dtype: QuantDType | 'qbool'): IntRange {
  const r = RANGES[dtype];
  if (!r)
    throw new InvalidArgumentError(
      `intRange: unknown quantized dtype '${String(dtype)}'; use qint8, qint16, qint32 or qbool`,
    );
  return r;
}

/** Round half up, `floor(v + 0.5)` (the marches' bpu_round). */
export function rhu(v: number): number {
  return Math.floor(v + 0.5);
}

/** Round half to even (@qtk/tensor's `roundHalfEven`, under the marches' short name). */
export const rhe: (v: number) => number = roundHalfEven;

/** Rounds a real number with the march's rounding mode R. */
export function roundReal(v: number, mode: RoundingMode): number {
  return mode === 'half_even' ? rhe(v) : rhu(v);
}

/** Arithmetic shift right: `floor(v / 2^n)`, n >= 0. */
export function shr(v: number, n: number): number {
  return n === 0 ? v : Math.floor(v / 2 ** n);
}

/** Rounding shift right: `floor((v + 2^(n-1)) / 2^n)`, v itself when n is 0. */
export function shrR(v: number, n: number): number {
  return n === 0 ? v : Math.floor((v + 2 ** (n - 1)) / 2 ** n);
}

/** Clamps to the range of a quantized dtype. */
export function sat(v: number, dtype: QuantDType | 'qbool'): number {
  const r = RANGES[dtype];
  return v < r.min ? r.min : v > r.max ? r.max : v;
}

/** Clamps to [lo, hi]. */
export function clampInt(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}
