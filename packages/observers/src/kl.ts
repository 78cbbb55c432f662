import { ObserverStateError, type ObserverState, type QParams } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { HistogramObserver } from './histogram-observer.js';
import { findAtoms } from './atoms.js';
import { regridAbsCounts, type SignedHistogram } from './histogram.js';
import { numberArray, numberField } from './observer-base.js';
import { binsSchema, perTensorSchema } from './options.js';

export const klOptionsSchema = perTensorSchema('kl', {
  /** Bins of the search grid over [0, max |x|] (horizon_plugin_pytorch's 512). */
  bins: binsSchema(512),
  /**
   * k (default 1, horizon_plugin_pytorch's): the histogram collects k batches, then one KL search over it gives a
   * threshold that moves the running one by `averagingConstant` (the first sets it), and a new histogram starts.
   * null: one search over everything observed, when qparams are asked for (as k = the number of batches).
   */
  updateInterval: z.number().int().min(1).nullable().default(1),
  averagingConstant: z.number().min(0).max(1).default(0.01),
  /** First candidate threshold, in grid bins: 128 of 512 is max |x| / 4 (horizon_plugin_pytorch's floor). */
  startBin: z.number().int().min(1).default(128),
  /**
   * true (default): values repeated far more often than their neighbours (atoms: flat image regions, padding,
   * saturation) keep their own mass in Q instead of being spread over their level (`klThresholdBin`'s
   * `atoms`). false: horizon_plugin_pytorch's search exactly.
   */
  separateAtoms: z.boolean().default(true),
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
 *
 * `atoms` (the part of each bin's count that sits on repeated single values, see `findAtoms`) generalises
 * the bin-0 rule: an atom quantizes to one level however many bins the level spans, so Q gives it its own
 * mass and spreads only the rest of the level; spreading it too would charge log(bins per level) times
 * its mass, a cost that grows with the histogram's resolution and pushes the threshold down to
 * `startBin`. Atoms beyond a candidate are clipped into P's last bin like any other value.
 */
export function klThresholdBin(
  counts: ArrayLike<number>,
  levels: number,
  startBin = 128,
  stride = 1,
  atoms?: ArrayLike<number>,
): KlSearch {
  const n = counts.length;
  const hist = Float64Array.from(counts);
  const atom = atoms ? Float64Array.from(atoms) : new Float64Array(n);
  if (n > 1) {
    hist[0] = hist[1]!;
    atom[0] = atom[1]!;
  }
  /** The continuous part of each bin (regridding rounding below 1e-9 of the bin is no part). */
  const cont = new Float64Array(n);
  for (let b = 0; b < n; b++) {
    const c = hist[b]! - atom[b]!;
    cont[b] = c > 1e-9 * hist[b]! ? c : 0;
  }
  let last = n - 1;
  while (last > 0 && hist[last] === 0) last--;
  const stop = Math.min(n, last + 1);
  const candidates: number[] = [];
  const divergences: number[] = [];
  if (stop <= startBin) return { candidates, divergences, bin: stop };
  const suffix = new Float64Array(n + 1);
  for (let j = n - 1; j >= 0; j--) suffix[j] = suffix[j + 1]! + hist[j]!;
  const pTotal = suffix[0]!;
  // Per candidate, the bins of a level share Q (but on atoms) and log p does not depend on the candidate (but on
  // its last bin, which takes the clipped mass), so a level's share of the divergence comes from prefix sums:
  //   Σ p·(log p − log q) = (Σ h·log p − log q · Σ h) / pTotal over its plain bins,
  // and only atom bins and the last bin are visited one by one. Level m holds the bins b with
  // ⌊b · levels / i⌋ = m, i.e. ⌈m · i / levels⌉ <= b < ⌈(m + 1) · i / levels⌉ (exact in doubles).
  const contSum = new Float64Array(n + 1);
  const contCount = new Float64Array(n + 1);
  const plainH = new Float64Array(n + 1);
  const plainHLogP = new Float64Array(n + 1);
  const special: number[] = [];
  for (let b = 0; b < n; b++) {
    const h = hist[b]!;
    const plain = atom[b] === 0 && cont[b] !== 0;
    contSum[b + 1] = contSum[b]! + cont[b]!;
    contCount[b + 1] = contCount[b]! + (cont[b] !== 0 ? 1 : 0);
    plainH[b + 1] = plainH[b]! + (plain ? h : 0);
    plainHLogP[b + 1] = plainHLogP[b]! + (plain && h > 0 ? h * Math.log(h / pTotal) : 0);
    if (!plain && h > 0) special.push(b);
  }
  const levelStart = new Int32Array(levels + 1);
  const levelSpread = new Float64Array(levels);
  for (let i = startBin; i <= stop; i += stride) {
    const qTotal = pTotal - suffix[i]!;
    // q of a mass qb is (qTotal > 0 ? qb / qTotal : 0) + 1e-10, written out below: a closure made per candidate
    // and called per level measured 1.5× slower here
    const hasQ = qTotal > 0;
    let kl = 0;
    for (let m = 0; m <= levels; m++) levelStart[m] = Math.min(i, Math.ceil((m * i) / levels));
    const last = i - 1;
    for (let m = 0; m < levels; m++) {
      const from = levelStart[m]!;
      const to = levelStart[m + 1]!;
      if (from >= to) continue;
      const nonEmpty = contCount[to]! - contCount[from]!;
      const spread = nonEmpty > 0 ? (contSum[to]! - contSum[from]!) / nonEmpty : 0;
      levelSpread[m] = spread;
      const end = Math.min(to, last);
      const h = end > from ? plainH[end]! - plainH[from]! : 0;
      if (h > 0)
        kl += (plainHLogP[end]! - plainHLogP[from]! - Math.log((hasQ ? spread / qTotal : 0) + 1e-10) * h) / pTotal;
    }
    for (const b of special) {
      if (b >= last) break;
      const m = Math.floor((b * levels) / i);
      const p = hist[b]! / pTotal;
      const qb = atom[b]! + (cont[b] === 0 ? 0 : levelSpread[m]!);
      kl += p * Math.log(p / ((hasQ ? qb / qTotal : 0) + 1e-10));
    }
    const endP = (hist[last]! + suffix[i]!) / pTotal;
    if (endP !== 0) {
      const m = Math.floor((last * levels) / i);
      const qb = atom[last]! + (cont[last] === 0 ? 0 : levelSpread[m]!);
      kl += endP * Math.log(endP / ((hasQ ? qb / qTotal : 0) + 1e-10));
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

/** The stored histogram has this many times the search grid's bins, so regridding to [0, max |x|] stays fine. */
export const KL_STORED_BINS_PER_GRID_BIN = 8;

/**
 * Entropy (KL-divergence) calibration as horizon_plugin_pytorch does it: `klThresholdBin` on a grid of `bins` bins
 * of |x| over [0, max |x|] with `-quantMin` levels (128 for qint8), so candidates run from
 * max |x| · startBin / bins (a quarter of the range by default) to max |x|. The data are stored in a
 * power-of-two histogram 8× finer than the grid (exact merging) and regridded for each search, where
 * atoms found in it keep their own mass in Q (`separateAtoms`). Per tensor only.
 */
export class KLObserver extends HistogramObserver<KlOptions> {
  private steps = 0;
  private clip: number | null = null;

  constructor(options: unknown = {}) {
    super('kl', klOptionsSchema, options, 2);
  }

  protected override storedBins(): number {
    return this.options.bins * KL_STORED_BINS_PER_GRID_BIN;
  }

  /** The search on a histogram, with the grid's bin width (threshold = bin · width). */
  private searchOf(h: SignedHistogram): KlSearch & { width: number } {
    const a = h.absMax;
    const n = this.options.bins;
    const counts = h.absCountsOver(n, a);
    // an atom must hold more values than an average grid bin
    const atoms =
      this.options.separateAtoms && a > 0
        ? regridAbsCounts(findAtoms(h.absCounts(), h.total / n), h.width, a, n, a)
        : undefined;
    const r = klThresholdBin(counts, -this.quantRange.quantMin, this.options.startBin, 1, atoms);
    return { ...r, width: a / n };
  }

  private thresholdOf(h: SignedHistogram): number {
    if (h.absMax === 0) return 0;
    const r = this.searchOf(h);
    return Math.min(r.bin * r.width, h.absMax);
  }

  override observe(x: Tensor): void {
    if (x.size === 0) return;
    super.observe(x);
    const k = this.options.updateInterval;
    if (k === null || this.hist.isEmpty() || ++this.steps < k) return;
    const t = this.thresholdOf(this.hist);
    this.clip = this.clip === null ? t : this.clip + this.options.averagingConstant * (t - this.clip);
    this.hist.reset();
    this.steps = 0;
  }

  override hasData(): boolean {
    return this.clip !== null || !this.hist.isEmpty();
  }

  /**
   * The clipping threshold: the running one once an interval has completed (batches of an unfinished
   * interval do not count, as in horizon_plugin_pytorch), else the search over the batches seen so far (where
   * horizon_plugin_pytorch would leave the range unset).
   */
  threshold(): number {
    this.requireData();
    return this.clip ?? this.thresholdOf(this.hist);
  }

  /** The divergence search over the histogram being collected (diagnostics). */
  search(): KlSearch & { width: number } {
    this.requireData();
    if (this.hist.isEmpty()) {
      throw new ObserverStateError(
        `observer '${this.name}': no batch since the last interval's search; call search() after observe() (or set updateInterval: null)`,
      );
    }
    return this.searchOf(this.hist);
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

  /** Histograms add; running thresholds combine by maximum (horizon_plugin_pytorch's all-reduce of min/max). */
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
