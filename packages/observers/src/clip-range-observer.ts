import type { ObserverState, QParams } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { StateVersionError } from './errors.js';
import { HistogramObserver, type HistogramOptions } from './histogram-observer.js';
import type { SignedHistogram } from './histogram.js';
import { numberArray } from './observer-base.js';

export interface ClipRangeOptions extends HistogramOptions {
  averagingConstant: number | null;
}

/**
 * A per-tensor histogram observer whose method turns a histogram into the [min, max] to quantize
 * (percentile clip, MSE search, mix's winner). `averagingConstant` says which histogram:
 * - null: one histogram of everything observed, the range picked from it when qparams are asked for
 *   (every value weighs the same; merging workers' states equals observing all their data);
 * - c in [0, 1] (horizon_plugin_pytorch's mode): each batch's own histogram gives that batch's range; the
 *   first batch sets the running range and each later one moves it, `min += c·(batchMin - min)` and
 *   the same for max, so 0 keeps the first batch's range and 1 the latest. The histogram then holds
 *   the latest batch; merge keeps the smaller min and the larger max (as min_max does).
 */
export abstract class ClipRangeObserver<O extends ClipRangeOptions> extends HistogramObserver<O> {
  private running: { min: number; max: number } | null = null;

  /** The [min, max] this observer's method picks from a histogram with data. */
  protected abstract rangeFrom(h: SignedHistogram): [number, number];

  private get perBatch(): boolean {
    return this.options.averagingConstant !== null;
  }

  override observe(x: Tensor): void {
    if (!this.perBatch) {
      super.observe(x);
      return;
    }
    if (x.size === 0) return;
    const values = this.valuesOf(x);
    this.hist.reset();
    this.hist.add(values);
    if (this.hist.isEmpty()) return; // nothing but NaN
    const [lo, hi] = this.rangeFrom(this.hist);
    const r = this.running;
    if (!r) {
      this.running = { min: lo, max: hi };
      return;
    }
    const c = this.options.averagingConstant!;
    r.min += c * (lo - r.min);
    r.max += c * (hi - r.max);
  }

  override hasData(): boolean {
    return this.perBatch ? this.running !== null : super.hasData();
  }

  /** The range qparams come from: the running one (per batch) or the one picked from all data. */
  range(): { min: number; max: number } {
    this.requireData();
    if (this.running) return { ...this.running };
    const [min, max] = this.rangeFrom(this.hist);
    return { min, max };
  }

  computeQparams(): QParams {
    const r = this.range();
    return this.qparamsFromMinMax([r.min], [r.max]);
  }

  override state(): ObserverState {
    const s = super.state();
    if (!this.perBatch) return s;
    const r = this.running;
    return this.makeState({ ...s.stats, min: r ? [r.min] : [], max: r ? [r.max] : [] });
  }

  /** The running range of a state, after checking it was saved in the same mode. */
  private readRunning(state: ObserverState, action: 'load' | 'merge'): { min: number; max: number } | null {
    const stats = this.checkState(state, action);
    const saved = 'min' in stats;
    if (saved !== this.perBatch) {
      const mode = (b: boolean) =>
        b
          ? 'moving-averages a range per batch (averagingConstant a number)'
          : 'keeps one histogram of all data (averagingConstant null)';
      throw new StateVersionError(
        `observer '${this.name}': cannot ${action} a state whose observer ${mode(saved)} into one that ${mode(this.perBatch)}; give both the same averagingConstant`,
      );
    }
    if (!saved) return null;
    const min = numberArray(stats, 'min', this.name);
    const max = numberArray(stats, 'max', this.name);
    return min.length === 1 && max.length === 1 ? { min: min[0]!, max: max[0]! } : null;
  }

  override load(state: ObserverState): void {
    const r = this.readRunning(state, 'load');
    super.load(state);
    this.running = r;
  }

  override merge(other: ObserverState): void {
    const r = this.readRunning(other, 'merge');
    super.merge(other);
    if (!r) return;
    this.running = this.running
      ? { min: Math.min(this.running.min, r.min), max: Math.max(this.running.max, r.max) }
      : r;
  }

  override reset(): void {
    super.reset();
    this.running = null;
  }
}
