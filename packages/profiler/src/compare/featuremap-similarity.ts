// featuremapSimilarity: how far apart two versions of a model are at every node, and how much of that
// each node adds itself (the same-input mode feeds the second model's node the first model's inputs).
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule, Node } from '@qtk/ir';
import { InvalidArgumentError, Tensor, roundingFunction, type RoundingMode } from '@qtk/tensor';
import { alignNodes } from './align-nodes.js';
import {
  HIGHER_IS_BETTER,
  type Similarity,
  type SimilarityMetric,
  SIMILARITY_METRICS,
  similarityOf,
} from './metrics.js';
import { argsOf, type ModelInputs } from '../values/model-inputs.js';
import {
  captureNodeValues,
  type NodeQuant,
  type NodeValue,
  outputFakeQuantOf,
  scaleAt,
} from '../values/node-values.js';
import { nodeTypeOf } from '../values/node-type.js';
import { subAt } from '@qtk/ir';

export interface FeaturemapSimilarityOptions {
  /** The metric tables sort by and `threshold` applies to (default 'cosine'). */
  readonly metric?: SimilarityMetric;
  /** Nodes worse than this are listed in `flagged` (default: cosine 0.99, sqnr 20 dB; none for the others). */
  readonly threshold?: number;
  /** Also run the second model with each node fed the first model's inputs (default true). */
  readonly sameInput?: boolean;
}

/** The JSON form of a Similarity: `sqnr` is null when the two maps are identical (no noise). */
export type SimilarityJson = Omit<Similarity, 'sqnr'> & { readonly sqnr: number | null };

export interface NodeSimilarity extends SimilarityJson {
  /** Position in the second model's execution order among the compared nodes. */
  readonly index: number;
  readonly name: string;
  /** The first model's node it was compared with. */
  readonly firstName: string;
  /** What the second model's node runs. */
  readonly type: string;
  readonly shape: readonly number[];
  /** The second model's output scale (per tensor), or null (float output, or per channel). */
  readonly scale: number | null;
  readonly dtype: string | null;
  /** maxAbsDiff in output steps of the second model (null without a scale). */
  readonly maxDiffSteps: number | null;
  /** Share of elements more than one output step apart (null without a scale). */
  readonly offByMoreThanOneStep: number | null;
  /**
   * Share of the first model's values beyond what the second model's output quantization represents (more
   * than half a step past its range): the values the scale clips. Null without a scale.
   */
  readonly clipped: number | null;
  /** The node alone, fed the first model's inputs: the error it adds rather than inherits. */
  readonly sameInput: {
    readonly cosine: number;
    readonly maxAbsDiff: number;
    readonly maxDiffSteps: number | null;
  } | null;
}

export interface FeaturemapSimilarityResult {
  readonly version: 1;
  readonly metric: SimilarityMetric;
  readonly threshold: number | null;
  readonly nodes: readonly NodeSimilarity[];
  /** Names of the nodes past the threshold, in execution order. */
  readonly flagged: readonly string[];
}

const DEFAULT_THRESHOLD: Partial<Record<SimilarityMetric, number>> = { cosine: 0.99, sqnr: 20 };

/** Whether `value` of `metric` is worse than `threshold`. */
export function isWorse(metric: SimilarityMetric, value: number | null, threshold: number): boolean {
  const v = value ?? (HIGHER_IS_BETTER[metric] ? Infinity : 0);
  return HIGHER_IS_BETTER[metric] ? !(v >= threshold) : !(v <= threshold);
}

function perElementStep(q: NodeQuant | null, shape: readonly number[]): ((i: number) => number) | null {
  return !q || q.dtype === 'qbool' ? null : scaleAt(q, shape);
}

function clippedShare(a: Float32Array, q: NodeQuant, step: (i: number) => number): number {
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    const s = step(i);
    const v = a[i]!;
    if (v < (q.quantMin - 0.5) * s || v > (q.quantMax + 0.5) * s) n++;
  }
  return a.length ? n / a.length : 0;
}

function stepsApart(a: Float32Array, b: Float32Array, step: (i: number) => number): { max: number; overOne: number } {
  let max = 0;
  let over = 0;
  for (let i = 0; i < a.length; i++) {
    const k = Math.abs(a[i]! - b[i]!) / step(i);
    if (k > max) max = k;
    if (k > 1 + 1e-6) over++;
  }
  return { max, overOne: a.length ? over / a.length : 0 };
}

const asJson = (s: Similarity): SimilarityJson => ({ ...s, sqnr: Number.isFinite(s.sqnr) ? s.sqnr : null });

/**
 * The first model's `values` in the form the second model's node takes: a QTensor of the same scale and
 * dtype for a fixed-point input (the quantization the input must have), else the float values unchanged,
 * so a fake-quant node's own computation and output quantization are all that differ.
 */
