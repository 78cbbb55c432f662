import { addAccumulate, type AddPlan, type ScalarOperand } from '../elementwise.js';
import type { QTensor } from '../qtensor.js';
import { PlannedModule } from './planned-module.js';
import { mapBinary } from './binary-operands.js';

export type CompareKind = 'eq' | 'ne' | 'gt' | 'lt' | 'ge' | 'le';

export interface FixedCompareConfig {
  readonly kind: CompareKind;
  /** The march's `a - b` plan: the comparison is the sign of its accumulator [choice]. */
  readonly plan: AddPlan;
  readonly scalars: readonly [ScalarOperand | null, ScalarOperand | null];
}

const TESTS: Record<CompareKind, (d: number) => boolean> = {
  eq: (d) => d === 0,
  ne: (d) => d !== 0,
  gt: (d) => d > 0,
  lt: (d) => d < 0,
  ge: (d) => d >= 0,
  le: (d) => d <= 0,
};

/**
 * Comparisons: the accumulator of the march's `a - b` plan (march-semantics.md §1; with
 * planAddShiftLarger both operands on the finer grid `s_x / 2^sh`) compared with 0; the output is a 'qbool' QTensor (bool data, scale 1).
 */
export class FixedCompare extends PlannedModule<FixedCompareConfig> {
  forward(x: QTensor | number, y: QTensor | number): QTensor {
    const c = this.config;
    const test = TESTS[c.kind];
    return mapBinary(c.kind, x, y, c.scalars, 'qbool', 1, (a, b) => (test(addAccumulate(a, b, c.plan)) ? 1 : 0));
  }

  override extraRepr(): string {
    return this.config.kind;
  }
}
