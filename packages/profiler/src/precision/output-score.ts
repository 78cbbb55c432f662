// How close a model's final output stays to the float model's on a set of batches: cosine or SQNR of
// all outputs together, or top-1 accuracy when labels are given.
import { type Module, top1 } from '@qtk/nn';
import { InvalidArgumentError, noGrad, type Tensor } from '@qtk/tensor';
import { similarityOf } from '../compare/metrics.js';
import { realValues } from '../values/node-values.js';

export const SCORE_METRICS = ['cosine', 'sqnr', 'accuracy'] as const;
/** cosine and sqnr compare with the float model's output; accuracy compares the top-1 class with labels. */
export type ScoreMetric = (typeof SCORE_METRICS)[number];

/** Batches to measure on; labels (one array per batch, class indices) enable the accuracy metric. */
export interface EvalSet {
  readonly inputs: readonly (Tensor | readonly Tensor[])[];
  readonly labels?: readonly ArrayLike<number>[];
}

const callWith = (model: Module, batch: Tensor | readonly Tensor[]): unknown =>
  noGrad(() =>
    (model as unknown as { call(...a: unknown[]): unknown }).call(...(Array.isArray(batch) ? batch : [batch])),
  );

function outputValues(out: unknown, where: string): { values: Float32Array; shape: number[] } {
  const first = Array.isArray(out) ? out[0] : out;
  const real = realValues(first);
  if (!real)
    throw new InvalidArgumentError(
      `${where}: the model's output is not a tensor; score a model whose (first) output is one`,
    );
  return real;
}

/** The model's (first) output on every batch. */
export function outputsOf(model: Module, set: EvalSet, where: string): { values: Float32Array; shape: number[] }[] {
  const wasTraining = model.training;
  model.eval();
  try {
    return set.inputs.map((b) => outputValues(callWith(model, b), where));
  } finally {
    if (wasTraining) model.train();
  }
}

function concat(parts: readonly { values: Float32Array }[]): Float32Array {
  const out = new Float32Array(parts.reduce((s, p) => s + p.values.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p.values, o);
    o += p.values.length;
  }
  return out;
}

function accuracyOf(
  outputs: readonly { values: Float32Array; shape: number[] }[],
  labels: readonly ArrayLike<number>[],
): number {
  let correct = 0;
  let total = 0;
  outputs.forEach((o, b) => {
    const classes = o.shape[o.shape.length - 1]!;
    const rows = o.values.length / classes;
    const lab = labels[b]!;
    if (lab.length !== rows)
      throw new InvalidArgumentError(
        `accuracy: batch ${b} has ${rows} outputs but ${lab.length} labels; give one label per output row`,
      );
    const predicted = top1(o.values, rows);
    for (let r = 0; r < rows; r++) if (predicted[r] === lab[r]) correct++;
    total += rows;
  });
  return total ? correct / total : 0;
}

/**
 * A scorer: `score(model)` runs the model on `set` and returns the metric against the float model's
 * outputs (computed once) or the labels. Higher is better for all three; sqnr is null when the
 * outputs are identical (infinite).
 */
export function outputScorer(
  float: Module,
  set: EvalSet,
  metric: ScoreMetric,
): { reference: number | null; score(model: Module): number | null } {
  if (!SCORE_METRICS.includes(metric))
    throw new InvalidArgumentError(`output score: unknown metric '${metric}'; use one of ${SCORE_METRICS.join(', ')}`);
  if (metric === 'accuracy' && (!set.labels || set.labels.length !== set.inputs.length))
    throw new InvalidArgumentError('output score: the accuracy metric needs labels, one array per eval batch');
  const floatOut = outputsOf(float, set, 'output score (float model)');
  const floatAll = concat(floatOut);
  const score = (model: Module): number | null => {
    const out = outputsOf(model, set, 'output score');
    if (metric === 'accuracy') return accuracyOf(out, set.labels!);
    const s = similarityOf(floatAll, concat(out));
    if (metric === 'cosine') return s.cosine;
    return Number.isFinite(s.sqnr) ? s.sqnr : null;
  };
  const reference = metric === 'accuracy' ? accuracyOf(floatOut, set.labels!) : metric === 'cosine' ? 1 : null;
  return { reference, score };
}
