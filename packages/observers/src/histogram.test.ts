import { describe, expect, it } from 'vitest';
import { SignedHistogram, pow2Above } from './histogram.js';
import { activations } from './testing/random-data.js';

/** Direct binning of all values at the final range. */
function directCounts(v: ArrayLike<number>, bins: number, range: number): Float64Array {
  const c = new Float64Array(2 * bins);
  const w = range / bins;
  for (let i = 0; i < v.length; i++) {
    const x = v[i]!;
    if (x >= 0) c[Math.floor(x / w) + bins]++;
    else c[bins - 1 - Math.floor(-x / w)]++;
  }
  return c;
}

describe('SignedHistogram', () => {
  it('pow2Above is the smallest power of two strictly above', () => {
    expect(pow2Above(1)).toBe(2);
    expect(pow2Above(0.75)).toBe(1);
    expect(pow2Above(3)).toBe(4);
    expect(pow2Above(4)).toBe(8);
    expect(pow2Above(1e-30)).toBeGreaterThan(1e-30);
    expect(pow2Above(1e-30) / 2).toBeLessThanOrEqual(1e-30);
  });

  it('growing batches give the same counts as binning everything at the final range', () => {
    const h = new SignedHistogram(64);
    const all: number[] = [];
    for (let i = 0; i < 6; i++) {
      const v = activations(500, 40 + i, 0.1 * 3 ** i);
      h.add(v);
      all.push(...v);
    }
    expect(h.range).toBe(pow2Above(Math.max(...all.map(Math.abs))));
    expect(h.counts).toEqual(directCounts(all, 64, h.range));
    expect(h.total).toBe(all.length);
    expect(h.min).toBe(Math.min(...all));
    expect(h.max).toBe(Math.max(...all));
  });

  it('merge equals adding everything to one histogram, in any order', () => {
    const parts = [activations(300, 1, 5), activations(300, 2, 0.01), activations(300, 3, 1)];
    const one = new SignedHistogram(128);
    for (const p of parts) one.add(p);
    const hs = parts.map((p) => {
      const h = new SignedHistogram(128);
      h.add(p);
      return h;
    });
    const merged = hs[1]!.clone();
    merged.merge(hs[2]!);
    merged.merge(hs[0]!);
    expect(merged.counts).toEqual(one.counts);
    expect([merged.range, merged.min, merged.max]).toEqual([one.range, one.min, one.max]);
    const back = SignedHistogram.fromState(JSON.parse(JSON.stringify(merged.toState())), 'test');
    expect(back.counts).toEqual(one.counts);
  });

  it('zeros before any range stay in the first nonnegative bin; |x| folding', () => {
    const h = new SignedHistogram(8);
    h.add(new Float32Array(5));
    expect(h.range).toBe(0);
    h.add(Float32Array.from([-3, 3, 0.1, -0.1]));
    expect(h.range).toBe(4);
    const a = h.absCounts();
    expect(Array.from(a)).toEqual([7, 0, 0, 0, 0, 0, 2, 0]);
    expect(h.total).toBe(9);
    expect(() => h.add(Float32Array.from([Infinity]))).toThrow(/Infinity/);
  });
});

describe('SignedHistogram with NaN', () => {
  it('ignores NaN values (fast path and all-zero path)', () => {
    const h = new SignedHistogram(8);
    h.add(Float32Array.from([0, NaN, 0]));
    expect(h.total).toBe(2);
    h.add(Float32Array.from([NaN, -1, 1.5, NaN]));
    expect(h.total).toBe(4);
    expect([h.min, h.max, h.range]).toEqual([-1, 1.5, 2]);
    h.add(Float32Array.from([NaN, NaN]));
    expect(h.total).toBe(4);
  });
});
