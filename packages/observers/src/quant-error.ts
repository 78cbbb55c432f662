import type { QuantRange } from '@qtk/spec';
import type { SignedHistogram } from './histogram.js';

/**
 * ∫ (v - Q(v))² dv over [lo, hi] for symmetric quantization with scale `s`:
 * Q(v) = s · clamp(round(v / s), qmin, qmax). Below (qmin + ½)s the error grows as (v - qmin·s)²,
 * above (qmax - ½)s as (v - qmax·s)²; in between it is the periodic sawtooth with ∫ = s³/12 per step.
 */
export function squaredErrorIntegral(lo: number, hi: number, s: number, r: QuantRange): number {
  if (hi <= lo) return 0;
  const a = (r.quantMin + 0.5) * s;
  const b = (r.quantMax - 0.5) * s;
  let sum = 0;
  if (lo < a) {
    const h = Math.min(hi, a);
    const c = r.quantMin * s;
    sum += ((h - c) ** 3 - (lo - c) ** 3) / 3;
  }
  if (hi > b) {
    const l = Math.max(lo, b);
    const c = r.quantMax * s;
    sum += ((hi - c) ** 3 - (l - c) ** 3) / 3;
  }
  const ml = Math.max(lo, a);
  const mh = Math.min(hi, b);
  if (mh > ml) sum += sawtoothIntegral(mh, s) - sawtoothIntegral(ml, s);
  return sum;
}

/** ∫ from -s/2 to x of (u - s·round(u/s))² du. */
function sawtoothIntegral(x: number, s: number): number {
  const y = x / s + 0.5;
  const n = Math.floor(y);
  const f = y - n - 0.5;
  return s ** 3 * (n / 12 + (f ** 3 + 0.125) / 3);
}

/**
 * Expected total squared quantization error of the histogram's data at scale `s`, each bin's count
 * spread uniformly over the bin.
 */
export function histogramQuantError(h: SignedHistogram, s: number, r: QuantRange): number {
  if (h.range === 0) return 0;
  const b = h.bins;
  const w = h.width;
  const c = h.counts;
  let sum = 0;
  for (let j = 0; j < c.length; j++) {
    const n = c[j]!;
    if (n === 0) continue;
    const lo = (j - b) * w;
    sum += (n / w) * squaredErrorIntegral(lo, lo + w, s, r);
  }
  return sum;
}
