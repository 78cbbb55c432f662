import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import type { ScalarOperand } from '../elementwise.js';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
import type { QTensor } from '../qtensor.js';
import { binaryOperands, intStorage, qtensorOf } from './binary-operands.js';

export interface FixedMulConfig {
  /** Requantize from s_acc = s_x·s_y. */
  readonly requant: RequantizePlan;
  readonly outScale: number;
  readonly outDtype: QuantDType;
  readonly scalars: readonly [ScalarOperand | null, ScalarOperand | null];
}

/** mul in fixed point (march-semantics.md §1): `acc = x·y` exactly, requantized from `s_x·s_y`. Broadcasts. */
export class FixedMul extends Module {
  readonly config: FixedMulConfig;

  constructor(config: FixedMulConfig) {
    super();
    this.config = config;
  }

  forward(x: QTensor | number, y: QTensor | number): QTensor {
    const c = this.config;
    const { a, b, index } = binaryOperands('mul', x, y, c.scalars);
    const n = index.ia.length;
    const acc = new Float64Array(n);
    for (let i = 0; i < n; i++) acc[i] = a[index.ia[i]!]! * b[index.ib[i]!]!;
    const out = intStorage(c.outDtype, n) as Int8Array | Int16Array | Int32Array;
    requantizeInto(acc, c.requant, 1, out);
    return qtensorOf(out, index.shape, c.outScale, c.outDtype);
  }

  override extraRepr(): string {
    return `mul, out=${this.config.outDtype}`;
  }
}
