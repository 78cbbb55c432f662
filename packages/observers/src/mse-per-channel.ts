import { scaleFromRange, type ObserverState, type QParams, type QuantRange } from '@qtk/spec';
import { InvalidArgumentError, ShapeError, type Tensor } from '@qtk/tensor';
import { minMaxOf } from './min-max.js';
import { ObserverBase, numberArray } from './observer-base.js';
import type { MseOptions } from './mse-options.js';
import { PER_CHANNEL_AVERAGING_CONSTANT, mseOptionsSchema } from './mse-options.js';

/** Sum of squared fake-quant errors (round half up, clamp) of the strided values of one channel. */
function channelError(
  v: ArrayLike<number>,
  c: number,
  channels: number,
  inner: number,
  s: number,
  r: QuantRange,
): number {
  const inv = 1 / s;
  const qmin = r.quantMin;
  const qmax = r.quantMax;
  let e = 0;
  for (let base = c * inner, step = channels * inner; base < v.length; base += step) {
    for (let i = base, end = base + inner; i < end; i++) {
      const x = v[i]!;
      let q = Math.floor(x * inv + 0.5);
      q = q < qmin ? qmin : q > qmax ? qmax : q;
      const d = x - q * s;
      e += d * d;
    }
  }
  return e;
}

/**
 * horizon_plugin_pytorch's per-channel MSE observer (`mse` with `chAxis >= 0`, typically for weights): for each
 * batch and channel, search min/max · (1 - 0.01·i) over the raw values for the least fake-quant
 * squared error, then moving-average the winners with `averagingConstant` (first batch sets them).
 * Merge takes min of minima / max of maxima, as min_max does.
 */
export class PerChannelMSEObserver extends ObserverBase<MseOptions> {
  private min: Float64Array | null = null;
  private max: Float64Array | null = null;

  constructor(options: unknown = {}) {
    super('mse', mseOptionsSchema, options, 1);
    if (this.options.chAxis < 0)
      throw new InvalidArgumentError('PerChannelMSEObserver needs chAxis >= 0; use MSEObserver per tensor');
  }

  observe(x: Tensor): void {
    if (x.size === 0) return;
    const ax = this.options.chAxis;
    if (ax >= x.shape.length)
      throw new InvalidArgumentError(`observer 'mse': chAxis ${ax} is out of range for shape [${x.shape.join(', ')}]`);
    const v = this.valuesOf(x);
    const channels = x.shape[ax]!;
    if (this.min && this.min.length !== channels) {
      throw new ShapeError(
        `observer 'mse': ${channels} channels along axis ${ax}, but earlier batches had ${this.min.length}`,
      );
    }
    let inner = 1;
    for (let d = ax + 1; d < x.shape.length; d++) inner *= x.shape[d]!;
    const lo = new Float64Array(channels);
    const hi = new Float64Array(channels);
    minMaxOf(v, x.shape, ax, lo, hi);
    const stride = this.options.stride;
    for (let c = 0; c < channels; c++) {
      let bestF = 1;
      let bestE = Infinity;
      for (let i = 0; i < 95; i += stride) {
        const f = 1 - 0.01 * i;
        const e = channelError(
          v,
          c,
          channels,
          inner,
          scaleFromRange(lo[c]! * f, hi[c]! * f, this.quantRange),
          this.quantRange,
        );
        if (e <= bestE) {
          bestE = e;
          bestF = f;
        }
      }
      lo[c] = lo[c]! * bestF;
      hi[c] = hi[c]! * bestF;
    }
    if (!this.min || !this.max) {
      this.min = lo;
      this.max = hi;
      return;
    }
    const k = this.options.averagingConstant ?? PER_CHANNEL_AVERAGING_CONSTANT;
    for (let c = 0; c < channels; c++) {
      this.min[c] = this.min[c]! + k * (lo[c]! - this.min[c]!);
      this.max[c] = this.max[c]! + k * (hi[c]! - this.max[c]!);
    }
  }

  hasData(): boolean {
    return this.min !== null;
  }

  computeQparams(): QParams {
    this.requireData();
    return this.qparamsFromMinMax(this.min!, this.max!);
  }

  state(): ObserverState {
    return this.makeState({ min: this.min ? Array.from(this.min) : [], max: this.max ? Array.from(this.max) : [] });
  }

  private read(state: ObserverState, action: 'load' | 'merge'): [Float64Array, Float64Array] | null {
    const s = this.checkState(state, action);
    if (!('min' in s))
      throw new InvalidArgumentError(
        `observer 'mse': cannot ${action} a per-tensor (histogram) state into a per-channel observer`,
      );
    const min = numberArray(s, 'min', this.name);
    const max = numberArray(s, 'max', this.name);
    return min.length === 0 ? null : [Float64Array.from(min), Float64Array.from(max)];
  }

  load(state: ObserverState): void {
    const r = this.read(state, 'load');
    this.min = r?.[0] ?? null;
    this.max = r?.[1] ?? null;
  }

  merge(other: ObserverState): void {
    const r = this.read(other, 'merge');
    if (!r) return;
    if (!this.min || !this.max) {
      [this.min, this.max] = r;
      return;
    }
    if (r[0].length !== this.min.length)
      throw new ShapeError(`observer 'mse': cannot merge ${r[0].length} channels into ${this.min.length}`);
    for (let c = 0; c < this.min.length; c++) {
      this.min[c] = Math.min(this.min[c]!, r[0][c]!);
      this.max[c] = Math.max(this.max[c]!, r[1][c]!);
    }
  }

  reset(): void {
    this.min = null;
    this.max = null;
  }
}
