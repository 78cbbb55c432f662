import { scaleFromRange, type QParams } from '@qtk/spec';
import { z } from 'zod';
import { HistogramObserver } from './histogram-observer.js';
import { binsSchema, perTensorSchema } from './options.js';
import { histogramPercentile } from './percentile.js';
import { histogramQuantError } from './quant-error.js';

/** horizon_plugin_pytorch's candidate percentiles. */
export const MIX_PERCENTILES = [99.9, 99.95, 99.99, 99.993, 99.995, 99.997, 99.999, 99.9995, 99.9999] as const;

export const mixOptionsSchema = perTensorSchema('mix', {
  bins: binsSchema(2048),
  percentiles: z.array(z.number().min(0).max(100)).nonempty().default([...MIX_PERCENTILES]),
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
 * Chooses among candidate ranges the one with the smallest quantization error on everything
 * observed. Candidates: the plain min/max, and min/max clipped at each of `percentiles` of |x|
 * (horizon_plugin_pytorch's nine, 99.9 ... 99.9999, by default). Each candidate's error is the expected sum of
 * squared quantization errors over the histogram (same estimate as the MSE observer); ties go to the
 * earlier candidate (min/max first). horizon_plugin_pytorch scores the same candidates per batch and averages the
 * winners; here one histogram covers all batches, so workers' states merge exactly.
 */
export class MixObserver extends HistogramObserver<MixOptions> {
  constructor(options: unknown = {}) {
    super('mix', mixOptionsSchema, options);
  }

  candidates(): MixCandidate[] {
    this.requireData();
    const h = this.hist;
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

  best(): MixCandidate {
    const c = this.candidates();
    let best = c[0]!;
    for (const x of c) if (x.error < best.error) best = x;
    return best;
  }

  computeQparams(): QParams {
    const b = this.best();
    return this.qparamsFromMinMax([b.min], [b.max]);
  }
}
