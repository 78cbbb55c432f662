import type { QTensor } from '../qtensor.js';
import { PlannedModule } from './planned-module.js';
import { type RequantizedBinaryConfig, requantizedBinary } from './binary-operands.js';

/** `requant` requantizes from s_acc = s_x·s_y. */
export type FixedMulConfig = RequantizedBinaryConfig;

/** mul in fixed point (march-semantics.md §1): `acc = x·y` exactly, requantized from `s_x·s_y`. Broadcasts. */
export class FixedMul extends PlannedModule<FixedMulConfig> {
  forward(x: QTensor | number, y: QTensor | number): QTensor {
    return requantizedBinary('mul', x, y, this.config, (a, b) => a * b);
  }

  override extraRepr(): string {
    return `mul, out=${this.config.outDtype}`;
  }
}
