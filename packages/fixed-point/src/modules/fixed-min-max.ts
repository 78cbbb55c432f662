import { requantizeValue, type RequantizePlan } from '../requantize.js';
import type { QTensor } from '../qtensor.js';
import { PlannedModule } from './planned-module.js';
import { type BinaryOutputConfig, mapBinary } from './binary-operands.js';

/** A scalar slot holds its value already on the output grid (scale = outScale). */
export interface FixedMinMaxConfig extends BinaryOutputConfig {
  readonly kind: 'maximum' | 'minimum';
  /** Each operand's requantize to the output scale and dtype (a copy where equal). */
  readonly requants: readonly [RequantizePlan, RequantizePlan];
}

/**
 * maximum / minimum [choice]: both operands requantized to the output scale and dtype, then
 * the integer max / min (value preserving on the common grid). Broadcasts.
 */
export class FixedMinMax extends PlannedModule<FixedMinMaxConfig> {
  forward(x: QTensor | number, y: QTensor | number): QTensor {
    const c = this.config;
    const [pa, pb] = c.requants;
    const max = c.kind === 'maximum';
    return mapBinary(c.kind, x, y, c.scalars, c.outDtype, c.outScale, (a, b) => {
      const u = requantizeValue(a, pa);
      const v = requantizeValue(b, pb);
      return max ? (u >= v ? u : v) : u <= v ? u : v;
    });
  }

  override extraRepr(): string {
    return `${this.config.kind}, out=${this.config.outDtype}`;
  }
}
