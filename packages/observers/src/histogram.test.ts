import { describe, expect, it } from 'vitest';
import { SignedHistogram, pow2Above } from './histogram.js';
import { activations } from './testing/random-data.js';

/** Direct binning of all values at the final range. */
function directCounts(v: ArrayLike<number>, bins: number, range: number): Float64Array {
  const c = new Float64Array(2 * bins);
  const w = range / bins;
  for (let i = 0; i < v.length; i++) {
    const x = v[i]!;
    const k = x >= 0 ? Math.floor(x / w) + bins : bins - 1 - Math.floor(-x / w);
    c[k] = c[k]! + 1;
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

  it('absCountsOver regrids |x| to n bins over [0, max |x|]: exact on aligned edges, no slivers, total kept', () => {
    const v = activations(5000, 9, 0.8);
    for (let i = 0; i < v.length; i++) v[i] = Math.max(-3, Math.min(3, v[i]!));
    v[7] = -3; // max |x| = 3, range 4: stored bins of width 4/256 = 1/64, three to each grid bin of width 3/64
    const h = new SignedHistogram(256);
    h.add(v);
    const grid = h.absCountsOver(64, 3);
    const direct = new Float64Array(64);
    for (const x of v) {
      const k = Math.min(63, Math.floor((Math.abs(x) * 64) / 3));
      direct[k] = direct[k]! + 1;
    }
    expect(Array.from(grid)).toEqual(Array.from(direct));
    // a grid whose edges fall inside stored bins: shares spread, nothing in bins with no data, total kept
    const odd = h.absCountsOver(100, 3);
    expect(odd.reduce((a, b) => a + b, 0)).toBeCloseTo(5000, 9);
    const sparse = new SignedHistogram(1024);
    sparse.add(Float32Array.from([0.1, 0.1, 0.7, -2.9, 2.9, 3]));
    const s = sparse.absCountsOver(7, 3);
    expect(Array.from(s, (c) => c > 0)).toEqual([true, true, false, false, false, false, true]);
    expect(s[6]).toBe(3);
    expect(s.reduce((a, b) => a + b, 0)).toBeCloseTo(6, 12);
    expect(Array.from(new SignedHistogram(8).absCountsOver(4, 1))).toEqual([0, 0, 0, 0]);
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
