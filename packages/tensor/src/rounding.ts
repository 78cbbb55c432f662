import { InvalidArgumentError } from './errors.js';

/** Rounding of `x / s` in quantization: half up (floor(v + 0.5), the marches' bpu_round) or half to even. */
export const ROUNDING_MODES = ['half_up', 'half_even'] as const;
export type RoundingMode = (typeof ROUNDING_MODES)[number];

/** Round half up: floor(v + 0.5) (the marches' bpu_round). */
export function roundHalfUp(v: number): number {
  return Math.floor(v + 0.5);
}

/** Round half to even (banker's rounding); a rounded negative zero comes out as +0. */
export function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** The rounding function of a mode; throws for a name that is not one. */
export function roundingFunction(mode: RoundingMode): (v: number) => number {
  if (mode === 'half_up') return roundHalfUp;
  if (mode === 'half_even') return roundHalfEven;
  throw new InvalidArgumentError(
    `'${String(mode)}' is not a rounding mode; use one of ${ROUNDING_MODES.map((m) => `'${m}'`).join(', ')}`,
  );
}
