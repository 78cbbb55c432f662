// The fusion table, generated from the sets of layers, norms, adds and activations horizon_plugin_pytorch lists:
// every conv family × the shapes Conv-BN, Conv-ReLU, Conv-Add, Conv-BN-ReLU, Conv-BN-Add,
// Conv-Add-ReLU, Conv-BN-Add-ReLU (adds with the conv output first or second), as FusionPatternV1.
import { anyOf, MatchAll, Node, type Match, type Pattern, type PatternElement, type RewriteContext } from '@qtk/ir';
import {
  BatchNorm1d,
  BatchNorm2d,
  BatchNorm3d,
  Conv2d,
  Conv3d,
  ConvTranspose2d,
  FloatFunctional,
  Linear,
  ReLU,
  ReLU6,
  SyncBatchNorm,
  type BatchNormNd,
  type Module,
} from '@qtk/nn';
import type { FusionPatternV1 } from '@qtk/spec';
import { add, relu, relu6 } from '@qtk/tensor';
import { bnAbsorptionProblem, fuseLayerWithBatchNorm, type AbsorbingLayer } from './bn-absorption.js';
import {
  ConvAddReLU2d,
  ConvAddReLU3d,
  ConvTransposeAddReLU2d,
  LinearAddReLU,
  type FusedActivation,
  type FusedConvBase,
} from './fused-modules.js';

// biome-ignore lint/suspicious/noExplicitAny: each fused class takes its own conv layer type
type FusedClass = new (conv: any, options: ConstructorParameters<typeof ConvAddReLU2d>[1]) => FusedConvBase;
// biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
type ClassOf<T> = new (...args: any[]) => T;

export interface FusionFamily {
  /** Prefix of the pattern names ('conv2d', 'conv_transpose2d', 'conv3d', 'linear'). */
  readonly name: string;
  /** The layer's op as capability tables name it ('Conv', 'ConvTranspose', 'Gemm'). */
  readonly op: string;
  readonly layer: ClassOf<AbsorbingLayer>;
  /** The BatchNorm classes that can follow the layer (those whose input rank fits its output). */
  readonly norms: readonly ClassOf<BatchNormNd>[];
  readonly fused: FusedClass;
}

/**
 * The conv families. horizon_plugin_pytorch's cross product convs × {BatchNorm1d/2d/3d, SyncBatchNorm} is
 * restricted to the pairs that can run: a BatchNormNd rejects inputs of another rank, so Conv2d
 * and ConvTranspose2d pair with BatchNorm2d, Conv3d with BatchNorm3d, Linear with BatchNorm1d,
 * and each with SyncBatchNorm (any rank).
 */
export const FUSION_FAMILIES: readonly FusionFamily[] = [
  { name: 'conv2d', op: 'Conv', layer: Conv2d, norms: [BatchNorm2d, SyncBatchNorm], fused: ConvAddReLU2d },
  {
    name: 'conv_transpose2d',
    op: 'ConvTranspose',
    layer: ConvTranspose2d,
    norms: [BatchNorm2d, SyncBatchNorm],
    fused: ConvTransposeAddReLU2d,
  },
  { name: 'conv3d', op: 'Conv', layer: Conv3d, norms: [BatchNorm3d, SyncBatchNorm], fused: ConvAddReLU3d },
  { name: 'linear', op: 'Gemm', layer: Linear, norms: [BatchNorm1d, SyncBatchNorm], fused: LinearAddReLU },
];

/** The add ops: FloatFunctional.add (call_module with method), the functional add, and the tensor method `x.add(y)`. */
export const FUSION_ADDS: readonly PatternElement[] = [FloatFunctional.prototype.add, add, 'add'];
/** The activations: ReLU and ReLU6 modules, and the functional relu / relu6 (`F.relu` is the same function). */
export const FUSION_RELUS: readonly PatternElement[] = [ReLU, ReLU6, relu, relu6];

/** One shape of the table: which ops follow the layer, and where the layer's output enters the add. */
export interface FusionShape {
  readonly bn: boolean;
  /** null: no add; 'first': `conv + other`; 'second': `other + conv`. */
  readonly add: 'first' | 'second' | null;
  readonly relu: boolean;
}

/** The seven shapes, adds in both orders (11 in all), conv output first before second so it wins ties. */
export const FUSION_SHAPES: readonly FusionShape[] = [
  { bn: true, add: 'first', relu: true },
  { bn: true, add: 'second', relu: true },
  { bn: true, add: 'first', relu: false },
  { bn: true, add: 'second', relu: false },
  { bn: false, add: 'first', relu: true },
  { bn: false, add: 'second', relu: true },
  { bn: true, add: null, relu: true },
  { bn: false, add: 'first', relu: false },
  { bn: false, add: 'second', relu: false },
  { bn: true, add: null, relu: false },
  { bn: false, add: null, relu: true },
];

export function shapeName(shape: FusionShape): string {
  return [
    '',
    shape.bn ? '_bn' : '',
    shape.add ? '_add' : '',
    shape.relu ? '_relu' : '',
    shape.add === 'second' ? '_conv_second' : '',
  ].join('');
}

