import { describe, expect, it } from 'vitest';
import { KLObserver } from './kl.js';
import { activations, batches, concat, fakeQuantMse, rng, t } from './testing/random-data.js';
import { observeWholeAndSplit } from './testing/split-observe.js';

/**
 * horizon_plugin_pytorch's entropy calibration written out from its definition: |x| binned in `bins`
 * equal bins over [0, max |x|] (max |x| itself in the last bin), bin 0 := bin 1, candidates i = start
 * … bins, P = first i bins + everything beyond in bin i - 1, Q = first i bins merged into `levels`
 * levels and spread over each level's nonempty bins, KL(P‖Q + 1e-10), 9-wide moving sum (later
 * window on ties), threshold = centre candidate · max |x| / bins.
 */
function referenceKlThreshold(values: ArrayLike<number>, bins: number, levels = 128, start = 128): number {
  let amax = 0;
  for (let i = 0; i < values.length; i++) amax = Math.max(amax, Math.abs(values[i]!));
  const w = amax / bins;
  const hist: number[] = new Array(bins).fill(0);
  for (let i = 0; i < values.length; i++) {
    const k = Math.min(bins - 1, Math.floor(Math.abs(values[i]!) / w));
    hist[k] = hist[k]! + 1;
  }
  hist[0] = hist[1]!;
  const cands: number[] = [];
  const divs: number[] = [];
  for (let i = start; i <= bins; i++) {
    const P = hist.slice(0, i);
    P[i - 1] = P[i - 1]! + hist.slice(i).reduce((a, b) => a + b, 0);
    const Q: number[] = new Array(i).fill(0);
    for (let m = 0; m < levels; m++) {
      const members: number[] = [];
      for (let b = 0; b < i; b++) if (b * levels >= m * i && b * levels < (m + 1) * i) members.push(b);
      const nonzero = members.filter((b) => hist[b]! > 0);
      const total = members.reduce((a, b) => a + hist[b]!, 0);
      for (const b of nonzero) Q[b] = total / nonzero.length;
    }
    const sp = P.reduce((a, b) => a + b, 0);
    const sq = Q.reduce((a, b) => a + b, 0);
    let kl = 0;
    for (let b = 0; b < i; b++) {
      const p = P[b]! / sp;
      const q = (sq > 0 ? Q[b]! / sq : 0) + 1e-10;
      if (p > 0) kl += p * Math.log(p / q);
    }
    cands.push(i);
    divs.push(kl);
  }
  let best = -1;
  let bestSum = Infinity;
  for (let k = 0; k + 9 <= divs.length; k++) {
    let sum = 0;
    for (let j = k; j < k + 9; j++) sum += divs[j]!;
    if (sum <= bestSum) {
      bestSum = sum;
      best = k;
    }
  }
  return Math.min((cands[best + 4]! * amax) / bins, amax);
}

/**
 * ReLU-like activations clamped to [-3, 3] with one value at exactly 3: max |x| = 3 puts every edge of
 * the search grid on an edge of the stored histogram (range 4, 8 stored bins per grid bin), so the
 * regridded counts equal direct binning and thresholds can be compared exactly.
 */
function reluData(n: number, seed: number, std: number, negative = false): Float32Array {
  const v = activations(n, seed, std, 0.003);
  for (let i = 0; i < n; i++) v[i] = Math.min(3, negative ? Math.max(-3, v[i]!) : Math.max(0, v[i]!));
  v[seed % n] = negative && seed % 2 ? -3 : 3;
  return v;
}

/**
 * Hardswish of BN-like outputs where 40% of the values are two constants: a stand-in for the first layers
 * of a conv net on images with a flat background (every background pixel gives each channel the same
 * value), as in examples/src/observer-comparison.ts. Heavy tail up to ~5.3, most mass below 1.
 */
function hardswishWithAtoms(n: number, seed: number): Float32Array {
  const g = activations(n, seed, 1.3, 0);
  const r = rng(seed + 7);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const x = g[i]!;
    out[i] = r() < 0.4 ? (r() < 0.5 ? 0.25 : 0.5) : (x * Math.min(6, Math.max(0, x + 3))) / 6;
  }
  return out;
}

