import {
  createMarchConverter,
  createMarchSupport,
  DEFAULT_CONVERT_RULES,
  planRequantizeWide,
  planAddShiftLarger,
  scalarOperandWide,
  quantizeBiasInt32,
  type AddPlanner,
  type MarchNumerics,
  type ShiftLimit,
} from '@qtk/fixed-point';
import { marches, type MarchBackendV1 } from '@qtk/spec';
import { BAYES_CAPABILITIES } from './capabilities.js';

/** bayes's add shifts the larger-scale operand left by at most 23 bits (qint8) or 15 (qint16). */
export const bayesAddShiftLimit: ShiftLimit = (largerScaleDtype) => (largerScaleDtype === 'qint8' ? 23 : 15);

/**
 * bayes's integer rules: requantize without an intermediate saturation, an add that shifts the
 * larger-scale operand and multiplies the other, scalars at full int16 range, an int32 bias.
 */
export const BAYES_NUMERICS: MarchNumerics = Object.freeze({
  requantize: planRequantizeWide,
  planAdd: ((a, b, sub) => planAddShiftLarger(a, b, sub, bayesAddShiftLimit)) satisfies AddPlanner,
  scalarOperand: scalarOperandWide,
  quantizeBias: quantizeBiasInt32,
});

const ENV = { march: 'bayes', table: BAYES_CAPABILITIES, numerics: BAYES_NUMERICS };

/** The bayes march backend (RDK Ultra). Importing the package registers it under 'bayes'. */
export const bayes: MarchBackendV1 = Object.freeze({
  apiVersion: 1,
  id: 'bayes',
  description: 'RDK Ultra BPU: int8 and int16 activations, int8 per-channel weights, segment tables',
  capabilities: BAYES_CAPABILITIES,
  hooks: Object.freeze({
    convertNode: createMarchConverter(ENV, DEFAULT_CONVERT_RULES),
    supportsNode: createMarchSupport(ENV, DEFAULT_CONVERT_RULES),
  }),
});

/** Registers bayes in @qtk/spec's march registry (idempotent). */
export function registerBayes(): MarchBackendV1 {
  marches.register(bayes);
  return bayes;
}

registerBayes();