/** A generated table entry: a FusionPatternV1 that also says which family and shape it is. */
export interface ConvFusionPattern extends FusionPatternV1 {
  readonly family: FusionFamily;
  readonly shape: FusionShape;
}

/** The matched nodes by role (a pattern's nodes come root first: relu, add, bn, layer). */
export interface ConvFusionParts {
  readonly layer: Node;
  readonly bn?: Node;
  readonly add?: Node;
  readonly relu?: Node;
  /** The add's other input. */
  readonly other?: unknown;
}

export function partsOf(entry: ConvFusionPattern, match: Match): ConvFusionParts {
  const nodes = [...match.nodes];
  const relu = entry.shape.relu ? nodes.shift() : undefined;
  const addNode = entry.shape.add ? nodes.shift() : undefined;
  const bn = entry.shape.bn ? nodes.shift() : undefined;
  return { layer: nodes.shift()!, bn, add: addNode, relu, other: entry.shape.add ? match.captures[0] : undefined };
}

function activationOf(node: Node, ctx: RewriteContext): Exclude<FusedActivation, null> {
  if (node.op === 'call_module') return ctx.module(node) instanceof ReLU6 ? 'relu6' : 'relu';
  return node.target === 'relu6' ? 'relu6' : 'relu';
}

/** Whether a node other than `except` calls `module` or reads something at or under `path`. */
export function referencedElsewhere(ctx: RewriteContext, node: Node, except: readonly Node[]): boolean {
  const path = node.target;
  const module = ctx.module(node);
  for (const n of ctx.graph.nodes) {
    if (except.includes(n)) continue;
    if (n.op === 'get_attr' && (n.target === path || n.target.startsWith(`${path}.`))) return true;
    if (n.op === 'call_module') {
      if (n.target === path || n.target.startsWith(`${path}.`)) return true;
      try {
        if (ctx.module(n) === module) return true;
      } catch {
        // a node calling a missing module: not ours to judge here
      }
    }
  }
  return false;
}

function hasKwargs(n: Node | undefined): boolean {
  return n !== undefined && Object.keys(n.kwargs).length > 0;
}

function buildPattern(family: FusionFamily, shape: FusionShape): Pattern {
  let p: Pattern = family.layer;
  if (shape.bn) p = [anyOf(...family.norms), p];
  if (shape.add === 'first') p = [anyOf(...FUSION_ADDS), p, MatchAll];
  if (shape.add === 'second') p = [anyOf(...FUSION_ADDS), MatchAll, p];
  if (shape.relu) p = [anyOf(...FUSION_RELUS), p];
  return p;
}

function makeEntry(family: FusionFamily, shape: FusionShape): ConvFusionPattern {
  const entry: ConvFusionPattern = {
    apiVersion: 1,
    name: `${family.name}${shapeName(shape)}`,
    pattern: buildPattern(family, shape),
    family,
    shape,
    when(match, ctx) {
      const parts = partsOf(entry, match);
      const { layer, bn, add: addNode, relu: reluNode, other } = parts;
      if (layer.args.length !== 1 || hasKwargs(layer) || hasKwargs(bn) || hasKwargs(addNode) || hasKwargs(reluNode))
        return false;
      // the layer (and BN) change or disappear, so nothing else may call or read them
      if (referencedElsewhere(ctx, layer, match.nodes)) return false;
      if (bn && referencedElsewhere(ctx, bn, match.nodes)) return false;
      if (bn && bnAbsorptionProblem(ctx.module(layer) as AbsorbingLayer, ctx.module(bn) as BatchNormNd) !== null)
        return false;
      if (addNode && (!(other instanceof Node) || match.nodes.includes(other))) return false;
      return true;
    },
    fusedOps(match, ctx) {
      const parts = partsOf(entry, match);
      const fused: string[] = [];
      if (parts.bn) fused.push('BatchNormalization');
      if (parts.add) fused.push('Add');
      if (parts.relu) fused.push(activationOf(parts.relu, ctx) === 'relu6' ? 'Clip' : 'Relu');
      return { base: family.op, fused };
    },
    createFused(match, ctx): Module {
      const parts = partsOf(entry, match);
      let layer = ctx.module(parts.layer) as AbsorbingLayer;
      if (parts.bn) layer = fuseLayerWithBatchNorm(layer, ctx.module(parts.bn) as BatchNormNd);
      const fused = new family.fused(layer, {
        withAdd: shape.add !== null,
        convFirst: shape.add !== 'second',
        activation: parts.relu ? activationOf(parts.relu, ctx) : null,
      });
      fused.training = ctx.gm.training;
      return fused;
    },
  };
  return entry;
}

/** The generated table: every family × every shape (44 entries), in matching order within a family. */
export function convFusionPatterns(families: readonly FusionFamily[] = FUSION_FAMILIES): ConvFusionPattern[] {
  return families.flatMap((f) => FUSION_SHAPES.map((s) => makeEntry(f, s)));
}

/** The default table (built once). */
export const defaultFusionPatterns: readonly ConvFusionPattern[] = convFusionPatterns();
