// A measurement over precision variants of one model: the all-int8 baseline built once, its
// quantizable nodes, a scorer against the float model, and variants built and scored on demand.
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError, QtkError } from '@qtk/tensor';
import { type EvalSet, outputScorer, type ScoreMetric } from './output-score.js';
import {
  buildVariant,
  calibratedFakeQuants,
  type PrecisionChange,
  precisionSignature,
  type QuantizableNode,
  quantizableNodes,
  type VariantSetup,
  variantConfig,
} from './precision-variants.js';

/** `a − b` when both are numbers (sqnr of identical outputs is null). */
export const gainOf = (variant: number | null, base: number | null): number | null =>
  variant === null || base === null ? null : variant - base;

/** Shared state of a measurement over variants: the baseline, its nodes, a scorer and a counter. */
export interface VariantLab {
  readonly float: Module;
  readonly setup: VariantSetup;
  readonly metric: ScoreMetric;
  readonly baseline: GraphModule;
  readonly nodes: readonly QuantizableNode[];
  readonly floatScore: number | null;
  readonly int8Score: number | null;
  readonly baselineSignature: string;
  /** Builds and scores a variant; null when it changes nothing or the march rejects it. */
  measure(change: PrecisionChange): { score: number | null; prepared: GraphModule } | null;
  variants: number;
  buildSeconds: number;
  scoreSeconds: number;
}

export function openLab(
  float: Module,
  setup: VariantSetup,
  evalSet: EvalSet | undefined,
  metric?: ScoreMetric,
): VariantLab {
  if (!setup.calib || setup.calib.length === 0)
    throw new InvalidArgumentError('sensitivity: calib must hold at least one calibration batch');
  const set: EvalSet = evalSet ?? { inputs: setup.calib };
  const m: ScoreMetric = metric ?? (set.labels ? 'accuracy' : 'cosine');
  const scorer = outputScorer(float, set, m);
  const timed = <T>(key: 'buildSeconds' | 'scoreSeconds', run: () => T): T => {
    const t0 = performance.now();
    try {
      return run();
    } finally {
      lab[key] += (performance.now() - t0) / 1000;
    }
  };
  const t0 = performance.now();
  const base = buildVariant(float, setup, variantConfig(setup, null, [], {}));
  const baseBuild = (performance.now() - t0) / 1000;
  const reuse = setup.reuseCalibration === false ? undefined : calibratedFakeQuants(base.prepared);
  const t1 = performance.now();
  const int8Score = scorer.score(base.measured);
  const lab: VariantLab = {
    float,
    setup,
    metric: m,
    baseline: base.prepared,
    nodes: quantizableNodes(base.prepared),
    floatScore: scorer.reference,
    int8Score,
    baselineSignature: precisionSignature(base.prepared),
    variants: 1,
    buildSeconds: baseBuild,
    scoreSeconds: (performance.now() - t1) / 1000,
    measure(change) {
      let built: ReturnType<typeof buildVariant>;
      try {
        const config = variantConfig(setup, lab.baseline, lab.nodes, change);
        lab.variants++;
        built = timed('buildSeconds', () => buildVariant(float, setup, config, reuse));
      } catch (e) {
        if (e instanceof QtkError) return null; // e.g. the march has no int16 form of this op
        throw e;
      }
      if (precisionSignature(built.prepared) === lab.baselineSignature && change.alone === undefined) return null;
      return { score: timed('scoreSeconds', () => scorer.score(built.measured)), prepared: built.prepared };
    },
  };
  return lab;
}