describe('KLObserver', () => {
  it('searches `bins` bins over [0, max |x|] as horizon_plugin_pytorch does (updateInterval null: one search over all data)', () => {
    for (const [bins, seed] of [
      [512, 1],
      [1024, 2],
    ] as const) {
      const parts = [reluData(4000, seed, 1), reluData(4000, seed + 10, 1.5), reluData(4000, seed + 20, 0.7, true)];
      const o = new KLObserver({ bins, updateInterval: null, separateAtoms: false });
      const withAtoms = new KLObserver({ bins, updateInterval: null });
      for (const p of parts) o.observe(t(p, [40, 100]));
      for (const p of parts) withAtoms.observe(t(p, [40, 100]));
      const all = concat(parts.map((p) => t(p)));
      const ref = referenceKlThreshold(all, bins);
      expect(o.threshold()).toBe(ref);
      // no atoms here beyond the zeros that bin 0 already stands in for: the same threshold
      expect(withAtoms.threshold()).toBe(ref);
      expect(o.computeQparams().scale[0]).toBe(Math.fround(ref / 127.5));
      expect(o.search().width).toBe(3 / bins);
      // it clips, never below the first candidate
      expect(ref).toBeLessThan(3);
      expect(ref).toBeGreaterThanOrEqual((3 * 128) / bins);
    }
  });

  it('defaults are the documented ones: 512 bins, a search every batch, the threshold moving-averaged by 0.01', () => {
    const o = new KLObserver();
    expect(o.options).toMatchObject({
      bins: 512,
      updateInterval: 1,
      averagingConstant: 0.01,
      startBin: 128,
      separateAtoms: true,
    });
    const parts = [0, 1, 2].map((i) => reluData(3000, 70 + i, 1 + 0.4 * i));
    for (const p of parts) o.observe(t(p));
    const [a, b, c] = parts.map((p) => referenceKlThreshold(p, 512));
    const ab = a! + 0.01 * (b! - a!);
    expect(o.threshold()).toBeCloseTo(ab + 0.01 * (c! - ab), 12);
    // each batch is searched on its own: the first batch's threshold differs from the all-data one
    expect(a).not.toBeCloseTo(referenceKlThreshold(concat(parts.map((p) => t(p))), 512), 3);
  });

  it('updateInterval k: one search per k batches, averaged; an unfinished interval does not count', () => {
    const parts = [0, 1, 2, 3, 4].map((i) => reluData(3000, 50 + i, 1 + i * 0.3));
    const o = new KLObserver({ updateInterval: 2, averagingConstant: 0.25 });
    for (const p of parts) o.observe(t(p));
    const c1 = referenceKlThreshold(concat([t(parts[0]!), t(parts[1]!)]), 512);
    const c2 = referenceKlThreshold(concat([t(parts[2]!), t(parts[3]!)]), 512);
    expect(o.threshold()).toBeCloseTo(c1 + 0.25 * (c2 - c1), 12);
    const back = new KLObserver({ updateInterval: 2, averagingConstant: 0.25 });
    back.load(JSON.parse(JSON.stringify(o.state())));
    expect(back.threshold()).toBe(o.threshold());
    // averagingConstant 0 keeps the first interval's threshold
    const fixed = new KLObserver({ updateInterval: 2, averagingConstant: 0 });
    for (const p of parts) fixed.observe(t(p));
    expect(fixed.threshold()).toBe(c1);
    // the fifth batch is pending: search() shows it; after the interval closes there is nothing to show
    expect(fixed.search().bin * fixed.search().width).toBe(referenceKlThreshold(parts[4]!, 512));
    fixed.observe(t(parts[0]!));
    expect(() => fixed.search()).toThrow(/no batch since the last interval/);
    // fewer batches than the interval: horizon_plugin_pytorch would leave the range unset, QTK searches what it saw
    const early = new KLObserver({ updateInterval: 8 });
    early.observe(t(parts[0]!));
    early.observe(t(parts[1]!));
    expect(early.threshold()).toBe(c1);
  });

  it('heavy-tailed data with atoms (a flat image background): the atoms no longer drag the threshold to the floor', () => {
    const v = hardswishWithAtoms(20000, 3);
    let amax = 0;
    for (const x of v) amax = Math.max(amax, Math.abs(x));
    expect(amax).toBeCloseTo(5.307, 3);
    const mse = (th: number) => fakeQuantMse(v, Math.fround(th / 127.5), -128, 127) / v.length;
    // Before this change the search ran on 1024 bins over the power-of-two range 8 (first candidate 1) and
    // returned 1.031, a fifth of the range: squared error 8.77e-2 per value, 1000 times min/max's.
    expect(mse(1.03125)).toBeCloseTo(8.77e-2, 4);
    const o = new KLObserver({ updateInterval: null });
    o.observe(t(v, [200, 100]));
    expect(o.threshold()).toBeCloseTo(4.7265, 3);
    expect(mse(o.threshold())).toBeCloseTo(1.66e-4, 6);
    expect(mse(o.threshold())).toBeLessThan(2.1 * mse(amax));

    // horizon_plugin_pytorch's search (atoms spread like any count), on the same grid: the divergence rises
    // with the threshold, the pick is the first windows, max |x| / 4 (the floor) plus a few bins.
    const h = new KLObserver({ updateInterval: null, separateAtoms: false });
    h.observe(t(v, [200, 100]));
    expect(h.threshold()).toBeGreaterThanOrEqual(amax / 4);
    expect(h.threshold()).toBeCloseTo(1.399, 3);
    expect(Math.abs(h.threshold() - referenceKlThreshold(v, 512))).toBeLessThanOrEqual(amax / 512); // regridded vs direct
    const s = h.search();
    expect(s.bin).toBeLessThanOrEqual(128 + 8);
    expect(s.divergences.at(-1)!).toBeGreaterThan(2 * s.divergences[0]!);
    expect(mse(h.threshold())).toBeCloseTo(5.09e-2, 4);
  });

  it('every documented parameter is accepted and used: quantMin/quantMax set the levels, dtype the range', () => {
    const v = activations(6000, 5, 0.6, 0);
    v[0] = 3; // max |x| = 3 as in reluData, no pile-up at the clamp
    const o = new KLObserver({
      bins: 1024,
      updateInterval: 3,
      averagingConstant: 0.5,
      chAxis: -1,
      dtype: 'qint8',
      qscheme: 'per_tensor_symmetric',
      quantMin: -20,
      quantMax: 20,
      isSyncQuantize: false,
      factoryKwargs: null,
    });
    for (let i = 0; i < 3; i++) o.observe(t(v));
    const ref = referenceKlThreshold(concat([t(v), t(v), t(v)]), 1024, 20);
    expect(o.threshold()).toBe(ref);
    expect(ref).not.toBe(referenceKlThreshold(v, 1024, 128));
    expect(o.computeQparams()).toMatchObject({ quantMin: -20, quantMax: 20, zeroPoint: 0, chAxis: -1 });
    expect(o.computeQparams().scale[0]).toBe(Math.fround(ref / 20));
    expect(new KLObserver({ dtype: 'qint16', updateInterval: null }).quantRange.quantMin).toBe(-32768);
    expect(() => new KLObserver({ chAxis: 0 })).toThrow(/per channel/);
    expect(() => new KLObserver({ updateInterval: 0 })).toThrow(/updateInterval/);
    expect(() => new KLObserver({ averagingConstant: 2 })).toThrow(/averagingConstant/);
  });

  it('merge equals observing all data; few bins do not clip; all zeros; states of the old layout are refused', () => {
    // odd batches to the first observer, even ones to the second
    const { whole: one, merged: a } = observeWholeAndSplit(
      () => new KLObserver({ updateInterval: null }),
      batches(4, [2000], 31),
      [
        [1, 3],
        [0, 2],
      ],
    );
    expect(a.computeQparams()).toEqual(one.computeQparams());
    const few = new KLObserver({ bins: 128 });
    few.observe(t(Float32Array.from([0.5, -1, 0.25])));
    expect(few.threshold()).toBe(1);
    const z = new KLObserver();
    z.observe(t(new Float32Array(16)));
    expect(z.computeQparams().scale[0]).toBe(1.1920928955078125e-7);
    const old = { ...one.state(), version: 1 };
    expect(() => new KLObserver({ updateInterval: null }).load(old)).toThrow(/version 1/);
  });
});