function encodeLike(values: NodeValue, like: unknown, rounding: RoundingMode): unknown {
  if (like instanceof QTensor) {
    const round = roundingFunction(rounding);
    const step = scaleAt(like, values.shape);
    const ints = new Float64Array(values.values.length);
    for (let i = 0; i < ints.length; i++) ints[i] = round(values.values[i]! / step(i));
    return QTensor.fromInts(ints, values.shape, like.scale, like.dtype, like.axis);
  }
  if (!(like instanceof Tensor)) return like;
  return new Tensor({ data: Float32Array.from(values.values), shape: [...values.shape], dtype: 'float32' });
}

/**
 * Compares every pair of nodes that compute the same value in `model1` and `model2` (aligned by name in
 * execution order, through fusion) on `inputs`. Both models run in eval mode; neither is changed. Use
 * adjacent stages in conversion order: float vs calibrated / QAT, calibrated vs QAT, QAT vs fixed point.
 */
export function featuremapSimilarity(
  model1: GraphModule,
  model2: GraphModule,
  inputs: ModelInputs,
  options: FeaturemapSimilarityOptions = {},
): FeaturemapSimilarityResult {
  const metric = options.metric ?? 'cosine';
  if (!SIMILARITY_METRICS.includes(metric)) {
    throw new InvalidArgumentError(
      `featuremapSimilarity: unknown metric '${metric}'; use one of ${SIMILARITY_METRICS.join(', ')}`,
    );
  }
  const threshold = options.threshold ?? DEFAULT_THRESHOLD[metric] ?? null;
  const args = argsOf(inputs);
  const pairs = alignNodes(model1, model2);
  if (pairs.length === 0) {
    throw new InvalidArgumentError(
      'featuremapSimilarity: the two models share no node names; pass two stages of one model (float, calibrated, QAT, fixed point)',
    );
  }
  const v1 = captureNodeValues(model1, args);
  const v2 = captureNodeValues(model2, args);
  const partner = new Map<Node, Node>(pairs.map((p) => [p.second, p.first]));

  let same: Map<Node, NodeValue> | null = null;
  if (options.sameInput ?? true) {
    const replaceArgs = (node: Node, values: unknown[]): unknown[] => {
      const module = node.op === 'call_module' ? subAt(model2, node.target) : null;
      const rounding = outputFakeQuantOf(module)?.rounding ?? 'half_up';
      const swap = (arg: unknown, value: unknown): unknown => {
        if (Array.isArray(arg) && Array.isArray(value)) return arg.map((a, i) => swap(a, value[i]));
        if (!arg || typeof arg !== 'object' || (arg as object).constructor?.name !== 'Node') return value;
        const p = partner.get(arg as Node);
        const firstValue = p ? v1.get(p) : undefined;
        const own = v2.get(arg as Node);
        if (!firstValue || !own || firstValue.values.length !== own.values.length) return value;
        return encodeLike(firstValue, value, rounding);
      };
      return node.args.map((a, i) => swap(a, values[i]));
    };
    same = captureNodeValues(model2, args, { replaceArgs });
  }

  const nodes: NodeSimilarity[] = [];
  for (const { first, second } of pairs) {
    const a = v1.get(first);
    const b = v2.get(second);
    if (!a || !b || a.values.length !== b.values.length) continue;
    const sim = similarityOf(a.values, b.values);
    const step = perElementStep(b.quant, b.shape);
    const apart = step ? stepsApart(a.values, b.values, step) : null;
    const s = same?.get(second);
    let sameInput: NodeSimilarity['sameInput'] = null;
    if (s && s.values.length === a.values.length) {
      const ss = similarityOf(a.values, s.values);
      sameInput = {
        cosine: ss.cosine,
        maxAbsDiff: ss.maxAbsDiff,
        maxDiffSteps: step ? stepsApart(a.values, s.values, step).max : null,
      };
    }
    nodes.push({
      ...asJson(sim),
      index: nodes.length,
      name: b.name,
      firstName: a.name,
      type: nodeTypeOf(model2, second),
      shape: b.shape,
      scale: b.quant && b.quant.scale.length === 1 ? b.quant.scale[0]! : null,
      dtype: b.quant?.dtype ?? null,
      maxDiffSteps: apart ? apart.max : null,
      offByMoreThanOneStep: apart ? apart.overOne : null,
      clipped: step && b.quant ? clippedShare(a.values, b.quant, step) : null,
      sameInput,
    });
  }
  const flagged =
    threshold === null
      ? []
      : nodes.filter((n) => isWorse(metric, n[metric] as number | null, threshold)).map((n) => n.name);
  return { version: 1, metric, threshold, nodes, flagged };
}
