import { addHistogramCounts, channelMinMax, histogramCounts } from '@qtk/tensor';
import { InvalidArgumentError, StateVersionError } from './errors.js';

/**
 * [min, max] of the non-NaN values ([Infinity, -Infinity] when there are none). Float32 arrays go to
 * @qtk/tensor's ChannelMinMax (wasm SIMD); other arrays take blocks of 1024 with local accumulators, about
 * twice as fast in V8 as one long loop.
 */
export function rangeOf(v: ArrayLike<number>): [number, number] {
  if (v instanceof Float32Array) {
    const lo = new Float64Array(1);
    const hi = new Float64Array(1);
    channelMinMax(v, { outer: 1, channels: 1, inner: v.length }, lo, hi);
    return [lo[0]!, hi[0]!];
  }
  let lo = Infinity;
  let hi = -Infinity;
  const n = v.length;
  for (let s = 0; s < n; s += 1024) {
    const e = s + 1024 < n ? s + 1024 : n;
    let l = lo;
    let h = hi;
    for (let i = s; i < e; i++) {
      const x = v[i]!;
      if (x < l) l = x;
      if (x > h) h = x;
    }
    lo = l;
    hi = h;
  }
  return [lo, hi];
}

/** The smallest power of two strictly above `a` (a > 0, finite). */
export function pow2Above(a: number): number {
  let r = 2 ** (Math.floor(Math.log2(a)) + 1);
  while (r <= a) r *= 2;
  while (r / 2 > a) r /= 2;
  return r;
}

/**
 * Regrids counts of |x| kept in bins of `width` (bin j = [j·width, (j+1)·width)) into `n` equal bins
 * over [0, upTo], upTo >= absMax > 0: each bin's count is spread uniformly over the part of it below
 * absMax (the largest |x|), and values at upTo count in the last bin. Grid edges within 1e-9 of a
 * stored edge snap to it, so rounding never leaves a sliver of count in an empty bin. With stored bins
 * several times finer than the new ones this is close to binning the data over [0, upTo] in one pass;
 * exact when every grid edge falls on a stored edge.
 */
export function regridAbsCounts(
  abs: ArrayLike<number>,
  width: number,
  absMax: number,
  n: number,
  upTo: number,
): Float64Array {
  const out = new Float64Array(n);
  if (n === 0) return out;
  const cum = new Float64Array(abs.length + 1);
  for (let j = 0; j < abs.length; j++) cum[j + 1] = cum[j]! + abs[j]!;
  const total = cum[abs.length]!;
  const top = Math.min(upTo, absMax) / width; // in stored bins
  /** Count below x (in stored bins). */
  const below = (x: number): number => {
    if (x >= top) return total;
    const j = Math.floor(x);
    return cum[j]! + (abs[j]! * (x - j)) / (Math.min(j + 1, top) - j);
  };
  const perBin = upTo / width / n;
  let prev = 0;
  for (let k = 0; k < n - 1; k++) {
    let e = (k + 1) * perBin;
    const r = Math.round(e);
    if (Math.abs(e - r) <= 1e-9 * Math.max(1, e)) e = r;
    const c = below(e);
    out[k] = c - prev;
    prev = c;
  }
  out[n - 1] = total - prev;
  return out;
}

export interface HistogramState {
  readonly bins: number;
  readonly range: number;
  readonly min: number;
  readonly max: number;
  readonly counts: readonly number[];
}

/**
 * A fixed-size histogram of signed values over [-range, range) with `2 * bins` bins of width
 * `range / bins`, where `range` is a power of two above everything seen so far. When data outside
 * the range arrives the range doubles (as often as needed) and neighbouring bins pair up, so
 * memory stays fixed. With `bins` a power of two every bin index is computed exactly
 * (`floor(x * bins / range)` multiplies by a power of two), so the histogram of a data set does not
 * depend on batch order or on how it was split across observers and merged: merging equals
 * observing everything in one place.
 */
export class SignedHistogram {
  /**
   * counts[bins + k] holds values in [k·w, (k+1)·w) for k >= 0 and the mirror image (-(|k|)·w, -(|k|-1)·w]
   * for k < 0, so folding to |x| is exact.
   */
  readonly counts: Float64Array;

  /** @qtk/nn's deepCopy (COPY_FIELDS) copies a histogram with the observer holding it. */
  get [Symbol.for('qtk.deepCopy.fields')](): boolean {
    return true;
  }

  /** 0 until a nonzero value arrives. */
  range = 0;
  min = Infinity;
  max = -Infinity;

  constructor(readonly bins: number) {
    if (!Number.isInteger(bins) || bins < 2)
      throw new InvalidArgumentError(`SignedHistogram: bins must be an integer >= 2, got ${bins}`);
    this.counts = new Float64Array(2 * bins);
  }

  get width(): number {
    return this.range / this.bins;
  }

