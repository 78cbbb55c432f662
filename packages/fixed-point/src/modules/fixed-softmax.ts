// Softmax as a composite (march-semantics.md §1), every intermediate int16 at the scale
// its QAT fake-quant observed: d = x − max(x) (requantized s_x → s_d), e = exp table(d), S = Σe
// (requantized s_e → s_s), r = reciprocal table(S), y = e·r (requantized s_e·s_r → s_out).
import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { QTensor, STORAGE_DTYPE } from '../qtensor.js';
import { requantizeValue, type RequantizePlan } from '../requantize.js';
import { applyTablePlan, requirePlannedInput, type TablePlan } from './fixed-table-op.js';

export interface FixedSoftmaxConfig {
  readonly dim: number;
  readonly inScale: number;
  readonly inDtype: QuantDType;
  /** x − max(x) at s_x → d at s_d (qint16). */
  readonly sub: RequantizePlan;
  /** d → e = exp(d) at s_e (qint16). */
  readonly exp: TablePlan;
  /** Σe at s_e → S at s_s (qint16). */
  readonly sum: RequantizePlan;
  /** S → r = 1/S at s_r (qint16). */
  readonly reciprocal: TablePlan;
  /** e·r at s_e·s_r → y at s_out. */
  readonly mul: RequantizePlan;
  readonly outScale: number;
  readonly outDtype: QuantDType;
}

/** Splits a shape around `axis`: [outer, size, inner]. */
export function aroundAxis(
  shape: readonly number[],
  axis: number,
  op: string,
): { outer: number; size: number; inner: number } {
  const a = axis < 0 ? axis + shape.length : axis;
  if (a < 0 || a >= shape.length)
    throw new InvalidArgumentError(`${op}: axis ${axis} is out of range for shape [${shape}]`);
  let outer = 1;
  let inner = 1;
  for (let d = 0; d < a; d++) outer *= shape[d]!;
  for (let d = a + 1; d < shape.length; d++) inner *= shape[d]!;
  return { outer, size: shape[a]!, inner };
}

export class FixedSoftmax extends Module {
  static override readonly takesQuantizedValues = true;

  readonly config: FixedSoftmaxConfig;

  constructor(config: FixedSoftmaxConfig) {
    super();
    this.config = { ...config, inScale: Math.fround(config.inScale), outScale: Math.fround(config.outScale) };
  }

  forward(x: QTensor): QTensor {
    const c = this.config;
    requirePlannedInput('softmax', x, c.inDtype, c.inScale);
    const v = x.ints();
    const { outer, size, inner } = aroundAxis(x.shape, c.dim, 'softmax (fixed point)');
    const storage = STORAGE_DTYPE[c.outDtype];
    const out = storage === 'int8' ? new Int8Array(v.length) : new Int16Array(v.length);
    const e = new Int32Array(size);
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        const base = o * size * inner + i;
        let max = -Infinity;
        for (let k = 0; k < size; k++) max = Math.max(max, v[base + k * inner]!);
        let s = 0;
        for (let k = 0; k < size; k++) {
          const d = requantizeValue(v[base + k * inner]! - max, c.sub);
          e[k] = applyTablePlan(c.exp, d);
          s += e[k]!;
        }
        const r = applyTablePlan(c.reciprocal, requantizeValue(s, c.sum));
        for (let k = 0; k < size; k++) out[base + k * inner] = requantizeValue(e[k]! * r, c.mul);
      }
    }
    return new QTensor(new Tensor({ data: out, shape: [...x.shape], dtype: storage }), [c.outScale], c.outDtype);
  }

  override extraRepr(): string {
    return `dim=${this.config.dim}, ${this.config.inDtype} → int16 intermediates → ${this.config.outDtype}`;
  }
}
