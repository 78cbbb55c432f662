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

/** ∫ from -s/2 to x of (u - s·round(u/s))² du (products, not `**`: this runs per bin edge per candidate scale). */
function sawtoothIntegral(x: number, s: number): number {
  const y = x / s + 0.5;
  const n = Math.floor(y);
  const f = y - n - 0.5;
  return s * s * s * (n / 12 + (f * f * f + 0.125) / 3);
}

/**
 * F with F' = (v - Q(v))², continuous, for symmetric quantization at scale `s` (qmin + 1 < qmax): the
 * sawtooth's integral between the clip points, cubes beyond them, so that ∫ over [lo, hi] is F(hi) - F(lo)
 * and a histogram needs one evaluation per bin edge instead of three clipped integrals per bin.
 */
function errorAntiderivative(s: number, r: QuantRange): (x: number) => number {
  const a = (r.quantMin + 0.5) * s;
  const b = (r.quantMax - 0.5) * s;
  const cLo = r.quantMin * s;
  const cHi = r.quantMax * s;
  const cube = (v: number): number => v * v * v;
  const atA = sawtoothIntegral(a, s) - cube(a - cLo) / 3;
  const atB = sawtoothIntegral(b, s) - cube(b - cHi) / 3;
  return (x) => (x <= a ? atA + cube(x - cLo) / 3 : x >= b ? atB + cube(x - cHi) / 3 : sawtoothIntegral(x, s));
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
  if (r.quantMax - r.quantMin < 2) {
    let sum = 0;
    for (let j = 0; j < c.length; j++) {
      const n = c[j]!;
      if (n === 0) continue;
      const lo = (j - b) * w;
      sum += (n / w) * squaredErrorIntegral(lo, lo + w, s, r);
    }
    return sum;
  }
  let first = 0;
  while (first < c.length && c[first] === 0) first++;
  if (first === c.length) return 0;
  let last = c.length - 1;
  while (c[last] === 0) last--;
  const F = errorAntiderivative(s, r);
  let sum = 0;
  let below = F((first - b) * w);
  for (let j = first; j <= last; j++) {
    const above = F((j + 1 - b) * w);
    const n = c[j]!;
    if (n !== 0) sum += n * (above - below);
    below = above;
  }
  return sum / w;
}