  get total(): number {
    let s = 0;
    for (let i = 0; i < this.counts.length; i++) s += this.counts[i]!;
    return s;
  }

  isEmpty(): boolean {
    return this.min > this.max;
  }

  /** Largest absolute value seen. */
  get absMax(): number {
    return this.isEmpty() ? 0 : Math.max(-this.min, this.max);
  }

  /** Doubles the range `k` times, folding pairs of bins. */
  private widen(newRange: number): void {
    if (this.range === 0) {
      this.range = newRange;
      return;
    }
    const f = newRange / this.range;
    if (f <= 1) return;
    const b = this.bins;
    const c = this.counts;
    const folded = new Float64Array(c.length);
    for (let j = 0; j < c.length; j++) {
      const n = c[j]!;
      if (n === 0) continue;
      const k = Math.floor((j - b) / f) + b;
      folded[k] = folded[k]! + n;
    }
    c.set(folded);
    this.range = newRange;
  }

  add(v: ArrayLike<number>): void {
    const n = v.length;
    if (n === 0) return;
    const [lo, hi] = rangeOf(v);
    if (lo > hi) return; // all NaN
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) {
      throw new InvalidArgumentError(
        `histogram: observed ±Infinity (range [${lo}, ${hi}]); check the data fed to the observer`,
      );
    }
    if (lo < this.min) this.min = lo;
    if (hi > this.max) this.max = hi;
    const a = Math.max(-lo, hi);
    if (a > 0 && a >= this.range) this.widen(pow2Above(a));
    const b = this.bins;
    // Hot path (every activation of every calibration batch): float32 values go to @qtk/tensor's
    // HistogramCounts (wasm); inv 0 while the range is 0 puts zeros in the bin [0, w) of every later range.
    const attrs = { bins: b, inv: this.range === 0 ? 0 : b / this.range };
    let t: Int32Array;
    if (v instanceof Float32Array) t = histogramCounts(v, attrs);
    else {
      t = new Int32Array(2 * b + 1);
      addHistogramCounts(v, attrs, t);
    }
    const c = this.counts;
    for (let j = 0; j < 2 * b; j++) if (t[j] !== 0) c[j] = c[j]! + t[j]!;
  }

  /** Adds another histogram of the same bin count (ranges align by doubling the smaller one). */
  merge(o: SignedHistogram): void {
    if (o.bins !== this.bins)
      throw new InvalidArgumentError(`histogram: cannot merge ${o.bins} bins into ${this.bins}`);
    if (o.isEmpty()) return;
    const other = o.clone();
    if (other.range > this.range) this.widen(other.range);
    else other.widen(this.range);
    for (let i = 0; i < this.counts.length; i++) this.counts[i] = this.counts[i]! + other.counts[i]!;
    this.min = Math.min(this.min, o.min);
    this.max = Math.max(this.max, o.max);
  }

  clone(): SignedHistogram {
    const h = new SignedHistogram(this.bins);
    h.counts.set(this.counts);
    h.range = this.range;
    h.min = this.min;
    h.max = this.max;
    return h;
  }

  reset(): void {
    this.counts.fill(0);
    this.range = 0;
    this.min = Infinity;
    this.max = -Infinity;
  }

  /** Counts of |x| over [0, range) in `bins` bins of width `range / bins`. */
  absCounts(): Float64Array {
    const b = this.bins;
    const out = new Float64Array(b);
    for (let j = 0; j < b; j++) out[j] = this.counts[b + j]! + this.counts[b - 1 - j]!;
    return out;
  }

  /**
   * Counts of |x| in `n` equal bins over [0, upTo] (upTo >= max |x|; values at upTo count in the last
   * bin): `regridAbsCounts` of `absCounts()`.
   */
  absCountsOver(n: number, upTo: number): Float64Array {
    if (this.isEmpty() || upTo <= 0 || this.range === 0) {
      const out = new Float64Array(n);
      if (n > 0) out[0] = this.total;
      return out;
    }
    return regridAbsCounts(this.absCounts(), this.width, this.absMax, n, upTo);
  }

  toState(): HistogramState {
    return {
      bins: this.bins,
      range: this.range,
      min: this.isEmpty() ? 0 : this.min,
      max: this.isEmpty() ? 0 : this.max,
      counts: this.isEmpty() ? [] : Array.from(this.counts),
    };
  }

  static fromState(s: HistogramState, where: string): SignedHistogram {
    const ok =
      s &&
      Number.isInteger(s.bins) &&
      s.bins >= 2 &&
      typeof s.range === 'number' &&
      Array.isArray(s.counts) &&
      (s.counts.length === 0 || s.counts.length === 2 * s.bins);
    if (!ok) throw new StateVersionError(`${where}: malformed histogram state`);
    const h = new SignedHistogram(s.bins);
    if (s.counts.length === 0) return h;
    h.counts.set(s.counts);
    h.range = s.range;
    h.min = s.min;
    h.max = s.max;
    return h;
  }
}
