// The running sums behind the similarity figures of two same-shaped outputs (SQNR, cosine, MSE, L1, max error):
// the CLI's agreement with a reference model and the profiler's node-by-node similarity add them up alike and each
// derive their own figures from them.

/** Sums over value pairs (x, y), x the value measured and y the reference, d = x − y, in the order added. */
export class PairSums {
  /** Σ x·y */
  dot = 0;
  /** Σ x² */
  xEnergy = 0;
  /** Σ y² */
  yEnergy = 0;
  /** Σ d² */
  squaredError = 0;
  /** Σ |d| */
  absError = 0;
  /** max |d|; NaN once a pair gave NaN. */
  maxAbsError = 0;
  /** max |y|; NaN once y was NaN. */
  yMaxAbs = 0;

  /** Adds one pair. */
  add(x: number, y: number): void {
    const d = x - y;
    const ad = Math.abs(d);
    this.dot += x * y;
    this.xEnergy += x * x;
    this.yEnergy += y * y;
    this.squaredError += d * d;
    this.absError += ad;
    this.maxAbsError = Math.max(this.maxAbsError, ad);
    this.yMaxAbs = Math.max(this.yMaxAbs, Math.abs(y));
  }
}

/**
 * The signal-to-quantization-noise ratio of `measured` against `reference`, 10·log10(Σ reference² / Σ (measured −
 * reference)²) in dB: Infinity when they are equal, NaN when both are zero.
 */
export function sqnrDb(reference: ArrayLike<number>, measured: ArrayLike<number>): number {
  const sums = new PairSums();
  for (let i = 0; i < reference.length; i++) sums.add(measured[i]!, reference[i]!);
  return 10 * Math.log10(sums.yEnergy / sums.squaredError);
}
