// Requantize by a plan and clamp, in fewer float64 passes than int-emit's requantize (the conv family
// runs it on every output): `floor(t·(m·2^-n) + ½)` is `floor((t·m + 2^(n-1))·2^-n)` bit for bit,
// since t·m (< 2^47) times a power of two is exact and so is adding ½ to it (the exact sum,
// (t·m + 2^(n-1))·2^-n, is representable); saturation and a fused ReLU / ReLU6 are one Clip.
import type { RequantizePlan } from '@qtk/fixed-point';
import type { OnnxBuilder } from '../export-builder.js';
import { binary, channelConst, clip, floor, shiftRight } from './int-emit.js';

/**
 * `t = floor(acc·2^-pre)` (clamped to int16 under the int16_intermediate rule), `y = floor(t·(m·2^-n) + ½)`
 * (t·m where n = 0), clamped to [lo, hi] (within the plan's dtype). Float64 exact integers in and out.
 */
export function requantizeClamped(
  b: OnnxBuilder,
  acc: string,
  plan: RequantizePlan,
  axis: number,
  rank: number,
  lo: number,
  hi: number,
  name: string,
): string {
  let t = shiftRight(b, acc, plan.pre, axis, rank, `${name}_pre`);
  if (plan.rule === 'int16_intermediate') t = clip(b, t, -32768, 32767, `${name}_int16`);
  const m = Array.from(plan.m);
  const n = Array.from(plan.n);
  const scaled =
    m.every((v) => v === 1) && n.every((v) => v === 0)
      ? t
      : binary(
          b,
          'Mul',
          t,
          channelConst(
            b,
            m.map((v, c) => v * 2 ** -n[c]!),
            axis,
            rank,
            `${name}_mul`,
          ),
          `${name}_scaled`,
        );
  let y = scaled;
  if (n.some((v) => v !== 0)) {
    const half = channelConst(
      b,
      n.map((v) => (v === 0 ? 0 : 0.5)),
      axis,
      rank,
      `${name}_half`,
    );
    y = floor(b, binary(b, 'Add', scaled, half, `${name}_add`), `${name}_floor`);
  }
  return clip(b, y, lo, hi, name);
}
