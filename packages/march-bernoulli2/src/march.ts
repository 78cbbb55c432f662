import {
  createMarchConverter,
  createMarchSupport,
  DEFAULT_CONVERT_RULES,
  planRequantizeInt16,
  planAddConvSumin,
  scalarOperandInt8,
  quantizeBiasShifted16,
  type MarchNumerics,
} from '@qtk/fixed-point';
import { marches, type MarchBackendV1 } from '@qtk/spec';
import { BERNOULLI2_CAPABILITIES } from './capabilities.js';
import { TIE_CAT_INPUTS_PASS } from './unify-cat-scale.js';

/** bernoulli2's integer rules: an int16 intermediate in requantize, an add as a conv with a sumin, a shifted 16-bit bias. */
export const BERNOULLI2_NUMERICS: MarchNumerics = Object.freeze({
  requantize: planRequantizeInt16,
  planAdd: planAddConvSumin,
  scalarOperand: (c: number) => scalarOperandInt8(c),
  quantizeBias: quantizeBiasShifted16,
});

const ENV = { march: 'bernoulli2', table: BERNOULLI2_CAPABILITIES, numerics: BERNOULLI2_NUMERICS };

/** The bernoulli2 march backend (RDK X3). Importing the package registers it under 'bernoulli2'. */
export const bernoulli2: MarchBackendV1 = Object.freeze({
  apiVersion: 1,
  id: 'bernoulli2',
  description: 'RDK X3 BPU: int8 activations, int8 per-channel weights, int16 requantize intermediate',
  capabilities: BERNOULLI2_CAPABILITIES,
  hooks: Object.freeze({
    convertNode: createMarchConverter(ENV, DEFAULT_CONVERT_RULES),
    supportsNode: createMarchSupport(ENV, DEFAULT_CONVERT_RULES),
    // prepareQatFx's optimizeGraph: a cat's inputs share its scale (horizon_plugin_pytorch's optimize_graph)
    optimizeGraphPasses: [TIE_CAT_INPUTS_PASS],
  }),
});

/** Registers bernoulli2 in @qtk/spec's march registry (idempotent). */
export function registerBernoulli2(): MarchBackendV1 {
  marches.register(bernoulli2);
  return bernoulli2;
}

registerBernoulli2();
