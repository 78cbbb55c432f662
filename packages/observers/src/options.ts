import { observerOptionsSchema } from '@qtk/spec';
import { z } from 'zod';

/** Histogram bin count over [0, range): an integer >= 8; powers of two make merging exact. */
export function binsSchema(defaultBins: number) {
  return z
    .number()
    .int()
    .min(8)
    .max(1 << 20)
    .default(defaultBins);
}

/**
 * `averagingConstant` of the observers that pick a range from a histogram: null (default) = one
 * histogram of all data; a number = horizon_plugin_pytorch's per-batch range, moving-averaged
 * (see ClipRangeObserver).
 */
export const optionalAveragingConstant = z.number().min(0).max(1).nullable().default(null);

/** Options schema of a per-tensor histogram observer (`chAxis` must stay -1). */
export function perTensorSchema<S extends z.ZodRawShape>(name: string, extra: S) {
  return observerOptionsSchema(extra).refine((o) => o.chAxis === -1, {
    message:
      `observer '${name}' keeps one histogram per tensor and cannot observe per channel; ` +
      'per channel use min_max or mse, or set chAxis -1 to give this tensor (e.g. a weight) one scale',
    path: ['chAxis'],
  });
}
