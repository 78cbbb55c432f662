import { dtypeRange, InvalidArgumentError } from '@qtk/tensor';
import { z } from 'zod';

/** Quantized dtypes of march-semantics.md §0 (symmetric, zero point 0). */
export const QUANT_DTYPES = ['qint8', 'qint16', 'qint32'] as const;
export type QuantDType = (typeof QUANT_DTYPES)[number];
export const quantDTypeSchema = z.enum(QUANT_DTYPES);

/** Observable activation / weight dtypes (qint32 exists only as a high-precision output). */
export const OBSERVER_DTYPES = ['qint8', 'qint16'] as const;
export type ObserverDType = (typeof OBSERVER_DTYPES)[number];
export const observerDTypeSchema = z.enum(OBSERVER_DTYPES);

export interface QuantRange {
  readonly quantMin: number;
  readonly quantMax: number;
}

/** The integer dtype a quant dtype is stored in: its range is that dtype's (`dtypeRange`). */
export const QUANT_STORAGE_DTYPE: Readonly<Record<QuantDType, 'int8' | 'int16' | 'int32'>> = {
  qint8: 'int8',
  qint16: 'int16',
  qint32: 'int32',
};

const RANGES = Object.fromEntries(
  QUANT_DTYPES.map((d) => {
    const { min, max } = dtypeRange(QUANT_STORAGE_DTYPE[d]);
    return [d, { quantMin: min, quantMax: max }];
  }),
) as Record<QuantDType, QuantRange>;

/** float32 machine epsilon, the floor of every scale. */
export const FLOAT32_EPS = 1.1920928955078125e-7;

/** [quantMin, quantMax] of a quant dtype. */
export function quantRange(dtype: QuantDType): QuantRange {
  const r = RANGES[dtype];
  if (!r)
    throw new InvalidArgumentError(
      `quantRange: unknown quant dtype '${String(dtype)}'; use one of ${QUANT_DTYPES.join(', ')}`,
    );
  return r;
}

/**
 * The range to quantize into: the dtype's, narrowed by user quantMin / quantMax. Both must lie
 * inside the dtype and quantMin < 0 < quantMax (symmetric quantization).
 */
export function resolveQuantRange(dtype: QuantDType, quantMin?: number | null, quantMax?: number | null): QuantRange {
  const full = quantRange(dtype);
  const lo = quantMin ?? full.quantMin;
  const hi = quantMax ?? full.quantMax;
  if (
    !Number.isInteger(lo) ||
    !Number.isInteger(hi) ||
    lo < full.quantMin ||
    hi > full.quantMax ||
    !(lo < 0 && hi > 0)
  ) {
    throw new InvalidArgumentError(
      `quant range [${lo}, ${hi}] is not valid for ${dtype}: need integers with ${full.quantMin} <= quantMin < 0 < quantMax <= ${full.quantMax}`,
    );
  }
  return { quantMin: lo, quantMax: hi };
}

function rangeOf(dtypeOrRange: QuantDType | QuantRange): QuantRange {
  return typeof dtypeOrRange === 'string' ? quantRange(dtypeOrRange) : dtypeOrRange;
}

/**
 * The scale rule of march-semantics.md §0: `max(-min, max) / ((qmax - qmin) / 2)`, floored at
 * float32 eps, as a float32 value (qint8 divides by 127.5, qint16 by 32767.5).
 */
export function scaleFromRange(min: number, max: number, dtypeOrRange: QuantDType | QuantRange): number {
  if (Number.isNaN(min) || Number.isNaN(max)) {
    throw new InvalidArgumentError(
      `scaleFromRange: NaN in the observed range [${min}, ${max}]; check the data fed to the observer`,
    );
  }
  const { quantMin, quantMax } = rangeOf(dtypeOrRange);
  const amax = Math.max(-min, max, 0);
  if (!Number.isFinite(amax)) {
    throw new InvalidArgumentError(
      `scaleFromRange: infinite observed range [${min}, ${max}]; the data contains ±Infinity`,
    );
  }
  const s = Math.fround(amax / ((quantMax - quantMin) / 2));
  return s < FLOAT32_EPS ? Math.fround(FLOAT32_EPS) : s;
}

/** `scaleFromRange` per channel. */
export function scalesFromRanges(
  mins: ArrayLike<number>,
  maxs: ArrayLike<number>,
  dtypeOrRange: QuantDType | QuantRange,
): Float32Array {
  if (mins.length !== maxs.length) {
    throw new InvalidArgumentError(`scalesFromRanges: ${mins.length} minima but ${maxs.length} maxima`);
  }
  const r = rangeOf(dtypeOrRange);
  const out = new Float32Array(mins.length);
  for (let i = 0; i < out.length; i++) out[i] = scaleFromRange(mins[i]!, maxs[i]!, r);
  return out;
}
