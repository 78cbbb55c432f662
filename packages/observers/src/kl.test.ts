import { describe, expect, it } from 'vitest';
import { KLObserver } from './kl.js';
import { activations, batches, concat, t } from './testing/random-data.js';

/** Entropy calibration written out from its definition, for comparison. */
function referenceKlThreshold(values: ArrayLike<number>, bins: number, levels = 128, start = 128): number {
  let amax = 0;
  for (let i = 0; i < values.length; i++) amax = Math.max(amax, Math.abs(values[i]!));
  let R = 1;
  while (R <= amax) R *= 2;
  while (R / 2 > amax) R /= 2;
  const w = R / bins;
  const hist: number[] = new Array(bins).fill(0);
  for (let i = 0; i < values.length; i++) hist[Math.floor(Math.abs(values[i]!) / w)]++;
  hist[0] = hist[1]!;
  let stop = bins;
  while (stop > 1 && hist[stop - 1] === 0) stop--;
  const cands: number[] = [];
  const divs: number[] = [];
  for (let i = start; i <= stop; i++) {
    const P = hist.slice(0, i);
    P[i - 1] += hist.slice(i).reduce((a, b) => a + b, 0);
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
      const q = Q[b]! / sq + 1e-10;
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
  return Math.min(cands[best + 4]! * w, amax);
}

function reluData(n: number, seed: number, std: number): Float32Array {
  const v = activations(n, seed, std, 0.003);
  for (let i = 0; i < n; i++) v[i] = Math.max(0, v[i]!);
  return v;
}

describe('KLObserver', () => {
  it('matches a reference implementation over batches (default: one search over all data)', () => {
    for (const [bins, seed] of [
      [512, 1],
      [1024, 2],
    ] as const) {
      const parts = [reluData(4000, seed, 1), reluData(4000, seed + 10, 1.5), activations(4000, seed + 20, 0.7, 0.001)];
      const o = new KLObserver({ bins });
      for (const p of parts) o.observe(t(p, [40, 100]));
      const all = concat(parts.map((p) => t(p)));
      const ref = referenceKlThreshold(all, bins);
      expect(o.threshold()).toBe(ref);
      expect(o.computeQparams().scale[0]).toBe(Math.fround(ref / 127.5));
      // it clips: the threshold is below the largest value
      expect(ref).toBeLessThan(Math.max(...all));
    }
  });

  it('periodic mode (updateInterval) averages per-interval thresholds as horizon_plugin_pytorch does', () => {
    const parts = [0, 1, 2, 3].map((i) => reluData(3000, 50 + i, 1 + i * 0.3));
    const o = new KLObserver({ bins: 512, updateInterval: 2, averagingConstant: 0.25 });
    for (const p of parts) o.observe(t(p));
    const c1 = referenceKlThreshold(concat([t(parts[0]!), t(parts[1]!)]), 512);
    const c2 = referenceKlThreshold(concat([t(parts[2]!), t(parts[3]!)]), 512);
    expect(o.threshold()).toBeCloseTo(c1 + 0.25 * (c2 - c1), 12);
    const back = new KLObserver({ bins: 512, updateInterval: 2, averagingConstant: 0.25 });
    back.load(JSON.parse(JSON.stringify(o.state())));
    expect(back.threshold()).toBe(o.threshold());
  });

  it('merge equals observing all data; few bins do not clip; all zeros; options', () => {
    const bs = batches(4, [2000], 31);
    const one = new KLObserver();
    for (const b of bs) one.observe(b);
    const a = new KLObserver();
    const b = new KLObserver();
    bs.forEach((x, i) => (i % 2 ? a : b).observe(x));
    a.merge(JSON.parse(JSON.stringify(b.state())));
    expect(a.computeQparams()).toEqual(one.computeQparams());
    const few = new KLObserver({ bins: 128 });
    few.observe(t(Float32Array.from([0.5, -1, 0.25])));
    expect(few.threshold()).toBe(1);
    const z = new KLObserver();
    z.observe(t(new Float32Array(16)));
    expect(z.computeQparams().scale[0]).toBe(1.1920928955078125e-7);
    expect(() => new KLObserver({ updateInterval: 0 })).toThrow(/updateInterval/);
  });
});
