import { observers, type ObserverFactoryV1, type ObserverV1 } from '@qtk/spec';
import type { z } from 'zod';
import { FixedScaleObserver, fixedScaleOptionsSchema } from './fixed-scale.js';
import { KLObserver, klOptionsSchema } from './kl.js';
import {
  MinMaxObserver,
  MovingAverageMinMaxObserver,
  MovingAveragePerChannelMinMaxObserver,
  minMaxOptionsSchema,
  movingAverageMinMaxOptionsSchema,
  movingAveragePerChannelMinMaxOptionsSchema,
} from './min-max.js';
import { MixObserver, mixOptionsSchema } from './mix.js';
import { MSEObserver, mseOptionsSchema } from './mse.js';
import { PerChannelMSEObserver } from './mse-per-channel.js';
import { PercentileObserver, percentileOptionsSchema } from './percentile.js';

function factory<O>(
  name: string,
  description: string,
  optionsSchema: z.ZodType<O, z.ZodTypeDef, unknown>,
  make: (options: unknown) => ObserverV1,
): ObserverFactoryV1<O> {
  return Object.freeze({
    apiVersion: 1 as const,
    name,
    description,
    optionsSchema,
    create: (options?: unknown) => make(options ?? {}),
  });
}

/**
 * The built-in observer factories. Fake-quants find them by name without registration; registerBuiltinObservers
 * (or `import '@qtk/observers/register'`) puts them in @qtk/spec's `observers` registry.
 */
export const builtinObservers = [
  factory(
    'min_max',
    "horizon_plugin_pytorch's moving-average min/max, per tensor or per channel (chAxis)",
    minMaxOptionsSchema,
    (o) => new MinMaxObserver(o),
  ),
  factory(
    'moving_average_min_max',
    'moving-average min/max per tensor',
    movingAverageMinMaxOptionsSchema,
    (o) => new MovingAverageMinMaxObserver(o),
  ),
  factory(
    'moving_average_per_channel_min_max',
    'moving-average min/max per channel (chAxis 0 by default)',
    movingAveragePerChannelMinMaxOptionsSchema,
    (o) => new MovingAveragePerChannelMinMaxObserver(o),
  ),
  factory(
    'percentile',
    'clip at a percentile of |x| from a histogram',
    percentileOptionsSchema,
    (o) => new PercentileObserver(o),
  ),
  factory(
    'mse',
    'clip minimising the quantization MSE (a histogram per tensor; raw values per channel)',
    mseOptionsSchema,
    (o) =>
      (o as { chAxis?: number }).chAxis !== undefined && (o as { chAxis: number }).chAxis >= 0
        ? new PerChannelMSEObserver(o)
        : new MSEObserver(o),
  ),
  factory('kl', 'TensorRT-style entropy (KL) calibration over a histogram', klOptionsSchema, (o) => new KLObserver(o)),
  factory(
    'mix',
    'min/max or a percentile clip, whichever quantizes with the smallest error',
    mixOptionsSchema,
    (o) => new MixObserver(o),
  ),
  factory('fixed_scale', 'a configured scale', fixedScaleOptionsSchema, (o) => new FixedScaleObserver(o)),
] as const;

/** Registers the built-ins (idempotent: the same factory objects). */
export function registerBuiltinObservers(): void {
  for (const f of builtinObservers) observers.register(f as ObserverFactoryV1);
}
