import type { QuantDType } from '@qtk/spec';
import { DTypeError, InvalidArgumentError } from '@qtk/tensor';
import { intMatmul } from '../int-matmul.js';
import { QTensor } from '../qtensor.js';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
import { intStorage, qtensorOf } from './binary-operands.js';
import { PlannedModule } from './planned-module.js';

export interface FixedMatMulConfig {
  /** Requantize from s_acc = s_a·s_b. */
  readonly requant: RequantizePlan;
  readonly outScale: number;
  readonly outDtype: QuantDType;
}

function operand(v: unknown, which: string): QTensor {
  if (!(v instanceof QTensor))
    throw new DTypeError(`matmul (fixed point): its ${which} operand must be a quantized tensor, got ${typeof v}`);
  if (v.axis >= 0)
    throw new InvalidArgumentError(
      `matmul (fixed point): its ${which} operand has a per-channel scale; matmul takes per-tensor operands`,
    );
  return v;
}

/**
 * Matrix product of two quantized activations (march-semantics.md §1, "Conv / ... / MatMul"):
 * `acc = Σ a·b` exactly in int32 (saturating), requantized from `s_a·s_b`. Batch dims broadcast.
 */
export class FixedMatMul extends PlannedModule<FixedMatMulConfig> {
  forward(x: unknown, y: unknown): QTensor {
    const acc = intMatmul(operand(x, 'first').data, operand(y, 'second').data);
    const out = intStorage(this.config.outDtype, acc.size) as Int8Array | Int16Array | Int32Array;
    requantizeInto(acc.values(), this.config.requant, 1, out);
    return qtensorOf(out, acc.shape, this.config.outScale, this.config.outDtype);
  }

  override extraRepr(): string {
    return `matmul, out=${this.config.outDtype}`;
  }
}
