// Saturation of a fixed-scale fake-quant during calibration: its scale does not follow the data, so data
// outside its range (inputs in 0..255 against the 1/128 of [-1, 1]) is clamped without anyone noticing.
import type { Tensor } from '@qtk/tensor';

/**
 * Above this share of clamped values a fixed-scale fake-quant's calibration is reported. Data normalised to
 * [-1, 1] with scale 1/128 clamps only the values at exactly +1 (0.8 % of Fashion-MNIST's pixels); data in
 * 0..255 clamps about half of them.
 */
export const SATURATION_WARNING_SHARE = 0.05;

/** What a fixed-scale fake-quant saw in CALIBRATION: finite values, and how many of them clamping changed. */
export interface SaturationCount {
  readonly seen: number;
  readonly clamped: number;
}

/**
 * How many values of `x` clamping changes: those beyond [quantMin·s, quantMax·s] by more than half a step
 * (rounding alone brings the others back into the range, so a value exactly at a limit is not saturated).
 * NaN is counted in neither total.
 */
export function countClamped(
  x: Tensor,
  scale: ArrayLike<number>,
  chAxis: number,
  quantMin: number,
  quantMax: number,
): SaturationCount {
  const v = x.values();
  let inner = 1;
  if (chAxis >= 0) for (let d = chAxis + 1; d < x.shape.length; d++) inner *= x.shape[d]!;
  const channels = chAxis >= 0 ? scale.length : 1;
  let seen = 0;
  let clamped = 0;
  for (let i = 0; i < v.length; i++) {
    const value = v[i]!;
    if (Number.isNaN(value)) continue;
    const s = scale[channels === 1 ? 0 : Math.floor(i / inner) % channels]!;
    seen++;
    if (value > (quantMax + 0.5) * s || value < (quantMin - 0.5) * s) clamped++;
  }
  return { seen, clamped };
}
