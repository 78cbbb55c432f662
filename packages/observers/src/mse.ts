import { scaleFromRange, type QuantRange } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import type { SignedHistogram } from './histogram.js';
import { ClipRangeObserver } from './clip-range-observer.js';
import { MSE_SEARCH_STEPS, mseOptionsSchema, type MseOptions } from './mse-options.js';
import { histogramQuantError } from './quant-error.js';

export { MSE_SEARCH_STEPS, PER_CHANNEL_AVERAGING_CONSTANT, mseOptionsSchema, type MseOptions } from './mse-options.js';

export interface ThresholdSearch {
  /** Candidate factors of the observed min / max (1 = no clipping). */
  readonly factors: readonly number[];
  /** Estimated total squared error of each candidate. */
  readonly errors: readonly number[];
  /** Index of the chosen candidate (smallest error; ties go to the larger clip, as in horizon_plugin_pytorch). */
  readonly best: number;
}

/** Scores min/max · factor for each factor by the histogram's expected quantization error. */
export function searchShrinkFactors(
  h: SignedHistogram,
  factors: readonly number[],
  range: QuantRange,
): ThresholdSearch {
  const errors = factors.map((f) => histogramQuantError(h, scaleFromRange(h.min * f, h.max * f, range), range));
  let best = 0;
  for (let i = 1; i < errors.length; i++) if (errors[i]! <= errors[best]!) best = i;
  return { factors, errors, best };
}

export function mseFactors(stride: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < MSE_SEARCH_STEPS; i += stride) out.push(1 - 0.01 * i);
  return out;
}

/**
 * Searches clipping thresholds `max(-min, max) · (1 - 0.01·i)` for i = 0, stride, ... < 95 (the
 * horizon_plugin_pytorch's grid) and keeps the one with the smallest quantization MSE. The MSE is estimated from a
 * histogram (each bin's values spread uniformly, clipping and rounding error integrated exactly), not
 * recomputed over raw batches, so memory is bounded and states merge. The histogram holds all data, or
 * with `averagingConstant` a number each batch is searched and the results moving-averaged
 * (ClipRangeObserver). Per tensor; `PerChannelMSEObserver` is the per-channel form (same registry name,
 * `chAxis >= 0`).
 */
export class MSEObserver extends ClipRangeObserver<MseOptions> {
  constructor(options: unknown = {}) {
    super('mse', mseOptionsSchema, options);
    if (this.options.chAxis >= 0) {
      throw new InvalidArgumentError(
        "MSEObserver is per tensor; createObserver('mse', { chAxis }) gives a PerChannelMSEObserver",
      );
    }
  }

  /** The search on the histogram (all data; the latest batch when `averagingConstant` is a number). */
  search(): ThresholdSearch {
    this.requireData();
    return searchShrinkFactors(this.hist, mseFactors(this.options.stride), this.quantRange);
  }

  protected rangeFrom(h: SignedHistogram): [number, number] {
    const r = searchShrinkFactors(h, mseFactors(this.options.stride), this.quantRange);
    const f = r.factors[r.best]!;
    return [h.min * f, h.max * f];
  }
}
