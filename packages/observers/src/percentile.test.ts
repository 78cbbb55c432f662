import { OptionsError } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import { PercentileObserver, histogramPercentile } from './percentile.js';
import { batches, concat } from './testing/random-data.js';
import { observeWholeAndSplit } from './testing/split-observe.js';

/** The p-th percentile of |x| by sorting (nearest rank). */
function sortedPercentile(v: ArrayLike<number>, p: number): number {
  const a = Array.from(v, Math.abs).sort((x, y) => x - y);
  const k = Math.max(0, Math.ceil((p / 100) * a.length) - 1);
  return a[k]!;
}

describe('PercentileObserver', () => {
  it('is within one bin of the percentile by sorting', () => {
    const bs = batches(6, [8, 500], 5);
    const all = concat(bs);
    for (const p of [50, 90, 99, 99.9, 99.99]) {
      const o = new PercentileObserver({ percentile: p, bins: 2048 });
      for (const b of bs) o.observe(b);
      const h = o.histogram();
      expect(Math.abs(o.threshold() - sortedPercentile(all, p))).toBeLessThanOrEqual(h.width);
    }
  });

  it('clips min/max at the threshold and uses the scale rule', () => {
    const bs = batches(3, [1000], 9);
    const o = new PercentileObserver({ percentile: 99 });
    for (const b of bs) o.observe(b);
    const clip = o.threshold();
    const all = concat(bs);
    const lo = Math.max(Math.min(...all), -clip);
    const hi = Math.min(Math.max(...all), clip);
    expect(o.computeQparams().scale[0]).toBe(Math.fround(Math.max(-lo, hi) / 127.5));
    // percentile 100 never clips below the largest value's bin
    const full = new PercentileObserver({ percentile: 100 });
    for (const b of bs) full.observe(b);
    expect(full.computeQparams().scale[0]).toBe(Math.fround(Math.max(...all.map(Math.abs)) / 127.5));
  });

  it('merge equals observing all the data; state round trip', () => {
    const { whole: one, merged: w1 } = observeWholeAndSplit(() => new PercentileObserver(), batches(4, [700], 13), [
      [0, 2],
      [3, 1],
    ]);
    expect(w1.computeQparams()).toEqual(one.computeQparams());
    const loaded = new PercentileObserver();
    loaded.load(JSON.parse(JSON.stringify(one.state())));
    expect(loaded.computeQparams()).toEqual(one.computeQparams());
    expect(() => new PercentileObserver({ bins: 1024 }).merge(one.state())).toThrow(/2048 bins/);
  });

  it('edge cases and options', () => {
    const o = new PercentileObserver();
    o.observe(batches(1, [4], 1)[0]!.mul(0));
    expect(o.computeQparams().scale[0]).toBe(1.1920928955078125e-7);
    expect(histogramPercentile(o.histogram(), 99)).toBe(0);
    expect(() => new PercentileObserver({ percentile: 101 })).toThrow(OptionsError);
    expect(() => new PercentileObserver({ chAxis: 0 })).toThrow(/cannot observe per channel/);
    expect(() => new PercentileObserver({ bins: 4 })).toThrow(/bins/);
  });
});
