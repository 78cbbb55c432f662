import {
  observerBaseShape,
  observerOptionsSchema,
  type ObserverState,
  type QParams,
  checkQscheme,
  withQscheme,
} from '@qtk/spec';
import { channelMinMax, InvalidArgumentError, ShapeError, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { rangeOf } from './histogram.js';
import { ObserverBase, numberArray } from './observer-base.js';

const averagingConstant = z.number().min(0).max(1);

export const minMaxOptionsSchema = observerOptionsSchema({ averagingConstant: averagingConstant.default(0.01) });
export type MinMaxOptions = z.output<typeof minMaxOptionsSchema>;

export const movingAverageMinMaxOptionsSchema = minMaxOptionsSchema.refine((o) => o.chAxis === -1, {
  message:
    'moving_average_min_max is per tensor (chAxis -1); use moving_average_per_channel_min_max for per-channel statistics',
  path: ['chAxis'],
});

export const movingAveragePerChannelMinMaxOptionsSchema = z
  .object({
    ...observerBaseShape,
    chAxis: z.number().int().min(0).default(0),
    averagingConstant: averagingConstant.default(0.01),
  })
  .strict()
  .superRefine(checkQscheme)
  .transform(withQscheme);

const MIN_MAX_FAMILY = ['min_max', 'moving_average_min_max', 'moving_average_per_channel_min_max'];

/** Per-tensor or per-channel min and max of `v` (shape `shape`) into `outMin` / `outMax`. */
export function minMaxOf(
  v: ArrayLike<number>,
  shape: readonly number[],
  chAxis: number,
  outMin: Float64Array,
  outMax: Float64Array,
): void {
  if (chAxis < 0) {
    const [lo, hi] = rangeOf(v);
    outMin[0] = lo;
    outMax[0] = hi;
    return;
  }
  const channels = shape[chAxis]!;
  let inner = 1;
  for (let d = chAxis + 1; d < shape.length; d++) inner *= shape[d]!;
  const outer = v.length / (channels * inner);
  if (v instanceof Float32Array) {
    channelMinMax(v, { outer, channels, inner }, outMin, outMax);
    return;
  }
  outMin.fill(Infinity);
  outMax.fill(-Infinity);
  let p = 0;
  for (let o = 0; o < outer; o++) {
    for (let c = 0; c < channels; c++) {
      let lo = outMin[c]!;
      let hi = outMax[c]!;
      for (let end = p + inner; p < end; p++) {
        const x = v[p]!;
        if (x < lo) lo = x;
        if (x > hi) hi = x;
      }
      outMin[c] = lo;
      outMax[c] = hi;
    }
  }
}

/**
 * horizon_plugin_pytorch's MinMaxObserver: the first batch sets min/max, each later batch moves them toward its own
 * min/max by `averagingConstant` (`min += c * (batchMin - min)`): 0 keeps the first batch, 1 keeps the
 * last. Per channel when `chAxis >= 0`. `merge` takes the elementwise min of minima and max of maxima,
 * as horizon_plugin_pytorch's multi-worker synchronisation (`isSyncQuantize`) does.
 */
export class MinMaxObserver extends ObserverBase<MinMaxOptions> {
  private min: Float64Array | null = null;
  private max: Float64Array | null = null;
  private curMin = new Float64Array(1);
  private curMax = new Float64Array(1);

  constructor(
    options: unknown = {},
    name = 'min_max',
    schema: z.ZodType<MinMaxOptions, z.ZodTypeDef, unknown> = minMaxOptionsSchema,
  ) {
    super(name, schema, options, 1);
  }

  observe(x: Tensor): void {
    if (x.size === 0) return;
    const v = this.valuesOf(x);
    const ax = this.options.chAxis;
    let channels = 1;
    if (ax >= 0) {
      if (ax >= x.shape.length) {
        throw new InvalidArgumentError(
          `observer '${this.name}': chAxis ${ax} is out of range for a tensor of shape [${x.shape.join(', ')}]`,
        );
      }
      channels = x.shape[ax]!;
      if (this.min && this.min.length !== channels) {
        throw new ShapeError(
          `observer '${this.name}': ${channels} channels along axis ${ax}, but earlier batches had ${this.min.length}`,
        );
      }
    }
    if (this.curMin.length !== channels) {
      this.curMin = new Float64Array(channels);
      this.curMax = new Float64Array(channels);
    }
    minMaxOf(v, x.shape, ax, this.curMin, this.curMax);
    if (ax < 0 && this.curMin[0]! > this.curMax[0]!) return; // nothing but NaN
    this.accumulate(channels);
  }

  /**
   * A batch known by its smallest and largest value, as an engine that reduces in its own runtime gives it: the
   * same update as observe() of that batch. Per tensor only (a per-channel observer needs each channel's range).
   */
  observeRange(min: number, max: number): void {
    if (this.options.chAxis >= 0)
      throw new InvalidArgumentError(
        `observer '${this.name}': observeRange takes one range, but this observer is per channel (chAxis ${this.options.chAxis}); use observe()`,
      );
    if (!(min <= max)) return; // nothing but NaN, as observe() skips it
    if (this.curMin.length !== 1) {
      this.curMin = new Float64Array(1);
      this.curMax = new Float64Array(1);
    }
    this.curMin[0] = min;
    this.curMax[0] = max;
    this.accumulate(1);
  }

  /** Folds the batch range in curMin / curMax into the running one. */
  private accumulate(channels: number): void {
    if (!this.min || !this.max) {
      this.min = Float64Array.from(this.curMin);
      this.max = Float64Array.from(this.curMax);
      return;
    }
    const c = this.options.averagingConstant;
    for (let i = 0; i < channels; i++) {
      this.min[i] = this.min[i]! + c * (this.curMin[i]! - this.min[i]!);
      this.max[i] = this.max[i]! + c * (this.curMax[i]! - this.max[i]!);
    }
  }

  hasData(): boolean {
    return this.min !== null;
  }

  /** Current (averaged) minima and maxima, one per channel (one for per tensor). */
  get minMax(): { min: Float64Array; max: Float64Array } | null {
    return this.min && this.max ? { min: Float64Array.from(this.min), max: Float64Array.from(this.max) } : null;
  }

  computeQparams(): QParams {
    this.requireData();
    return this.qparamsFromMinMax(this.min!, this.max!);
  }

  state(): ObserverState {
    return this.makeState({ min: this.min ? Array.from(this.min) : [], max: this.max ? Array.from(this.max) : [] });
  }

  /** States of the whole min/max family are interchangeable (same layout). */
  protected override checkState(state: ObserverState, action: 'load' | 'merge'): ObserverState['stats'] {
    if (state && MIN_MAX_FAMILY.includes(state.observer) && state.observer !== this.name) {
      return super.checkState({ ...state, observer: this.name }, action);
    }
    return super.checkState(state, action);
  }

  /** Sets the running min/max directly (e.g. from a calibration result). */
  setRange(min: ArrayLike<number>, max: ArrayLike<number>): void {
    this.load(this.makeState({ min: Array.from(min), max: Array.from(max) }));
  }

  private read(state: ObserverState, action: 'load' | 'merge'): { min: Float64Array; max: Float64Array } | null {
    const s = this.checkState(state, action);
    const min = numberArray(s, 'min', this.name);
    const max = numberArray(s, 'max', this.name);
    if (min.length !== max.length)
      throw new InvalidArgumentError(
        `observer '${this.name}': state has ${min.length} minima and ${max.length} maxima`,
      );
    if (min.length === 0) return null;
    if (this.options.chAxis < 0 && min.length !== 1) {
      throw new ShapeError(
        `observer '${this.name}': a per-tensor observer cannot ${action} a state with ${min.length} channels`,
      );
    }
    return { min: Float64Array.from(min), max: Float64Array.from(max) };
  }

  load(state: ObserverState): void {
    const r = this.read(state, 'load');
    this.min = r?.min ?? null;
    this.max = r?.max ?? null;
  }

  merge(other: ObserverState): void {
    const r = this.read(other, 'merge');
    if (!r) return;
    if (!this.min || !this.max) {
      this.min = r.min;
      this.max = r.max;
      return;
    }
    if (r.min.length !== this.min.length) {
      throw new ShapeError(`observer '${this.name}': cannot merge ${r.min.length} channels into ${this.min.length}`);
    }
    for (let i = 0; i < this.min.length; i++) {
      this.min[i] = Math.min(this.min[i]!, r.min[i]!);
      this.max[i] = Math.max(this.max[i]!, r.max[i]!);
    }
  }

  reset(): void {
    this.min = null;
    this.max = null;
  }
}

/** Per-tensor moving-average min/max (PyTorch's name for horizon_plugin_pytorch's default activation observer). */
export class MovingAverageMinMaxObserver extends MinMaxObserver {
  constructor(options: unknown = {}) {
    super(options, 'moving_average_min_max', movingAverageMinMaxOptionsSchema);
  }
}

/** Per-channel moving-average min/max, `chAxis` 0 by default (weights of conv / linear). */
export class MovingAveragePerChannelMinMaxObserver extends MinMaxObserver {
  constructor(options: unknown = {}) {
    super(options, 'moving_average_per_channel_min_max', movingAveragePerChannelMinMaxOptionsSchema);
  }
}
