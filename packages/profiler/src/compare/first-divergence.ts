// First divergence: along float → fake quant → fixed point → exported integer ONNX in onnxruntime, the
// first node where each adjacent pair of stages parts, and why.
import { modelInfoOf } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import { exportOnnxBytes } from '@qtk/onnx';
// registers the integer export rules exportOnnxBytes writes a fixed-point model with
import '@qtk/onnx-deploy';
import type { RuntimeComparer, RuntimeComparison } from '@qtk/onnx-deploy';
import { marches } from '@qtk/spec';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { type Diagnosis, diagnose } from './divergence-cause.js';
import { type FeaturemapSimilarityResult, featuremapSimilarity, type NodeSimilarity } from './featuremap-similarity.js';
import { argsOf, type ModelInputs } from '../values/model-inputs.js';
import { alignNodes } from './align-nodes.js';
import { captureNodeValues } from '../values/node-values.js';
import { callNames } from '../values/node-type.js';

export const STAGES = ['float', 'fakeQuant', 'fixed', 'onnxruntime'] as const;
export type Stage = (typeof STAGES)[number];

export interface FirstDivergenceOptions {
  /** A node diverges when, fed the earlier stage's inputs, its output's cosine similarity falls below this (default 0.99). */
  readonly threshold?: number;
  /** Fake quant → fixed point: a node also diverges when, fed the same inputs, it lands more than this many output steps away (default 2). */
  readonly maxSteps?: number;
  /** The fixed-point model's integer ONNX export, or 'export' to export it here (default), or null to skip onnxruntime. */
  readonly onnx?: Uint8Array | 'export' | null;
  /**
   * Runs the fixed-point model and its export in an ONNX runtime, node by node: compareWithRuntime of
   * @qtk/onnx-deploy/node (onnxruntime-node), which firstDivergence of @qtk/profiler/node passes. Without one the
   * onnxruntime pair is skipped, saying why.
   */
  readonly compareWithRuntime?: RuntimeComparer;
  /**
   * featuremapSimilarity results already computed on the same inputs (with the same-input mode) for a pair of
   * these stages, so they are not run again (modelProfiler passes its own).
   */
  readonly similarities?: {
    readonly floatVsFakeQuant?: FeaturemapSimilarityResult;
    readonly fakeQuantVsFixed?: FeaturemapSimilarityResult;
  };
}

export interface DivergentNode {
  readonly name: string;
  readonly type: string;
  /** Position among the pair's compared nodes. */
  readonly index: number;
  /** Cosine similarity of the accumulated outputs (null for the onnxruntime pair, which compares integers). */
  readonly cosine: number | null;
  /** Cosine similarity when the node is fed the earlier stage's inputs (the error it adds). */
  readonly sameInputCosine: number | null;
  readonly maxDiffSteps: number | null;
  readonly sameInputMaxDiffSteps: number | null;
}

export interface StagePair {
  readonly from: Stage;
  readonly to: Stage;
  /** The first node that diverges, or null when none does. */
  readonly node: DivergentNode | null;
  /** The likely cause at that node (null when none diverges). */
  readonly diagnosis: Diagnosis | null;
  /** The first node whose accumulated output falls below the threshold (it can come later than `node`). */
  readonly firstAccumulated: string | null;
  /** Fixed point → onnxruntime: elements that differ at the node, and nodes compared. */
  readonly runtime?: { readonly compared: number; readonly mismatches: number; readonly maxAbsDiff: number } | null;
  /** Why the pair was not compared (onnxruntime-node missing, export failed). */
  readonly skipped?: string;
}

export interface FirstDivergenceResult {
  readonly version: 1;
  readonly threshold: number;
  readonly maxSteps: number;
  readonly pairs: readonly StagePair[];
  /** The earliest stage pair with a divergent node: where to look first. */
  readonly first: { readonly from: Stage; readonly to: Stage; readonly node: string } | null;
}

function divergentNode(n: NodeSimilarity): DivergentNode {
  return {
    name: n.name,
    type: n.type,
    index: n.index,
    cosine: n.cosine,
    sameInputCosine: n.sameInput?.cosine ?? null,
    maxDiffSteps: n.maxDiffSteps,
    sameInputMaxDiffSteps: n.sameInput?.maxDiffSteps ?? null,
  };
}

function marchHasInt16(...models: GraphModule[]): boolean {
  for (const m of models) {
    const march = modelInfoOf(m).march;
    if (march && marches.has(march)) return marches.get(march).capabilities.activationDtypes.includes('qint16');
  }
  return false;
}

function quantizedPair(
  first: GraphModule,
  second: GraphModule,
  from: Stage,
  to: Stage,
  args: readonly unknown[],
  diverges: (n: NodeSimilarity) => boolean,
  threshold: number,
  hasInt16: boolean,
  known?: FeaturemapSimilarityResult,
): StagePair {
  const sim = known ?? featuremapSimilarity(first, second, args, { threshold });
  const hit = sim.nodes.find(diverges) ?? null;
  const accumulated = sim.nodes.find((n) => n.cosine < threshold)?.name ?? null;
  if (!hit) return { from, to, node: null, diagnosis: null, firstAccumulated: accumulated };
  const pair = alignNodes(first, second).find((p) => p.name === hit.name)!;
  const reference = captureNodeValues(first, args).get(pair.first)!;
  const quant = captureNodeValues(second, args).get(pair.second)?.quant ?? null;
  return {
    from,
    to,
    node: divergentNode(hit),
    diagnosis: diagnose(reference.values, quant, hit.type, hasInt16),
    firstAccumulated: accumulated,
  };
}

