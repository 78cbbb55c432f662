import type { ObserverState, QParams } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { HistogramObserver } from './histogram-observer.js';
import { SignedHistogram } from './histogram.js';
import { numberArray, numberField } from './observer-base.js';
import { binsSchema, perTensorSchema } from './options.js';

export const klOptionsSchema = perTensorSchema('kl', {
  bins: binsSchema(1024),
  /**
   * null (default): one KL search over everything observed, when qparams are asked for.
   * k: horizon_plugin_pytorch's periodic mode — every k batches search the histogram of those batches, fold the
   * threshold into a moving average (`averagingConstant`) and start a new histogram.
   */
  updateInterval: z.number().int().min(1).nullable().default(null),
  averagingConstant: z.number().min(0).max(1).default(0.01),
  /** First candidate threshold, in |x| bins (TensorRT and horizon_plugin_pytorch use 128). */
  startBin: z.number().int().min(1).default(128),
});
export type KlOptions = z.output<typeof klOptionsSchema>;

/** Window of the moving sum over divergences that picks the threshold (horizon_plugin_pytorch's 9). */
export const KL_SMOOTH_WINDOW = 9;

export interface KlSearch {
  /** Candidate end bins i (threshold i · width). */
  readonly candidates: readonly number[];
  readonly divergences: readonly number[];
  /** Chosen threshold, in |x| bins. */
  readonly bin: number;
}

/**
 * TensorRT-style entropy calibration on a histogram of |x| (`counts`, equal-width bins from 0):
 * for each candidate end bin i, P is the histogram up to i with everything beyond folded into bin
 * i - 1, Q is the first i bins merged into `levels` quantization levels (bin b goes to level
 * ⌊b · levels / i⌋) and spread back evenly over that level's nonempty bins; the divergence is
 * KL(P‖Q) of the normalised vectors (Q + 1e-10). As in horizon_plugin_pytorch and pytorch-quantization, bin 0
 * takes bin 1's count first (the spike of zeros after a ReLU says nothing about the threshold).
 * horizon_plugin_pytorch then smooths: the threshold is the centre of the 9-candidate window with the smallest
 * summed divergence (the later window on ties). Candidates stop one bin past the last nonempty bin.
 */
export function klThresholdBin(counts: ArrayLike<number>, levels: number, startBin = 128, stride = 1): KlSearch {
  const n = counts.length;
  const hist = Float64Array.from(counts);
  if (n > 1) hist[0] = hist[1]!;
  let last = n - 1;
  while (last > 0 && hist[last] === 0) last--;
  const stop = Math.min(n, last + 1);
  const candidates: number[] = [];
  const divergences: number[] = [];
  if (stop <= startBin) return { candidates, divergences, bin: stop };
  const suffix = new Float64Array(n + 1);
  for (let j = n - 1; j >= 0; j--) suffix[j] = suffix[j + 1]! + hist[j]!;
  const levelSum = new Float64Array(levels);
  const levelNonEmpty = new Float64Array(levels);
  for (let i = startBin; i <= stop; i += stride) {
    levelSum.fill(0);
    levelNonEmpty.fill(0);
    for (let b = 0; b < i; b++) {
      const v = hist[b]!;
      if (v === 0) continue;
      const m = Math.floor((b * levels) / i);
      levelSum[m] += v;
      levelNonEmpty[m]++;
    }
    const pTotal = suffix[0]!;
    const qTotal = pTotal - suffix[i]!;
    let kl = 0;
    for (let b = 0; b < i; b++) {
      const p = (b === i - 1 ? hist[b]! + suffix[i]! : hist[b]!) / pTotal;
      if (p === 0) continue;
      const m = Math.floor((b * levels) / i);
      const qb = hist[b] === 0 ? 0 : levelSum[m]! / levelNonEmpty[m]!;
      const q = (qTotal > 0 ? qb / qTotal : 0) + 1e-10;
      kl += p * Math.log(p / q);
    }
    candidates.push(i);
    divergences.push(kl);
  }
  const L = divergences.length;
  if (L < KL_SMOOTH_WINDOW) {
    let best = 0;
    for (let k = 1; k < L; k++) if (divergences[k]! <= divergences[best]!) best = k;
    return { candidates, divergences, bin: candidates[best]! };
  }
  let window = 0;
  for (let k = 0; k < KL_SMOOTH_WINDOW; k++) window += divergences[k]!;
  let bestSum = window;
  let best = 0;
  for (let k = 1; k + KL_SMOOTH_WINDOW <= L; k++) {
    window += divergences[k + KL_SMOOTH_WINDOW - 1]! - divergences[k - 1]!;
    if (window <= bestSum) {
      bestSum = window;
      best = k;
    }
  }
  return { candidates, divergences, bin: candidates[best + (KL_SMOOTH_WINDOW >> 1)]! };
}

/**
 * Entropy (KL-divergence) calibration over a histogram of |x|, TensorRT style (`klThresholdBin`),
 * with `-quantMin` levels (128 for qint8). Memory is one fixed histogram. The threshold is capped
 * at the largest |x| seen. Per tensor only.
 */
export class KLObserver extends HistogramObserver<KlOptions> {
  private steps = 0;
  private clip: number | null = null;

  constructor(options: unknown = {}) {
    super('kl', klOptionsSchema, options);
  }

  private thresholdOf(h: SignedHistogram): number {
    const r = klThresholdBin(h.absCounts(), -this.quantRange.quantMin, this.options.startBin);
    return Math.min(r.bin * h.width, h.absMax);
  }

  override observe(x: Tensor): void {
    if (x.size === 0) return;
    super.observe(x);
    const k = this.options.updateInterval;
    if (k === null || ++this.steps < k) return;
    const t = this.thresholdOf(this.hist);
    this.clip = this.clip === null ? t : this.clip + this.options.averagingConstant * (t - this.clip);
    this.hist.reset();
    this.steps = 0;
  }

  override hasData(): boolean {
    return this.clip !== null || !this.hist.isEmpty();
  }

  /** The clipping threshold for the data so far. */
  threshold(): number {
    this.requireData();
    return this.clip ?? this.thresholdOf(this.hist);
  }

  computeQparams(): QParams {
    const t = this.threshold();
    return this.qparamsFromMinMax([-t], [t]);
  }

  override state(): ObserverState {
    const s = super.state();
    return this.makeState({ ...s.stats, steps: this.steps, clip: this.clip === null ? [] : [this.clip] });
  }

  override load(state: ObserverState): void {
    super.load(state);
    const s = state.stats;
    this.steps = numberField(s, 'steps', this.name);
    this.clip = numberArray(s, 'clip', this.name)[0] ?? null;
  }

  /** Histograms add; in periodic mode running thresholds combine by maximum (horizon_plugin_pytorch's all-reduce of min/max). */
  override merge(other: ObserverState): void {
    super.merge(other);
    const c = numberArray(other.stats, 'clip', this.name)[0];
    if (c !== undefined) this.clip = this.clip === null ? c : Math.max(this.clip, c);
  }

  override reset(): void {
    super.reset();
    this.steps = 0;
    this.clip = null;
  }
}
