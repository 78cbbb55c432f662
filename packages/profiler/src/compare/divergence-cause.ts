// Why a node's quantized output departs from its reference: read from the reference values and the
// quantization the node applies. The rules are ordered from the most specific evidence to the least.
import type { NodeQuant } from '../values/node-values.js';

export const DIVERGENCE_CAUSES = ['saturation', 'scale-too-coarse', 'int16-needed', 'table-error', 'rounding'] as const;
export type DivergenceCause = (typeof DIVERGENCE_CAUSES)[number];

export interface CauseEvidence {
  /** Share of reference values beyond the range the scale can represent (more than half a step outside). */
  readonly clipped: number;
  /** Share of reference values within half a step of either range limit (saturated already, or about to be). */
  readonly atLimits: number;
  /** Distinct integer levels the reference values quantize to. */
  readonly levels: number;
  /** Largest |value| over the 99.9th percentile of |value| (large: an outlier stretches the range). */
  readonly outlierRatio: number;
  /** Largest |value| over the largest value the scale represents (small: the scale is larger than the data needs). */
  readonly usedRange: number;
  /** SQNR in dB of quantizing the reference values with this scale alone. */
  readonly quantSqnr: number | null;
}

export interface Diagnosis {
  readonly cause: DivergenceCause;
  /** What the evidence says and what to try, in one sentence. */
  readonly advice: string;
  readonly evidence: CauseEvidence | null;
}

/** Ops that compute by table lookup or a composite approximation (the tables' error, not the scale's). */
const TABLE_OPS = /Table|Softmax|LayerNorm|Sigmoid|Tanh|Exp|Log|Sqrt|Reciprocal|GELU|SiLU|Div|Pow/i;

const CLIPPED_LIMIT = 0.01;
/** A quarter of the values at the limits: more than any calibrated scale leaves there. */
const AT_LIMITS_LIMIT = 0.25;
const FEW_LEVELS = 16;
const OUTLIER_LIMIT = 8;
/** Values that fill less than a quarter of the range waste two bits or more of the grid. */
const USED_RANGE_FLOOR = 0.25;
/** An int8 grid over a well-spread distribution gives about 30–40 dB; below this it is not enough. */
const INT8_SQNR_FLOOR = 25;

export function causeEvidence(values: Float32Array, quant: NodeQuant): CauseEvidence {
  const s = quant.scale.length === 1 ? quant.scale[0]! : Math.max(...quant.scale);
  const lo = quant.quantMin * s - s / 2;
  const hi = quant.quantMax * s + s / 2;
  let clipped = 0;
  let atLimits = 0;
  let signal = 0;
  let noise = 0;
  const levels = new Set<number>();
  const abs = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v < lo || v > hi) clipped++;
    if (v <= lo + s || v >= hi - s) atLimits++;
    const q = Math.min(quant.quantMax, Math.max(quant.quantMin, Math.round(v / s)));
    if (levels.size <= 65536) levels.add(q);
    signal += v * v;
    noise += (v - q * s) ** 2;
    abs[i] = Math.abs(v);
  }
  abs.sort();
  const p999 = abs[Math.min(abs.length - 1, Math.floor(abs.length * 0.999))] ?? 0;
  const max = abs[abs.length - 1] ?? 0;
  return {
    clipped: values.length ? clipped / values.length : 0,
    atLimits: values.length ? atLimits / values.length : 0,
    levels: levels.size,
    outlierRatio: p999 > 0 ? max / p999 : 1,
    usedRange: max / (Math.max(Math.abs(quant.quantMin), quant.quantMax) * s),
    quantSqnr: noise === 0 ? null : signal === 0 ? null : 10 * Math.log10(signal / noise),
  };
}

/**
 * The likely cause of a node's divergence. `reference` is the earlier stage's value at the node (float for
 * float → fake quant), `quant` the later stage's quantization of it, `type` what the node runs.
 */
export function diagnose(reference: Float32Array, quant: NodeQuant | null, type: string, hasInt16: boolean): Diagnosis {
  const table = TABLE_OPS.test(type);
  if (!quant || quant.dtype === 'qbool') {
    return table
      ? {
          cause: 'table-error',
          advice: `${type} is computed by a table or approximation; compare it alone (same-input mode)`,
          evidence: null,
        }
      : { cause: 'rounding', advice: 'a float output differs by accumulated rounding', evidence: null };
  }
  const e = causeEvidence(reference, quant);
  const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
  if (e.clipped > CLIPPED_LIMIT) {
    return {
      cause: 'saturation',
      advice: `${pct(e.clipped)} of the values lie outside what the scale can represent: the scale is too small (a fixed scale, or calibration data that missed the range); calibrate it or raise it`,
      evidence: e,
    };
  }
  if (e.atLimits > AT_LIMITS_LIMIT) {
    return {
      cause: 'saturation',
      advice: `${pct(e.atLimits)} of the values sit at the limits of the range: the output is saturated already (a scale too small upstream), so the smallest difference swings it across the range; fix the scale first`,
      evidence: e,
    };
  }
  if (e.usedRange < USED_RANGE_FLOOR && e.levels < 4 * FEW_LEVELS) {
    return {
      cause: 'scale-too-coarse',
      advice: `the values fill ${pct(e.usedRange)} of the range the scale covers (${e.levels} integer levels): the scale is too large for this data; calibrate it on representative data`,
      evidence: e,
    };
  }
  if (e.levels < FEW_LEVELS && e.outlierRatio > OUTLIER_LIMIT) {
    return {
      cause: 'scale-too-coarse',
      advice: `most values use only ${e.levels} integer levels because an outlier ${e.outlierRatio.toFixed(0)}× the 99.9th percentile sets the range; use a percentile / mse / kl observer or clip the outlier`,
      evidence: e,
    };
  }
  if (table) {
    return {
      cause: 'table-error',
      advice: `${type} is computed by a table or approximation whose error exceeds the output step`,
      evidence: e,
    };
  }
  if (quant.dtype === 'qint8' && e.quantSqnr !== null && e.quantSqnr < INT8_SQNR_FLOOR) {
    return {
      cause: hasInt16 ? 'int16-needed' : 'scale-too-coarse',
      advice: hasInt16
        ? `int8 keeps only ${e.quantSqnr.toFixed(1)} dB of this output (${e.levels} levels, no outlier to clip): give it int16 activations`
        : `int8 keeps only ${e.quantSqnr.toFixed(1)} dB of this output and the march has no int16: keep it on the CPU (hybrid) or change the layer`,
      evidence: e,
    };
  }
  return {
    cause: 'rounding',
    advice: 'the scale fits the values; the difference is rounding in the op (compare it alone in the same-input mode)',
    evidence: e,
  };
}
