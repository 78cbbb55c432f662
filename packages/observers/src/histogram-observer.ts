import type { ObserverBaseOptions, ObserverState } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import type { z } from 'zod';
import { SignedHistogram, type HistogramState } from './histogram.js';
import { ObserverBase } from './observer-base.js';
import { StateVersionError } from './errors.js';

export interface HistogramOptions extends ObserverBaseOptions {
  bins: number;
}

/**
 * Base of the per-tensor observers that keep one fixed-size histogram of every value seen
 * (percentile, mse, mix; kl adds its update interval). State is the histogram; merging adds
 * histograms, which equals observing all the data in one observer.
 */
export abstract class HistogramObserver<O extends HistogramOptions> extends ObserverBase<O> {
  protected hist: SignedHistogram;

  constructor(name: string, schema: z.ZodType<O, z.ZodTypeDef, unknown>, options: unknown, stateVersion = 1) {
    super(name, schema, options, stateVersion);
    this.hist = new SignedHistogram(this.storedBins());
  }

  /** Bins of the stored histogram per sign (kl stores finer bins than its search grid). */
  protected storedBins(): number {
    return this.options.bins;
  }

  observe(x: Tensor): void {
    if (x.size === 0) return;
    this.hist.add(this.valuesOf(x));
  }

  hasData(): boolean {
    return !this.hist.isEmpty();
  }

  /** A copy of the histogram collected so far. */
  histogram(): SignedHistogram {
    return this.hist.clone();
  }

  state(): ObserverState {
    return this.makeState({ histogram: this.hist.toState() as unknown as ObserverState['stats'][string] });
  }

  protected readHistogram(state: ObserverState, action: 'load' | 'merge', key = 'histogram'): SignedHistogram {
    const s = this.checkState(state, action);
    const h = SignedHistogram.fromState(s[key] as unknown as HistogramState, `observer '${this.name}'`);
    if (h.bins !== this.storedBins()) {
      throw new StateVersionError(
        `observer '${this.name}': cannot ${action} a state with ${h.bins} bins into one with ${this.storedBins()}`,
      );
    }
    return h;
  }

  load(state: ObserverState): void {
    this.hist = this.readHistogram(state, 'load');
  }

  merge(other: ObserverState): void {
    this.hist.merge(this.readHistogram(other, 'merge'));
  }

  reset(): void {
    this.hist.reset();
  }
}