/** Why the onnxruntime pair is skipped when no runtime comparison is given. */
export const NO_RUNTIME =
  'no ONNX runtime given: firstDivergence and modelProfiler from @qtk/profiler/node run onnxruntime-node (or pass compareWithRuntime)';

async function runtimePair(
  fixed: GraphModule,
  args: readonly unknown[],
  onnx: Uint8Array | 'export',
  compareWithRuntime: RuntimeComparer | undefined,
): Promise<StagePair> {
  const base = { from: 'fixed' as const, to: 'onnxruntime' as const, diagnosis: null, firstAccumulated: null };
  if (!compareWithRuntime) return { ...base, node: null, skipped: NO_RUNTIME };
  let bytes: Uint8Array;
  try {
    bytes = onnx === 'export' ? exportOnnxBytes(fixed, args as Tensor[]) : onnx;
  } catch (e) {
    return { ...base, node: null, skipped: `the fixed-point model did not export: ${(e as Error).message}` };
  }
  let cmp: RuntimeComparison;
  try {
    cmp = await compareWithRuntime(fixed, bytes, args as Tensor[]);
  } catch (e) {
    return { ...base, node: null, skipped: (e as Error).message };
  }
  const d = cmp.firstDifference;
  const names = new Map([...callNames(fixed)].map(([n, name]) => [n.name, name]));
  const runtime = d
    ? { compared: cmp.nodes.length, mismatches: d.mismatches, maxAbsDiff: d.maxAbsDiff }
    : { compared: cmp.nodes.length, mismatches: 0, maxAbsDiff: 0 };
  if (!d) return { ...base, node: null, runtime };
  const index = cmp.nodes.indexOf(d);
  return {
    ...base,
    node: {
      name: names.get(d.node) ?? d.node,
      type: d.op,
      index,
      cosine: null,
      sameInputCosine: null,
      maxDiffSteps: d.maxAbsDiff,
      sameInputMaxDiffSteps: null,
    },
    diagnosis: {
      cause: 'rounding',
      advice: `onnxruntime's integers differ from QTK's at ${d.mismatches} of ${d.elements} elements (first at index ${d.first?.index}): an export rule does not reproduce this op's arithmetic; report it with the model`,
      evidence: null,
    },
    runtime,
  };
}

/**
 * Walks float → fake quant → fixed point → onnxruntime and, for each adjacent pair, finds the first node
 * (in execution order) that diverges by itself — fed the earlier stage's inputs — past the threshold, with
 * its likely cause. `fakeQuant` is a calibrated or QAT model, `fixed` its conversion; without `float` the walk
 * starts at the fake-quant model. The onnxruntime pair needs `compareWithRuntime` (firstDivergence of
 * @qtk/profiler/node passes onnxruntime-node's).
 */
export async function firstDivergence(
  stages: { readonly float?: GraphModule; readonly fakeQuant: GraphModule; readonly fixed: GraphModule },
  inputs: ModelInputs,
  options: FirstDivergenceOptions = {},
): Promise<FirstDivergenceResult> {
  const threshold = options.threshold ?? 0.99;
  const maxSteps = options.maxSteps ?? 2;
  if (!(threshold > 0 && threshold <= 1))
    throw new InvalidArgumentError(`firstDivergence: threshold must be in (0, 1], got ${threshold}`);
  if (!(maxSteps >= 0)) throw new InvalidArgumentError(`firstDivergence: maxSteps must be ≥ 0, got ${maxSteps}`);
  const args = argsOf(inputs);
  if (!args.every((a) => a instanceof Tensor))
    throw new InvalidArgumentError('firstDivergence: inputs must be float tensors (what the float model takes)');
  const hasInt16 = marchHasInt16(stages.fixed, stages.fakeQuant);
  const pairs: StagePair[] = [];
  if (stages.float)
    pairs.push(
      quantizedPair(
        stages.float,
        stages.fakeQuant,
        'float',
        'fakeQuant',
        args,
        (n) => (n.sameInput?.cosine ?? n.cosine) < threshold,
        threshold,
        hasInt16,
        options.similarities?.floatVsFakeQuant,
      ),
    );
  pairs.push(
    quantizedPair(
      stages.fakeQuant,
      stages.fixed,
      'fakeQuant',
      'fixed',
      args,
      (n) => (n.sameInput?.cosine ?? n.cosine) < threshold || (n.sameInput?.maxDiffSteps ?? 0) > maxSteps,
      threshold,
      hasInt16,
      options.similarities?.fakeQuantVsFixed,
    ),
  );
  const onnx = options.onnx === undefined ? 'export' : options.onnx;
  if (onnx === null)
    pairs.push({
      from: 'fixed',
      to: 'onnxruntime',
      node: null,
      diagnosis: null,
      firstAccumulated: null,
      skipped: 'not requested',
    });
  else pairs.push(await runtimePair(stages.fixed, args, onnx, options.compareWithRuntime));
  const hit = pairs.find((p) => p.node !== null);
  return {
    version: 1,
    threshold,
    maxSteps,
    pairs,
    first: hit ? { from: hit.from, to: hit.to, node: hit.node!.name } : null,
  };
}
