import { observerOptionsSchema } from '@qtk/spec';
import { z } from 'zod';

/** Histogram bin count over [0, range): an integer >= 8; powers of two make merging exact. */
export function binsSchema(defaultBins: number) {
  return z.number().int().min(8).max(1 << 20).default(defaultBins);
}

/** Options schema of a per-tensor histogram observer (`chAxis` must stay -1). */
export function perTensorSchema<S extends z.ZodRawShape>(name: string, extra: S) {
  return observerOptionsSchema(extra).refine((o) => o.chAxis === -1, {
    message: `${name} observes per tensor only (chAxis -1); use min_max or moving_average_per_channel_min_max per channel`,
    path: ['chAxis'],
  });
}
