// Per-node sensitivity: how much the model's final output degrades when only one node is quantized,
// and how much of the all-int8 model's loss comes back when only that node is int16 or float (CPU).
import type { Module } from '@qtk/nn';
import { closeNames, InvalidArgumentError } from '@qtk/tensor';
import type { EvalSet, ScoreMetric } from './output-score.js';
import { int16Marches, marchHasInt16, type VariantSetup } from './precision-variants.js';
import { gainOf, openLab } from './variant-lab.js';

export const SENSITIVITY_MODES = ['quantizedAlone', 'int16', 'float'] as const;
export type SensitivityMode = (typeof SENSITIVITY_MODES)[number];

export interface SensitivityOptions extends VariantSetup {
  /** Batches to measure on (default: the calibration batches, without labels). */
  readonly eval?: EvalSet;
  /** Default: 'accuracy' when `eval` has labels, else 'cosine'. */
  readonly metric?: ScoreMetric;
  /** What to measure per node (default: all three; 'int16' only on a march with int16 activations). */
  readonly modes?: readonly SensitivityMode[];
  /** Measure only these nodes (module paths of the prepared model); default every quantizable node. */
  readonly nodes?: readonly string[];
}

export interface NodeSensitivity {
  /** Module path: the key for qconfig dict and hybridDict `moduleName`. */
  readonly name: string;
  readonly type: string;
  /** Position among the quantizable nodes in execution order. */
  readonly index: number;
  /**
   * Larger = more sensitive: the loss when the node alone is quantized (1 − cosine, float accuracy −
   * accuracy, or for sqnr the noise-to-signal power ratio 10^(−sqnr/10)); without 'quantizedAlone',
   * the larger of the two gains.
   */
  readonly sensitivity: number;
  /** The score with only this node quantized (null: not measured, or sqnr of identical outputs). */
  readonly quantizedAlone: number | null;
  /** Score with this node int16 (all else int8) minus the all-int8 score; null when not measured or not applicable. */
  readonly int16Gain: number | null;
  /** Score with this node float / on the CPU (all else int8) minus the all-int8 score. */
  readonly floatGain: number | null;
}

export interface SensitivityResult {
  readonly version: 1;
  readonly march: string;
  readonly metric: ScoreMetric;
  readonly stage: 'fake' | 'fixed';
  /** The float model's score (1 for cosine, its accuracy, null for sqnr) and the all-int8 model's. */
  readonly scores: { readonly float: number | null; readonly int8: number | null };
  /** Most sensitive first. */
  readonly nodes: readonly NodeSensitivity[];
  /**
   * Models prepared and calibrated, the wall time of the whole measurement, and of it the time spent
   * building variants (prepare, calibrate, convert) and scoring them (running the eval batches).
   */
  readonly cost: {
    readonly variants: number;
    readonly seconds: number;
    readonly secondsPerVariant: number;
    readonly buildSeconds: number;
    readonly scoreSeconds: number;
  };
}

/** The loss a score stands for against the float model (larger = worse). */
export function lossOf(metric: ScoreMetric, floatScore: number | null, score: number | null): number {
  if (metric === 'sqnr') return score === null ? 0 : 10 ** (-score / 10);
  return (floatScore ?? 1) - (score ?? 0);
}

/**
 * For every quantizable node of `floatModel` on `march`: the score when only that node is quantized,
 * and the gain over the all-int8 model when only that node is int16 or float (on the CPU in hybrid
 * mode). Every variant is prepared from the float model and calibrated on `calib`: about one
 * calibration and one evaluation per node and mode. JSON-serialisable, most sensitive node first.
 */
export function sensitivity(floatModel: Module, options: SensitivityOptions): SensitivityResult {
  const t0 = performance.now();
  const modes = options.modes ?? SENSITIVITY_MODES.filter((m) => m !== 'int16' || marchHasInt16(options.march));
  for (const m of modes)
    if (!SENSITIVITY_MODES.includes(m))
      throw new InvalidArgumentError(`sensitivity: unknown mode '${m}'; use ${SENSITIVITY_MODES.join(', ')}`);
  if (modes.includes('int16') && !marchHasInt16(options.march))
    throw new InvalidArgumentError(
      `sensitivity: march '${options.march}' has no int16 activations; drop the 'int16' mode or use a march with them (${int16Marches()})`,
    );
  floatModel.eval();
  const lab = openLab(floatModel, options, options.eval, options.metric);
  const known = new Set(lab.nodes.map((n) => n.name));
  for (const name of options.nodes ?? [])
    if (!known.has(name))
      throw new InvalidArgumentError(
        `sensitivity: '${name}' is not a quantizable node; use one of ${[...known].join(', ')}${closestText(name, [...known])}`,
      );
  const wanted = options.nodes ? lab.nodes.filter((n) => options.nodes!.includes(n.name)) : lab.nodes;
  const nodes: NodeSensitivity[] = wanted.map((n) => {
    const alone = modes.includes('quantizedAlone') ? lab.measure({ alone: n.name }) : null;
    const int16 = modes.includes('int16') && n.hasActivation ? lab.measure({ int16: [n.name] }) : null;
    const flt = modes.includes('float') ? lab.measure({ float: [n.name] }) : null;
    const int16Gain = int16 ? gainOf(int16.score, lab.int8Score) : null;
    const floatGain = flt ? gainOf(flt.score, lab.int8Score) : null;
    const sens = alone ? lossOf(lab.metric, lab.floatScore, alone.score) : Math.max(int16Gain ?? 0, floatGain ?? 0, 0);
    return {
      name: n.name,
      type: n.type,
      index: lab.nodes.indexOf(n),
      sensitivity: sens,
      quantizedAlone: alone?.score ?? null,
      int16Gain,
      floatGain,
    };
  });
  nodes.sort((a, b) => b.sensitivity - a.sensitivity || a.index - b.index);
  const seconds = (performance.now() - t0) / 1000;
  return {
    version: 1,
    march: options.march,
    metric: lab.metric,
    stage: options.stage ?? 'fake',
    scores: { float: lab.floatScore, int8: lab.int8Score },
    nodes,
    cost: {
      variants: lab.variants,
      seconds,
      secondsPerVariant: seconds / lab.variants,
      buildSeconds: lab.buildSeconds,
      scoreSeconds: lab.scoreSeconds,
    },
  };
}

function closestText(name: string, known: readonly string[]): string {
  const close = closeNames(name, known);
  return close.length ? `; closest: ${close.join(', ')}` : '';
}
