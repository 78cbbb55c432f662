import { addAccumulate, type AddPlan } from '../elementwise.js';
import type { QTensor } from '../qtensor.js';
import { PlannedModule } from './planned-module.js';
import { type RequantizedBinaryConfig, requantizedBinary } from './binary-operands.js';

export interface FixedAddConfig extends RequantizedBinaryConfig {
  readonly sub: boolean;
  readonly plan: AddPlan;
}

/**
 * add / sub in fixed point (march-semantics.md §1): the march's two-term accumulator (shift the
 * larger-scale operand and multiply the other, or conv-with-sumin weights), then requantize. Broadcasts.
 */
export class FixedAdd extends PlannedModule<FixedAddConfig> {
  forward(x: QTensor | number, y: QTensor | number): QTensor {
    const c = this.config;
    return requantizedBinary(c.sub ? 'sub' : 'add', x, y, c, (a, b) => addAccumulate(a, b, c.plan));
  }

  override extraRepr(): string {
    return `${this.config.sub ? 'sub' : 'add'}, s_acc=${this.config.plan.sAcc}, out=${this.config.outDtype}`;
  }
}
