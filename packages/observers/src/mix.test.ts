import { quantRange, scaleFromRange } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import { MIX_PERCENTILES, MixObserver } from './mix.js';
import { activations, concat, fakeQuantMse, t } from './testing/random-data.js';

const q8 = quantRange('qint8');

function sortedPercentile(v: ArrayLike<number>, p: number): number {
  const a = Array.from(v, Math.abs).sort((x, y) => x - y);
  return a[Math.max(0, Math.ceil((p / 100) * a.length) - 1)]!;
}

describe('MixObserver', () => {
  it("scores min/max and horizon_plugin_pytorch's percentiles and keeps the one a raw-data MSE search keeps", () => {
    for (const seed of [1, 2, 3]) {
      const parts = [activations(20000, seed, 1, 0.002), activations(20000, seed + 9, 1.3, 0.002)];
      parts[0]![5] = 25; // one far outlier
      const o = new MixObserver();
      for (const p of parts) o.observe(t(p));
      const all = concat(parts.map((p) => t(p)));
      const cands = o.candidates();
      expect(cands.map((c) => c.source)).toEqual(['min_max', ...MIX_PERCENTILES.map((p) => `percentile:${p}`)]);
      const w = o.histogram().width;
      for (let i = 1; i < cands.length; i++) {
        const clip = Math.max(-cands[i]!.min, cands[i]!.max);
        expect(Math.abs(clip - sortedPercentile(all, MIX_PERCENTILES[i - 1]!))).toBeLessThanOrEqual(w);
      }
      const raw = cands.map((c) => fakeQuantMse(all, scaleFromRange(c.min, c.max, q8), -128, 127));
      const best = o.best();
      const chosen = raw[cands.indexOf(cands.find((c) => c.source === best.source)!)]!;
      expect(chosen / Math.min(...raw)).toBeLessThan(1.01);
      expect(best.source).not.toBe('min_max');
      expect(o.computeQparams().scale[0]).toBe(scaleFromRange(best.min, best.max, q8));
    }
  });

  it('keeps min/max when nothing is worth clipping; custom candidates; merge', () => {
    const u = new Float32Array(4096);
    for (let i = 0; i < u.length; i++) u[i] = (i / u.length) * 2 - 1;
    const o = new MixObserver({ percentiles: [90, 99] });
    o.observe(t(u));
    expect(o.best().source).toBe('min_max');
    expect(o.candidates()).toHaveLength(3);
    const a = new MixObserver({ percentiles: [90, 99] });
    const b = new MixObserver({ percentiles: [90, 99] });
    a.observe(t(u.subarray(0, 1000)));
    b.observe(t(u.subarray(1000)));
    a.merge(b.state());
    expect(a.computeQparams()).toEqual(o.computeQparams());
  });
});
