// The chains a march's fusion table would fuse in a float model (horizon_plugin_pytorch's
// check_unfused_operations), found by running the fusion engine itself on a copy of the model, and
// the chains a pattern matches but that stay unfused, with the reason (a shared layer or BatchNorm,
// a BatchNorm that cannot be absorbed, an op the march does not fuse).
import {
  bnAbsorptionProblem,
  type ConvFusionPattern,
  fuseFx,
  fusionRefusal,
  moduleizeFunctionalOps,
  partsOf,
  referencedElsewhere,
  registerDefaultFusions,
  type AbsorbingLayer,
} from '@qtk/fusion';
import {
  type AppliedRewrite,
  findMatches,
  GraphModule,
  type Match,
  type Node,
  type RewriteContext,
  type RewriteRule,
} from '@qtk/ir';
import type { BatchNormNd, Module } from '@qtk/nn';
import { type FusionPatternV1, fusionPatterns, type MarchBackendV1, resolveMarchOption } from '@qtk/spec';
import { callNames, nodeTypeOf } from '../values/node-type.js';
import { tracedGraphOf } from '../values/traced.js';

/** A chain fusion would turn into one module. */
export interface FusableChain {
  /** The fusion pattern's name ('conv2d_bn_relu', ...). */
  readonly pattern: string;
  /** The chain's nodes in execution order: module paths (`(i)` on repeated calls), generated names for functional adds. */
  readonly nodes: readonly string[];
  /** What each node runs (module class or function name). */
  readonly types: readonly string[];
  /** The module path the fused module takes. */
  readonly fusedModule: string;
}

/** Why a chain a pattern matches is not fused. */
export type FusionBlock =
  /** The conv / linear is called or read elsewhere too. */
  | 'shared-layer'
  /** The BatchNorm is called or read elsewhere too. */
  | 'shared-norm'
  /** The BatchNorm cannot be folded into the layer (channel count, affine settings). */
  | 'batch-norm'
  /** The march's capability table does not fuse one of the ops. */
  | 'march'
  /** Keyword or extra arguments, or an add whose other input is part of the chain. */
  | 'arguments';

export interface BlockedChain {
  readonly pattern: string;
  readonly nodes: readonly string[];
  readonly types: readonly string[];
  readonly reason: FusionBlock;
  readonly detail: string;
}

export interface UnfusedOperationsResult {
  readonly version: 1;
  /** The march whose fusion table was applied (null: none given or set, every pattern). */
  readonly march: string | null;
  /** Chains fusion would fuse; empty for a model that is already fused or prepared. */
  readonly unfused: readonly FusableChain[];
  /** Chains a pattern matches that fusion leaves alone. */
  readonly blocked: readonly BlockedChain[];
}

export interface CheckUnfusedOptions {
  /** The march whose fusion table applies (a registered id or a backend); default: setMarch's. */
  readonly march?: string | MarchBackendV1;
}

const isConvPattern = (p: FusionPatternV1): p is ConvFusionPattern => 'family' in p && 'shape' in p;

function blockOf(
  entry: FusionPatternV1,
  match: Match,
  ctx: RewriteContext,
  march: MarchBackendV1 | null,
): { reason: FusionBlock; detail: string } | null {
  if (march && entry.fusedOps) {
    const refusal = fusionRefusal(march.capabilities, entry.fusedOps(match, ctx));
    if (refusal) return { reason: 'march', detail: `march '${march.id}': ${refusal}` };
  }
  if (entry.when?.(match, ctx) ?? true) return null;
  if (isConvPattern(entry)) {
    const { layer, bn } = partsOf(entry, match);
    if (referencedElsewhere(ctx, layer, match.nodes))
      return {
        reason: 'shared-layer',
        detail: `'${layer.target}' is also called or read outside this chain, so it cannot be replaced by a fused module`,
      };
    if (bn && referencedElsewhere(ctx, bn, match.nodes))
      return {
        reason: 'shared-norm',
        detail: `the BatchNorm '${bn.target}' is also called outside this chain, so it cannot be folded into '${layer.target}'`,
      };
    const problem = bn ? bnAbsorptionProblem(ctx.module(layer) as AbsorbingLayer, ctx.module(bn) as BatchNormNd) : null;
    if (problem !== null) return { reason: 'batch-norm', detail: problem };
  }
  return {
    reason: 'arguments',
    detail: 'an op of the chain has keyword or extra arguments, or the add reads the chain twice',
  };
}

/**
 * What the fusion table of `options.march` would fuse in `floatModel` (a Module, traced, or a
 * GraphModule): each chain with its node names and pattern, plus the chains a pattern matches that
 * stay unfused and why. Functional adds are named as prepare names them (`_generated_add_0`). The
 * model is not modified. On a fused or prepared model nothing is left to fuse.
 */
export function checkUnfusedOperations(floatModel: Module, options: CheckUnfusedOptions = {}): UnfusedOperationsResult {
  const traced = tracedGraphOf(floatModel, 'checkUnfusedOperations');
  const march = resolveMarchOption(options.march);
  registerDefaultFusions();
  const work = new GraphModule(traced, traced.graph.clone().graph, { className: traced.className });
  moduleizeFunctionalOps(work);
  const names = callNames(work);
  const byName = new Map(work.graph.nodes.map((n) => [n.name, n]));
  const describe = (nodes: readonly Node[]) => {
    const ordered = [...nodes].sort((a, b) => work.graph.nodes.indexOf(a) - work.graph.nodes.indexOf(b));
    return { nodes: ordered.map((n) => names.get(n)!), types: ordered.map((n) => nodeTypeOf(work, n)) };
  };
  const patterns = fusionPatterns.list();
  let applied: readonly AppliedRewrite[] = [];
  const fused = fuseFx(work, {
    ...(march ? { march } : {}),
    patterns,
    moduleizeFunctions: false,
    onFused: (a) => {
      applied = a;
    },
  });
  const unfused = applied.map((a): FusableChain => {
    const target = fused.graph.nodes.find(
      (n) => Array.isArray(n.meta.fusedFrom) && (n.meta.fusedFrom as string[]).join() === a.nodes.join(),
    );
    return {
      pattern: a.rule,
      ...describe(a.nodes.map((name) => byName.get(name)!)),
      fusedModule: target?.target ?? '',
    };
  });
  const covered = new Set(applied.flatMap((a) => a.nodes));
  const ctx: RewriteContext = { gm: work, graph: work.graph, module: (n) => work.getSubmodule(n.target) };
  // the engine's matcher with every pattern's condition lifted: what each pattern's shape alone matches
  const shapesOnly: RewriteRule[] = patterns.map((p) => ({ name: p.name, pattern: p.pattern, apply: () => {} }));
  const entries = new Map(patterns.map((p) => [p.name, p]));
  const blocked: BlockedChain[] = [];
  for (const { rule, match } of findMatches(work, shapesOnly).reverse()) {
    if (match.nodes.every((n) => covered.has(n.name))) continue;
    const block = blockOf(entries.get(rule.name)!, match, ctx, march);
    if (block) blocked.push({ pattern: rule.name, ...describe(match.nodes), ...block });
  }
  return { version: 1, march: march?.id ?? null, unfused, blocked };
}
