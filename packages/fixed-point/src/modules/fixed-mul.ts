import type { QuantDType } from '@qtk/spec';
import type { ScalarOperand } from '../elementwise.js';
import type { RequantizePlan } from '../requantize.js';
import type { QTensor } from '../qtensor.js';
import { PlannedModule } from './planned-module.js';
import { requantizedBinary } from './binary-operands.js';

export interface FixedMulConfig {
  /** Requantize from s_acc = s_x·s_y. */
  readonly requant: RequantizePlan;
  readonly outScale: number;
  readonly outDtype: QuantDType;
  readonly scalars: readonly [ScalarOperand | null, ScalarOperand | null];
}

/** mul in fixed point (march-semantics.md §1): `acc = x·y` exactly, requantized from `s_x·s_y`. Broadcasts. */
export class FixedMul extends PlannedModule<FixedMulConfig> {
  forward(x: QTensor | number, y: QTensor | number): QTensor {
    return requantizedBinary('mul', x, y, this.config, (a, b) => a * b);
  }

  override extraRepr(): string {
    return `mul, out=${this.config.outDtype}`;
  }
}
