import { observerOptionsSchema } from '@qtk/spec';
import { z } from 'zod';
import { binsSchema, optionalAveragingConstant } from './options.js';

/** horizon_plugin_pytorch searches 95 shrink steps of 1 %: thresholds max·(1 - 0.01·i), i = 0, stride, ... < 95. */
export const MSE_SEARCH_STEPS = 95;

/** horizon_plugin_pytorch's averaging constant, used per channel when none is given. */
export const PER_CHANNEL_AVERAGING_CONSTANT = 0.01;

/**
 * Per tensor (`chAxis` -1): a histogram (`bins`) of all data, or with `averagingConstant` a number
 * horizon_plugin_pytorch's per-batch search moving-averaged (ClipRangeObserver). Per channel
 * (`chAxis >= 0`): horizon_plugin_pytorch's per-batch search over raw values, always moving-averaged;
 * `averagingConstant` null there means horizon_plugin_pytorch's default, 0.01.
 */
export const mseOptionsSchema = observerOptionsSchema({
  stride: z.number().int().min(1).max(MSE_SEARCH_STEPS).default(1),
  bins: binsSchema(2048),
  averagingConstant: optionalAveragingConstant,
}).transform((o) => ({
  ...o,
  averagingConstant: o.averagingConstant ?? (o.chAxis >= 0 ? PER_CHANNEL_AVERAGING_CONSTANT : null),
}));
export type MseOptions = z.output<typeof mseOptionsSchema>;
