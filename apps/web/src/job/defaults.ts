import type { JobOptions } from './messages.js';

/** What the page starts with: the demo's settings (as `pnpm demo`'s calibration). */
export const DEFAULT_JOB_OPTIONS: JobOptions = { march: 'bayes', observer: 'mse', hybrid: false, inputScale: 1 / 128 };
/** Samples per batch in calibration and evaluation. */
export const JOB_BATCH = 64;
/** Samples the node-by-node comparison runs on. */
export const PROFILE_SAMPLES = 32;
