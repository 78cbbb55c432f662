import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import { addAccumulate, type AddPlan, type ScalarOperand } from '../elementwise.js';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
import type { QTensor } from '../qtensor.js';
import { binaryOperands, intStorage, qtensorOf } from './binary-operands.js';

export interface FixedAddConfig {
  readonly sub: boolean;
  readonly plan: AddPlan;
  readonly requant: RequantizePlan;
  readonly outScale: number;
  readonly outDtype: QuantDType;
  /** A scalar argument in slot 0 or 1 (add_scalar, sub with a constant), already a quantized operand. */
  readonly scalars: readonly [ScalarOperand | null, ScalarOperand | null];
}

/**
 * add / sub in fixed point (march-semantics.md §1): the march's two-term accumulator (bayes shift
 * and multiplier, or bernoulli2's conv-with-sumin weights), then requantize. Broadcasts.
 */
export class FixedAdd extends Module {
  readonly config: FixedAddConfig;

  constructor(config: FixedAddConfig) {
    super();
    this.config = config;
  }

  forward(x: QTensor | number, y: QTensor | number): QTensor {
    const c = this.config;
    const { a, b, index } = binaryOperands(c.sub ? 'sub' : 'add', x, y, c.scalars);
    const n = index.ia.length;
    const acc = new Float64Array(n);
    for (let i = 0; i < n; i++) acc[i] = addAccumulate(a[index.ia[i]!]!, b[index.ib[i]!]!, c.plan);
    const out = intStorage(c.outDtype, n) as Int8Array | Int16Array | Int32Array;
    requantizeInto(acc, c.requant, 1, out);
    return qtensorOf(out, index.shape, c.outScale, c.outDtype);
  }

  override extraRepr(): string {
    return `${this.config.sub ? 'sub' : 'add'}, ${this.config.plan.rule}, out=${this.config.outDtype}`;
  }
}
