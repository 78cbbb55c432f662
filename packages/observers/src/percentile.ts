import { z } from 'zod';
import type { SignedHistogram } from './histogram.js';
import { ClipRangeObserver } from './clip-range-observer.js';
import { binsSchema, optionalAveragingConstant, perTensorSchema } from './options.js';

export const percentileOptionsSchema = perTensorSchema('percentile', {
  percentile: z.number().min(0).max(100).default(99.99),
  bins: binsSchema(2048),
  averagingConstant: optionalAveragingConstant,
});
export type PercentileOptions = z.output<typeof percentileOptionsSchema>;

/**
 * The `percentile`-th percentile of |x| from the histogram, as horizon_plugin_pytorch computes it: the first
 * |x| bin whose cumulative count reaches `percentile / 100` of all values, taken at its centre.
 * Within one bin width (`range / bins`) of the exact percentile.
 */
export function histogramPercentile(h: SignedHistogram, percentile: number): number {
  if (h.range === 0) return 0;
  const a = h.absCounts();
  let total = 0;
  for (let i = 0; i < a.length; i++) total += a[i]!;
  const target = (percentile / 100) * total;
  let cum = 0;
  let i = 0;
  for (; i < a.length - 1; i++) {
    cum += a[i]!;
    if (cum >= target) break;
  }
  return (i + 0.5) * h.width;
}

/**
 * Clips at a percentile of |x|: over everything observed by default (horizon_plugin_pytorch does it per
 * batch and moving-averages the clipped min / max; `averagingConstant` selects that mode, see
 * ClipRangeObserver). The clip never exceeds the observed min / max: `min' = max(min, -clip)`,
 * `max' = min(max, clip)`.
 */
export class PercentileObserver extends ClipRangeObserver<PercentileOptions> {
  constructor(options: unknown = {}) {
    super('percentile', percentileOptionsSchema, options);
  }

  /** The clipping threshold of the histogram (all data; the latest batch when `averagingConstant` is a number). */
  threshold(): number {
    this.requireData();
    return histogramPercentile(this.hist, this.options.percentile);
  }

  protected rangeFrom(h: SignedHistogram): [number, number] {
    const clip = histogramPercentile(h, this.options.percentile);
    return [Math.max(h.min, -clip), Math.min(h.max, clip)];
  }
}
