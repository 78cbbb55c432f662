// LayerNorm as a composite (march-semantics.md §1), every intermediate int16 at the scale
// its QAT fake-quant observed, over the D trailing elements of each row:
//   m = Σx / D                       (requantized s_x/D → s_m)
//   c = x − m                        (the march's sub plan, requantized → s_c)
//   q = c²                           (requantized s_c² → s_q)
//   v = Σq / D                       (requantized s_q/D → s_v)
//   r = rsqrt(v + eps) table         (int16 segment table, eps folded into the tabulated function)
//   n = c·r                          (requantized s_c·s_r → s_n)
//   y = n·w_q[i] + b_q[i]            (weight int8 per feature, int32 bias; requantized per feature → s_out)
// Without an affine, y = n requantized s_n → s_out.
import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import type { AddPlan } from '../elementwise.js';
import { QTensor, STORAGE_DTYPE } from '../qtensor.js';
import { requantizeValue, type RequantizePlan } from '../requantize.js';
import { applyTablePlan, requirePlannedInput, type TablePlan } from './fixed-table-op.js';

/** `acc = x·mx + m·mm` at `sAcc`: x − m by the march's add/sub plan (march-semantics.md §1 "Elementwise"). */
export interface SubPlan {
  readonly mx: number;
  readonly mm: number;
  readonly sAcc: number;
}

/**
 * The x − m step from a march's plan of `x - m` (an AddPlan), or null when the plan needs more than
 * one multiplier per operand: a right shift, an operand negated with saturation, or an int32-saturated
 * accumulator.
 */
export function subPlanOf(plan: AddPlan): SubPlan | null {
  const { a, b } = plan;
  if (plan.saturate32 || a.negate || b.negate || a.shift < 0 || b.shift < 0) return null;
  return { mx: a.m * 2 ** a.shift, mm: b.m * 2 ** b.shift, sAcc: plan.sAcc };
}

export interface FixedLayerNormConfig {
  /** The number of trailing elements normalised together. */
  readonly features: number;
  readonly inScale: number;
  readonly inDtype: QuantDType;
  readonly mean: RequantizePlan;
  readonly sub: SubPlan;
  readonly subOut: RequantizePlan;
  readonly square: RequantizePlan;
  readonly variance: RequantizePlan;
  readonly rsqrt: TablePlan;
  readonly normalized: RequantizePlan;
  /** Per feature: int8 weight, int32 bias, requantize channel; null without an affine. */
  readonly affine: { readonly weight: Int8Array; readonly bias: Int32Array; readonly out: RequantizePlan } | null;
  /** s_n → s_out when there is no affine. */
  readonly out: RequantizePlan | null;
  readonly outScale: number;
  readonly outDtype: QuantDType;
}

export class FixedLayerNorm extends Module {
  static override readonly takesQuantizedValues = true;

  readonly config: FixedLayerNormConfig;

  constructor(config: FixedLayerNormConfig) {
    super();
    this.config = { ...config, inScale: Math.fround(config.inScale), outScale: Math.fround(config.outScale) };
  }

  forward(x: QTensor): QTensor {
    const c = this.config;
    requirePlannedInput('layer_norm', x, c.inDtype, c.inScale);
    const v = x.ints();
    const D = c.features;
    if (v.length % D !== 0)
      throw new InvalidArgumentError(`layer_norm (fixed point): ${v.length} values do not split into rows of ${D}`);
    const storage = STORAGE_DTYPE[c.outDtype];
    const out = storage === 'int8' ? new Int8Array(v.length) : new Int16Array(v.length);
    const cq = new Int32Array(D);
    const { mx, mm } = c.sub;
    for (let base = 0; base < v.length; base += D) {
      let s = 0;
      for (let k = 0; k < D; k++) s += v[base + k]!;
      const m = requantizeValue(s, c.mean);
      let sq = 0;
      for (let k = 0; k < D; k++) {
        const ck = requantizeValue(v[base + k]! * mx + m * mm, c.subOut);
        cq[k] = ck;
        sq += requantizeValue(ck * ck, c.square);
      }
      const r = applyTablePlan(c.rsqrt, requantizeValue(sq, c.variance));
      for (let k = 0; k < D; k++) {
        const n = requantizeValue(cq[k]! * r, c.normalized);
        out[base + k] = c.affine
          ? requantizeValue(n * c.affine.weight[k]! + c.affine.bias[k]!, c.affine.out, k)
          : requantizeValue(n, c.out!);
      }
    }
    return new QTensor(new Tensor({ data: out, shape: [...x.shape], dtype: storage }), [c.outScale], c.outDtype);
  }

  override extraRepr(): string {
    return `features=${this.config.features}, ${this.config.inDtype} → int16 intermediates → ${this.config.outDtype}${this.config.affine ? ', affine' : ''}`;
  }
}
