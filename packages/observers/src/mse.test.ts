import { scaleFromRange, quantRange } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import { MSEObserver, mseFactors } from './mse.js';
import { SignedHistogram } from './histogram.js';
import { histogramQuantError, squaredErrorIntegral } from './quant-error.js';
import { activations, batches, concat, fakeQuantMse, t } from './testing/random-data.js';
import { observeWholeAndSplit } from './testing/split-observe.js';

const q8 = quantRange('qint8');

/** Midpoint-rule integral of the squared quantization error, directly from the definition. */
function numericIntegral(lo: number, hi: number, s: number, qmin: number, qmax: number, steps = 200000): number {
  const h = (hi - lo) / steps;
  let sum = 0;
  for (let i = 0; i < steps; i++) {
    const v = lo + (i + 0.5) * h;
    const q = Math.min(qmax, Math.max(qmin, Math.round(v / s)));
    sum += (v - q * s) ** 2;
  }
  return sum * h;
}

describe('squaredErrorIntegral', () => {
  it('matches numeric integration inside, across and beyond the clipping points', () => {
    const s = 0.1;
    for (const [lo, hi] of [
      [0.01, 0.37],
      [-0.33, 0.21],
      [12.6, 12.8],
      [-13.1, -12.7],
      [-20, 20],
      [5, 5.05],
    ] as const) {
      const exact = squaredErrorIntegral(lo, hi, s, q8);
      const num = numericIntegral(lo, hi, s, -128, 127);
      expect(Math.abs(exact - num) / num).toBeLessThan(1e-6);
    }
    expect(squaredErrorIntegral(1, 1, s, q8)).toBe(0);
  });
});

describe('histogramQuantError', () => {
  it('equals the per-bin sum of squaredErrorIntegral (one antiderivative per edge), clipped or not, int8 and int16', () => {
    const h = new SignedHistogram(256);
    for (const b of batches(3, [8, 512], 7, 2)) h.add(b.values());
    let checked = 0;
    for (const dtype of ['qint8', 'qint16'] as const) {
      const r = quantRange(dtype);
      for (const f of [1, 0.6, 0.2, 0.02, 3]) {
        const s = scaleFromRange(h.min * f, h.max * f, r);
        let perBin = 0;
        for (let j = 0; j < h.counts.length; j++) {
          const lo = (j - h.bins) * h.width;
          perBin += (h.counts[j]! / h.width) * squaredErrorIntegral(lo, lo + h.width, s, r);
        }
        expect(perBin).toBeGreaterThan(0);
        expect(Math.abs(histogramQuantError(h, s, r) - perBin) / perBin).toBeLessThan(1e-9);
        checked++;
      }
    }
    expect(checked).toBe(10);
  });
});

describe('MSEObserver', () => {
  it('picks the threshold a brute-force search over the raw data picks (or one as good)', () => {
    for (const [seed, std] of [
      [1, 1],
      [2, 0.05],
      [3, 30],
    ] as const) {
      const bs = batches(4, [16, 256], seed, std);
      const all = concat(bs);
      let lo = Infinity;
      let hi = -Infinity;
      for (const v of all) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      for (const stride of [1, 5]) {
        const o = new MSEObserver({ stride });
        for (const b of bs) o.observe(b);
        const search = o.search();
        // brute force: fake-quantize every value at every candidate
        const factors = mseFactors(stride);
        const raw = factors.map((f) => fakeQuantMse(all, scaleFromRange(lo * f, hi * f, q8), -128, 127));
        const bestRaw = Math.min(...raw);
        const ours = raw[search.best]!;
        expect(ours / bestRaw).toBeLessThan(1.003);
        // the histogram estimate of each candidate's error is close to the real one
        for (let i = 0; i < raw.length; i++) expect(Math.abs(search.errors[i]! - raw[i]!) / raw[i]!).toBeLessThan(0.05);
        const chosen = factors[search.best]!;
        expect(o.computeQparams().scale[0]).toBe(scaleFromRange(lo * chosen, hi * chosen, q8));
      }
    }
  });

  it('clips heavy outliers (the factor is below 1)', () => {
    const o = new MSEObserver();
    const v = activations(20000, 21, 1, 0);
    v[7] = 12;
    o.observe(t(v));
    const s = o.search();
    expect(s.factors[s.best]).toBeLessThan(0.95);
    const raw = s.factors.map((f) => fakeQuantMse(v, scaleFromRange(-12 * f, 12 * f, q8), -128, 127));
    expect(raw[s.best]! / Math.min(...raw)).toBeLessThan(1.01);
    expect(s.factors).toHaveLength(95);
    expect(new MSEObserver({ stride: 10 }).options.stride).toBe(10);
  });

  it('merge equals observing everything; state round trip; all zeros', () => {
    const bs = batches(4, [500], 4);
    const { whole: one, merged: a } = observeWholeAndSplit(() => new MSEObserver(), bs, [
      [0, 1],
      [2, 3],
    ]);
    expect(a.computeQparams()).toEqual(one.computeQparams());
    const c = new MSEObserver();
    c.load(one.state());
    expect(c.computeQparams()).toEqual(one.computeQparams());
    const z = new MSEObserver();
    z.observe(bs[0]!.mul(0));
    expect(z.computeQparams().scale[0]).toBe(1.1920928955078125e-7);
  });
});
