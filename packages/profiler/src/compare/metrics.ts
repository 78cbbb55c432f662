// Similarity metrics between two feature maps of the same size (float64 accumulation).
import { PairSums } from '@qtk/nn';

export const SIMILARITY_METRICS = ['cosine', 'mse', 'l1', 'kl', 'sqnr'] as const;
export type SimilarityMetric = (typeof SIMILARITY_METRICS)[number];

/** Whether a larger value of the metric means more similar. */
export const HIGHER_IS_BETTER: Readonly<Record<SimilarityMetric, boolean>> = {
  cosine: true,
  mse: false,
  l1: false,
  kl: false,
  sqnr: true,
};

export interface Similarity {
  /** Cosine similarity; 1 when both are all zeros, 0 when exactly one is. */
  readonly cosine: number;
  readonly mse: number;
  /** Mean absolute difference. */
  readonly l1: number;
  /** KL divergence of the second map's value histogram from the first's (256 bins over their joint range). */
  readonly kl: number;
  /** Signal-to-quantization-noise ratio in dB, 10·log10(Σa² / Σ(a−b)²); Infinity when identical. */
  readonly sqnr: number;
  readonly maxAbsDiff: number;
}

const KL_BINS = 256;
const KL_EPS = 1e-10;

function histogram(v: Float32Array, lo: number, width: number): Float64Array {
  const h = new Float64Array(KL_BINS);
  for (let i = 0; i < v.length; i++) {
    const b = width > 0 ? Math.min(KL_BINS - 1, Math.floor((v[i]! - lo) / width)) : 0;
    h[b]! += 1;
  }
  return h;
}

/** KL(P‖Q) of the value histograms of `a` (P) and `b` (Q) on shared bins. */
export function klDivergence(a: Float32Array, b: Float32Array): number {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of [a, b])
    for (let i = 0; i < v.length; i++) {
      const x = v[i]!;
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  if (!(hi > lo)) return 0;
  const width = (hi - lo) / KL_BINS;
  const p = histogram(a, lo, width);
  const q = histogram(b, lo, width);
  let kl = 0;
  for (let i = 0; i < KL_BINS; i++) {
    const pi = p[i]! / a.length;
    if (pi === 0) continue;
    const qi = Math.max(q[i]! / b.length, KL_EPS);
    kl += pi * Math.log(pi / qi);
  }
  return Math.max(0, kl);
}

/** Every metric at once. Non-finite values make the result NaN (reported as such, never hidden). */
export function similarityOf(a: Float32Array, b: Float32Array): Similarity {
  if (a.length !== b.length) throw new RangeError(`similarityOf: ${a.length} vs ${b.length} elements`);
  const n = a.length;
  const sums = new PairSums();
  for (let i = 0; i < n; i++) sums.add(a[i]!, b[i]!);
  const { dot, xEnergy: na, yEnergy: nb, squaredError: se, absError: ae, maxAbsError: max } = sums;
  const cosine = na === 0 && nb === 0 ? 1 : na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
  const sqnr = se === 0 ? Infinity : na === 0 ? -Infinity : 10 * Math.log10(na / se);
  return {
    cosine,
    mse: n ? se / n : 0,
    l1: n ? ae / n : 0,
    kl: klDivergence(a, b),
    sqnr,
    maxAbsDiff: max,
  };
}
