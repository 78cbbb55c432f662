export { builtinObservers, registerBuiltinObservers } from './builtin.js';
export {
  MinMaxObserver,
  MovingAverageMinMaxObserver,
  MovingAveragePerChannelMinMaxObserver,
  type MinMaxOptions,
} from './min-max.js';
export { SignedHistogram, regridAbsCounts } from './histogram.js';
export { HistogramObserver, type HistogramOptions } from './histogram-observer.js';
export { ClipRangeObserver, type ClipRangeOptions } from './clip-range-observer.js';
export { squaredErrorIntegral } from './quant-error.js';
export { PercentileObserver, type PercentileOptions } from './percentile.js';
export { MSEObserver, type MseOptions } from './mse.js';
export { PerChannelMSEObserver } from './mse-per-channel.js';
export { KLObserver, klThresholdBin, type KlOptions } from './kl.js';
export { findAtoms } from './atoms.js';
export { MixObserver, type MixOptions } from './mix.js';
export { FixedScaleObserver, type FixedScaleOptions } from './fixed-scale.js';
