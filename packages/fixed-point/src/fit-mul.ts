import { InvalidArgumentError } from '@qtk/tensor';
import { rhu } from './integer-math.js';

/** A real ratio as `m / 2^n`; `saturated` when even n = 0 overflowed and m was clamped. */
export interface FixedMultiplier {
  readonly m: number;
  readonly n: number;
  readonly saturated: boolean;
}

/**
 * `fitMul(r, bits, maxShift)` (march-semantics.md §0): the largest `n <= maxShift` with
 * `rhu(|r| * 2^n) <= 2^bits - 1`, `m = rhu(|r| * 2^n)` carrying the sign of r. When n = 0 already
 * overflows, m = 2^bits - 1 and `saturated` is set (the caller records a conversion warning).
 * r is used in float64 as given; pass float32 scales through Math.fround before dividing.
 */
export function fitMul(r: number, bits: number, maxShift: number): FixedMultiplier {
  if (!Number.isFinite(r)) throw new InvalidArgumentError(`fitMul: ratio must be finite, got ${r}`);
  if (!Number.isInteger(bits) || bits < 1 || bits > 31)
    throw new InvalidArgumentError(`fitMul: bits must be an integer in [1, 31], got ${bits}`);
  if (!Number.isInteger(maxShift) || maxShift < 0 || maxShift > 63)
    throw new InvalidArgumentError(`fitMul: maxShift must be an integer in [0, 63], got ${maxShift}`);
  const sign = r < 0 ? -1 : 1;
  const a = Math.abs(r);
  const limit = 2 ** bits - 1;
  if (rhu(a) > limit) return { m: sign * limit, n: 0, saturated: true };
  // rhu(a * 2^n) grows with n: the answer is the largest fitting n, found from the top
  let n = maxShift;
  if (a > 0) {
    const guess = Math.floor(Math.log2(limit / a));
    if (guess < n) n = Math.max(0, guess + 1);
  }
  while (n > 0 && rhu(a * 2 ** n) > limit) n--;
  return { m: sign * rhu(a * 2 ** n), n, saturated: false };
}
