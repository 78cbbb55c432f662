import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import type { ScalarOperand } from '../elementwise.js';
import { requantizeValue, type RequantizePlan } from '../requantize.js';
import type { QTensor } from '../qtensor.js';
import { binaryOperands, intStorage, qtensorOf } from './binary-operands.js';

export interface FixedMinMaxConfig {
  readonly kind: 'maximum' | 'minimum';
  /** Each operand's requantize to the output scale and dtype (a copy where equal). */
  readonly requants: readonly [RequantizePlan, RequantizePlan];
  readonly outScale: number;
  readonly outDtype: QuantDType;
  /** A scalar slot holds its value already on the output grid (scale = outScale). */
  readonly scalars: readonly [ScalarOperand | null, ScalarOperand | null];
}

/**
 * bayes maximum / minimum [choice]: both operands requantized to the output scale and dtype, then
 * the integer max / min (value preserving on the common grid). Broadcasts.
 */
export class FixedMinMax extends Module {
  readonly config: FixedMinMaxConfig;

  constructor(config: FixedMinMaxConfig) {
    super();
    this.config = config;
  }

  forward(x: QTensor | number, y: QTensor | number): QTensor {
    const c = this.config;
    const { a, b, index } = binaryOperands(c.kind, x, y, c.scalars);
    const n = index.ia.length;
    const out = intStorage(c.outDtype, n);
    const [pa, pb] = c.requants;
    const max = c.kind === 'maximum';
    for (let i = 0; i < n; i++) {
      const u = requantizeValue(a[index.ia[i]!]!, pa);
      const v = requantizeValue(b[index.ib[i]!]!, pb);
      out[i] = max ? (u >= v ? u : v) : u <= v ? u : v;
    }
    return qtensorOf(out, index.shape, c.outScale, c.outDtype);
  }

  override extraRepr(): string {
    return `${this.config.kind}, out=${this.config.outDtype}`;
  }
}
