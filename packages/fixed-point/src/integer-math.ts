// The integer vocabulary of march-semantics.md §0. Every value is an exact integer held in a
// float64 `number`; callers keep intermediates below 2^53 (the bounds are stated where they matter).
import { QUANT_DTYPES, type QuantDType, quantRange } from '@qtk/spec';
import {
  dtypeRange,
  InvalidArgumentError,
  roundHalfEven,
  roundHalfUp,
  roundingFunction,
  type RoundingMode,
} from '@qtk/tensor';

export interface IntRange {
  readonly min: number;
  readonly max: number;
}

const RANGES = {
  ...Object.fromEntries(
    QUANT_DTYPES.map((d) => {
      const { quantMin, quantMax } = quantRange(d);
      return [d, { min: quantMin, max: quantMax }];
    }),
  ),
  qbool: dtypeRange('bool'),
} as Record<QuantDType | 'qbool', IntRange>;

/** The integer range of a quantized dtype. */
export function intRange(dtype: QuantDType | 'qbool'): IntRange {
  const r = RANGES[dtype];
  if (!r)
    throw new InvalidArgumentError(
      `intRange: unknown quantized dtype '${String(dtype)}'; use qint8, qint16, qint32 or qbool`,
    );
  return r;
}

/** Round half up, `floor(v + 0.5)` (@qtk/tensor's `roundHalfUp`, under the marches' short name bpu_round). */
export const rhu: (v: number) => number = roundHalfUp;

/** Round half to even (@qtk/tensor's `roundHalfEven`, under the marches' short name). */
export const rhe: (v: number) => number = roundHalfEven;

/** Rounds a real number with the march's rounding mode R. */
export function roundReal(v: number, mode: RoundingMode): number {
  return roundingFunction(mode)(v);
}

/** Arithmetic shift right: `floor(v / 2^n)`, n >= 0. */
export function shr(v: number, n: number): number {
  return n === 0 ? v : Math.floor(v / 2 ** n);
}

/** Rounding shift right: `floor((v + 2^(n-1)) / 2^n)`, v itself when n is 0. */
export function shrR(v: number, n: number): number {
  if (n > 0 && n < 64) return Math.floor((v + HALF_POW2[n]!) * INV_POW2[n]!);
  return n === 0 ? v : Math.floor((v + 2 ** (n - 1)) / 2 ** n);
}

/**
 * 2^-k and 2^(k-1) for shifts k < 64, so the per-element shifts look them up instead of calling Math.pow. Scaling by
 * 2^-k is exact, so `x * INV_POW2[k]` is `x / 2 ** k` bit for bit.
 */
export const INV_POW2: Float64Array = Float64Array.from({ length: 64 }, (_, k) => 2 ** -k);
const HALF_POW2: Float64Array = Float64Array.from({ length: 64 }, (_, k) => (k === 0 ? 0 : 2 ** (k - 1)));

/** Clamps to the range of a quantized dtype. */
export function sat(v: number, dtype: QuantDType | 'qbool'): number {
  const r = RANGES[dtype];
  return v < r.min ? r.min : v > r.max ? r.max : v;
}

/** Clamps to [lo, hi]. */
export function clampInt(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}
