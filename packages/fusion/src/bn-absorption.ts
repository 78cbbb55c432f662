// BatchNorm absorbed into the preceding conv / linear in eval semantics (running statistics):
// bn(conv(x)) = conv'(x) with W'[o] = W[o]·s[o], b'[o] = (b[o] − mean[o])·s[o] + β[o], s = γ/√(var+ε).
import { ConvTranspose2d, Linear, Parameter, type BatchNormNd, type Conv2d, type Conv3d } from '@qtk/nn';
import { InvalidArgumentError, tensor } from '@qtk/tensor';
import { shallowCloneModule } from './module-tree.js';

/** The layers BN can be absorbed into. */
export type AbsorbingLayer = Conv2d | Conv3d | ConvTranspose2d | Linear;

/** Output channels of a conv / conv-transpose / linear layer. */
export function outChannelsOf(layer: AbsorbingLayer): number {
  return layer instanceof Linear ? layer.outFeatures : layer.outChannels;
}

/** Why `bn` cannot be absorbed into `layer` (null when it can). */
export function bnAbsorptionProblem(layer: AbsorbingLayer, bn: BatchNormNd): string | null {
  if (bn.runningMean === null || bn.runningVar === null) {
    return `${bn.constructor.name} has no running statistics (trackRunningStats: false), so it normalises with batch statistics even in eval`;
  }
  const out = outChannelsOf(layer);
  if (bn.numFeatures !== out)
    return `${bn.constructor.name} has ${bn.numFeatures} features but the ${layer.constructor.name} has ${out} output channels`;
  return null;
}

/**
 * Output channel of each weight element, for a weight in row-major order. Conv and Linear weights
 * are [out, ...]; ConvTranspose weights are [in, out/groups, ...kernel], so the output channel of
 * element [i, j, ...] is group(i)·(out/groups) + j.
 */
function channelOfWeight(layer: AbsorbingLayer): (flatIndex: number) => number {
  const shape = layer.weight.shape;
  const inner = shape.slice(2).reduce((a, b) => a * b, 1);
  if (!(layer instanceof ConvTranspose2d)) {
    const per = shape.slice(1).reduce((a, b) => a * b, 1);
    return (k) => Math.floor(k / per);
  }
  const outPerGroup = shape[1]!;
  const inPerGroup = shape[0]! / layer.groups;
  return (k) => {
    const i = Math.floor(k / (outPerGroup * inner));
    const j = Math.floor(k / inner) % outPerGroup;
    return Math.floor(i / inPerGroup) * outPerGroup + j;
  };
}

/**
 * The weight and bias of `layer` with `bn` (in eval semantics) absorbed, as new Parameters
 * (requiresGrad as the layer's weight). Throws InvalidArgumentError when it cannot be absorbed.
 */
export function absorbBatchNorm(layer: AbsorbingLayer, bn: BatchNormNd): { weight: Parameter; bias: Parameter } {
  const problem = bnAbsorptionProblem(layer, bn);
  if (problem) throw new InvalidArgumentError(`absorbBatchNorm: ${problem}; keep this BatchNorm unfused`);
  const n = outChannelsOf(layer);
  const mean = bn.runningMean!.values();
  const variance = bn.runningVar!.values();
  const gamma = bn.weight?.values();
  const beta = bn.bias?.values();
  const b = layer.bias?.values();
  const scale = new Float64Array(n);
  const bias = new Float32Array(n);
  for (let o = 0; o < n; o++) {
    scale[o] = (gamma ? gamma[o]! : 1) / Math.sqrt(variance[o]! + bn.eps);
    bias[o] = ((b ? b[o]! : 0) - mean[o]!) * scale[o]! + (beta ? beta[o]! : 0);
  }
  const w = layer.weight.values();
  const weight = new Float32Array(w.length);
  const channel = channelOfWeight(layer);
  for (let k = 0; k < w.length; k++) weight[k] = w[k]! * scale[channel(k)]!;
  const requiresGrad = layer.weight.requiresGrad;
  return {
    weight: new Parameter(tensor(weight, [...layer.weight.shape]), requiresGrad),
    bias: new Parameter(tensor(bias, [n]), requiresGrad),
  };
}

/**
 * A copy of `layer` (same class and settings, shallowCloneModule) whose weight and bias have `bn`
 * absorbed; the original layer is not changed.
 */
export function fuseLayerWithBatchNorm<L extends AbsorbingLayer>(layer: L, bn: BatchNormNd): L {
  const { weight, bias } = absorbBatchNorm(layer, bn);
  const copy: AbsorbingLayer = shallowCloneModule<AbsorbingLayer>(layer);
  copy.weight = weight;
  copy.bias = bias;
  const n = outChannelsOf(layer);
  const gamma = bn.weight?.values();
  const beta = bn.bias?.values();
  const stats: AbsorbedBatchNorm = {
    mean: Float32Array.from({ length: n }, (_, o) => (beta ? beta[o]! : 0)),
    std: Float32Array.from({ length: n }, (_, o) => Math.abs(gamma ? gamma[o]! : 1)),
  };
  // an own property, so the shallow copies prepare and the PTQ passes make of the layer keep it
  Object.defineProperty(copy, ABSORBED_BATCH_NORM, { value: stats, enumerable: false });
  return copy as L;
}

/**
 * What an absorbed BatchNorm said of its layer's output: per channel, mean β and standard deviation |γ| (the
 * normalised output's, before any activation). Data-free bias correction takes the layer's output as Gaussian with
 * these.
 */
export interface AbsorbedBatchNorm {
  readonly mean: Float32Array;
  readonly std: Float32Array;
}

const ABSORBED_BATCH_NORM = Symbol('absorbedBatchNorm');

/** The statistics of the BatchNorm fuseLayerWithBatchNorm absorbed into `layer` (null if none was). */
export function absorbedBatchNormOf(layer: object): AbsorbedBatchNorm | null {
  return (layer as { [ABSORBED_BATCH_NORM]?: AbsorbedBatchNorm })[ABSORBED_BATCH_NORM] ?? null;
}
