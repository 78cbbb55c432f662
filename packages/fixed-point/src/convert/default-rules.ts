import { batchNormRule } from './batch-norm-rule.js';
import { CONV_RULES } from './conv-rules.js';
import { ELEMENTWISE_RULES } from './elementwise-rules.js';
import type { ConvertRule } from './march-converter.js';
import { POOL_RULES } from './pool-rules.js';
import { dequantStubRule, quantStubRule } from './stub-rules.js';
import { VALUE_OP_RULES } from './value-op-rules.js';
import { NONLINEAR_RULES } from './nonlinear-rules.js';

/**
 * Every conversion rule, shared by the marches: a march's capability table decides which of them
 * it accepts. Order matters only where two rules match the same node (the first wins). The
 * composite ops' rules come from the compositeOps registry (createMarchConverter consults it).
 */
export const DEFAULT_CONVERT_RULES: readonly ConvertRule[] = [
  quantStubRule,
  dequantStubRule,
  ...CONV_RULES,
  batchNormRule,
  ...POOL_RULES,
  ...VALUE_OP_RULES,
  ...NONLINEAR_RULES,
  ...ELEMENTWISE_RULES,
];
