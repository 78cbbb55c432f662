import type { OP_IMPLS, QuantDType } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';

export type OpImpl = (typeof OP_IMPLS)[number];

/** A bound in output steps of the fixed-point model against the fake-quant model, per activation dtype. */
export type StepBound = Partial<Record<QuantDType, number>>;

/**
 * Bounds by how the march computes the op (march-semantics.md §1), in output steps, measured on the output
 * grid (both models' outputs read back as integers). An op whose table entry has no `impl` is held to
 * `integer`. Sources (docs/march-numerics.md and the conversion tests in packages/core):
 * - integer: one rounding of the requantize, 1 step at int8 and int16 (elementwise, pool, resize, conv);
 * - passthrough: the same integers, 0 steps (value-preserving ops move or select integers);
 * - table: a 256-entry int8 table, 1 step;
 * - segment_table: int8 1 step; int16 3 steps for the smooth functions ("Tables in conversion");
 * - composite: softmax's bounds, the widest of the composites (1 / 6 steps, march-numerics.md's composites section).
 */
export const IMPL_STEP_BOUNDS: Readonly<Record<OpImpl, StepBound>> = {
  integer: { qint8: 1, qint16: 1 },
  passthrough: { qint8: 0, qint16: 0 },
  table: { qint8: 1, qint16: 1 },
  segment_table: { qint8: 1, qint16: 3 },
  composite: { qint8: 1, qint16: 6 },
};

/**
 * The documented cost of a kink inside an int16 segment (docs/march-numerics.md, "Error bounds"):
 * `|Δslope|·h/4` with `h` = segment width / 63. Even dividing points split at most the 65536 int16 inputs
 * into six table segments, so `h <= amaxIn/189` in input units; in output steps of `amaxOut/32767.5`, plus
 * one step for the fake-quant's own rounding.
 */
export function kinkStepBound(deltaSlope: number, amaxIn: number, amaxOut: number): number {
  const h = amaxIn / 189;
  return Math.ceil((deltaSlope * h) / 4 / (amaxOut / 32767.5)) + 1;
}

/**
 * Per op and impl, where the documented bound differs from the impl's, for the probe models of probes.ts
 * (their parameters and input ranges):
 * - int16 segment tables of a pole (reciprocal: 3 measured, 4 asserted in convert-nonlinear.test.ts);
 * - int16 segment tables of kinked functions: the kink bound above, where the dividing points fall by the
 *   chance of the calibrated range (ELU(0.5) and LeakyReLU(0.1) on ±8, PReLU with slopes −0.5…1.5 on ±6 with
 *   outputs to ±9, Hardswish on ±6 and Hardsigmoid on ±4 with kinks at ±3);
 * - bilinear Resize at int16: its interpolation weights have 8 fractional bits (march-numerics.md, "Resize"),
 *   so each axis's weight is off by up to 1/512 of the difference of two taps, up to 2^16 int16 steps: up to
 *   128 steps per axis, 256 for two, plus one for rounding;
 * - the composites' own rows (march-numerics.md's composites section: softmax 1 / 6, layernorm 1 / 4, div 1 / 10 asserted).
 */
export const OP_STEP_BOUNDS: Readonly<Record<string, Partial<Record<OpImpl, StepBound>>>> = {
  Reciprocal: { segment_table: { qint16: 4 } },
  Elu: { segment_table: { qint16: kinkStepBound(0.5, 8, 8) } },
  LeakyRelu: { segment_table: { qint16: kinkStepBound(0.9, 8, 8) } },
  PRelu: { segment_table: { qint16: kinkStepBound(1.5, 6, 9) } },
  HardSwish: { segment_table: { qint16: kinkStepBound(0.5, 6, 6) } },
  HardSigmoid: { segment_table: { qint16: kinkStepBound(1 / 6, 4, 1) } },
  Resize: { integer: { qint16: 257 } },
  Softmax: { composite: { qint8: 1, qint16: 6 } },
  LayerNormalization: { composite: { qint8: 1, qint16: 4 } },
  Div: { composite: { qint8: 1, qint16: 10 } },
};

/**
 * The bound for `op` computed as `impl` at `dtype`: the user's override, else the op's documented row, else
 * the impl's. Throws when none is known (a dtype the tables do not cover).
 */
export function stepBound(
  op: string,
  impl: OpImpl | undefined,
  dtype: QuantDType,
  overrides: Readonly<Record<string, StepBound>> = {},
): number {
  const how = impl ?? 'integer';
  const bound = overrides[op]?.[dtype] ?? OP_STEP_BOUNDS[op]?.[how]?.[dtype] ?? IMPL_STEP_BOUNDS[how][dtype];
  if (bound === undefined) {
    throw new InvalidArgumentError(
      `@qtk/testkit has no step bound for op '${op}' (${how}) at ${dtype}; give one in the suite's tolerances option`,
    );
  }
  return bound;
}
