import { scaleFromRange } from '@qtk/spec';
import { z } from 'zod';
import { ClipRangeObserver } from './clip-range-observer.js';
import type { SignedHistogram } from './histogram.js';
import { binsSchema, optionalAveragingConstant, perTensorSchema } from './options.js';
import { histogramPercentile } from './percentile.js';
import { histogramQuantError } from './quant-error.js';

/** horizon_plugin_pytorch's candidate percentiles. */
export const MIX_PERCENTILES = [99.9, 99.95, 99.99, 99.993, 99.995, 99.997, 99.999, 99.9995, 99.9999] as const;

export const mixOptionsSchema = perTensorSchema('mix', {
  bins: binsSchema(2048),
  percentiles: z
    .array(z.number().min(0).max(100))
    .nonempty()
    .default([...MIX_PERCENTILES]),
  averagingConstant: optionalAveragingConstant,
});
export type MixOptions = z.output<typeof mixOptionsSchema>;

export interface MixCandidate {
  /** 'min_max' or `percentile:<p>`. */
  readonly source: string;
  readonly min: number;
  readonly max: number;
  /** Expected total squared quantization error of all observed data at this candidate's scale. */
  readonly error: number;
}

/**
 * Chooses among candidate ranges the one with the smallest quantization error on the observed
 * data. Candidates: the plain min/max, and min/max clipped at each of `percentiles` of |x|
 * (horizon_plugin_pytorch's nine, 99.9 ... 99.9999, by default). Each candidate's error is the expected sum of
 * squared quantization errors over the histogram (same estimate as the MSE observer); ties go to the
 * earlier candidate (min/max first). By default one histogram covers all batches, so workers' states merge
 * exactly; with `averagingConstant` a number each batch picks its own winner and the winners' ranges are
 * moving-averaged, as horizon_plugin_pytorch does (see ClipRangeObserver).
 */
export class MixObserver extends ClipRangeObserver<MixOptions> {
  constructor(options: unknown = {}) {
    super('mix', mixOptionsSchema, options);
  }

  /** The candidates scored on the histogram (all data; the latest batch when `averagingConstant` is a number). */
  candidates(): MixCandidate[] {
    this.requireData();
    return this.candidatesOf(this.hist);
  }

  private candidatesOf(h: SignedHistogram): MixCandidate[] {
    const score = (source: string, min: number, max: number): MixCandidate => ({
      source,
      min,
      max,
      error: histogramQuantError(h, scaleFromRange(min, max, this.quantRange), this.quantRange),
    });
    const out = [score('min_max', h.min, h.max)];
    for (const p of this.options.percentiles) {
      const clip = histogramPercentile(h, p);
      out.push(score(`percentile:${p}`, Math.max(h.min, -clip), Math.min(h.max, clip)));
    }
    return out;
  }

  private bestOf(h: SignedHistogram): MixCandidate {
    const c = this.candidatesOf(h);
    let best = c[0]!;
    for (const x of c) if (x.error < best.error) best = x;
    return best;
  }

  best(): MixCandidate {
    this.requireData();
    return this.bestOf(this.hist);
  }

  protected rangeFrom(h: SignedHistogram): [number, number] {
    const b = this.bestOf(h);
    return [b.min, b.max];
  }
}
