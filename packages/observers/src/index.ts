export { builtinObservers, registerBuiltinObservers } from './builtin.js';
export { ObserverBase } from './observer-base.js';
export {
  MinMaxObserver,
  MovingAverageMinMaxObserver,
  MovingAveragePerChannelMinMaxObserver,
  minMaxOf,
  minMaxOptionsSchema,
  movingAverageMinMaxOptionsSchema,
  movingAveragePerChannelMinMaxOptionsSchema,
  type MinMaxOptions,
} from './min-max.js';
export { SignedHistogram, pow2Above, regridAbsCounts, type HistogramState } from './histogram.js';
export { HistogramObserver, type HistogramOptions } from './histogram-observer.js';
export { ClipRangeObserver, type ClipRangeOptions } from './clip-range-observer.js';
export { squaredErrorIntegral, histogramQuantError } from './quant-error.js';
export {
  PercentileObserver,
  histogramPercentile,
  percentileOptionsSchema,
  type PercentileOptions,
} from './percentile.js';
export {
  MSEObserver,
  MSE_SEARCH_STEPS,
  PER_CHANNEL_AVERAGING_CONSTANT,
  mseFactors,
  searchShrinkFactors,
  mseOptionsSchema,
  type MseOptions,
  type ThresholdSearch,
} from './mse.js';
export { PerChannelMSEObserver } from './mse-per-channel.js';
export {
  KLObserver,
  klThresholdBin,
  KL_SMOOTH_WINDOW,
  KL_STORED_BINS_PER_GRID_BIN,
  klOptionsSchema,
  type KlOptions,
  type KlSearch,
} from './kl.js';
export { findAtoms, ATOM_NEIGHBOURS, ATOM_RATIO } from './atoms.js';
export { MixObserver, MIX_PERCENTILES, mixOptionsSchema, type MixOptions, type MixCandidate } from './mix.js';
export { FixedScaleObserver, fixedScaleOptionsSchema, type FixedScaleOptions } from './fixed-scale.js';
