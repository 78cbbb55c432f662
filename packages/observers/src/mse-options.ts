import { observerOptionsSchema } from '@qtk/spec';
import { z } from 'zod';
import { binsSchema } from './options.js';

/** horizon_plugin_pytorch searches 95 shrink steps of 1 %: thresholds max·(1 - 0.01·i), i = 0, stride, ... < 95. */
export const MSE_SEARCH_STEPS = 95;

/**
 * Per tensor (`chAxis` -1): one histogram over all data (`bins`). Per channel (`chAxis >= 0`): the
 * horizon_plugin_pytorch's per-batch search over raw values, moving-averaged with `averagingConstant`.
 */
export const mseOptionsSchema = observerOptionsSchema({
  stride: z.number().int().min(1).max(MSE_SEARCH_STEPS).default(1),
  bins: binsSchema(2048),
  averagingConstant: z.number().min(0).max(1).default(0.01),
});
export type MseOptions = z.output<typeof mseOptionsSchema>;
