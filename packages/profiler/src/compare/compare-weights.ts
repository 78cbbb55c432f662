// compareWeights: each weighted layer's float weight against the weight the quantized model really
// computes with (the QAT / calibrated weight through its fake-quant, or a fixed-point layer's integers
// times their scales), so weight quantization error is seen apart from activation error.
import { QatModule, weightedLayer } from '@qtk/core';
import { FixedConv, FixedValueOp, Quantize } from '@qtk/fixed-point';
import { type AbsorbingLayer, absorbBatchNorm } from '@qtk/fusion';
import { GraphModule, type Node, subAt, symbolicTrace } from '@qtk/ir';
import { BatchNorm1d, BatchNorm2d, BatchNorm3d, Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import { InvalidArgumentError, roundingFunction } from '@qtk/tensor';
import { aliasesOf } from './align-nodes.js';
import { similarityOf } from './metrics.js';
import { nodeTypeOf } from '../values/node-type.js';

export interface LayerWeightComparison {
  /** The quantized model's module path (a fused module is named after the last node it absorbed). */
  readonly name: string;
  /** What the quantized model's node runs. */
  readonly type: string;
  /** The float model's module path of the layer holding the weight (inside a fused module: its `.conv`). */
  readonly floatLayer: string;
  /** The float BatchNorm folded into the float weight before comparing (null: none, or the float model was fused). */
  readonly foldedBatchNorm: string | null;
  readonly shape: readonly number[];
  readonly dtype: QuantDType;
  /** Channel axis of a per-channel weight scale (-1 per tensor). */
  readonly axis: number;
  /** The weight scale(s). */
  readonly scale: readonly number[];
  /** 'fake-quant': the weight fake-quant's scale; 'fixed-point': derived from the layer's requantize plan and its input scale (to the plan's 15-bit precision). */
  readonly scaleSource: 'fake-quant' | 'fixed-point';
  readonly cosine: number;
  readonly mse: number;
  readonly l1: number;
  /** 10·log10(Σw² / Σ(w − w_q)²) in dB; null when the weights are identical. */
  readonly sqnr: number | null;
  readonly maxAbsDiff: number;
  /** maxAbsDiff in weight steps (|w − w_q| / scale of its channel): at most 0.5 without clipping. */
  readonly maxDiffSteps: number;
  /** Share of the float weights more than half a step beyond the integer range at their scale (clamped harder than rounding would). */
  readonly clipped: number;
  readonly clippedCount: number;
}

export interface CompareWeightsResult {
  readonly version: 1;
  readonly layers: readonly LayerWeightComparison[];
  /** Weighted layers of the quantized model with no float counterpart of the same shape, and why. */
  readonly unmatched: readonly { readonly name: string; readonly reason: string }[];
}

/** A quantized layer's weight as the quantized model uses it. */
interface QuantizedWeight {
  /** w_q(i) for a given float weight (the fake-quant) or the stored integers times scales (fixed point). */
  /** The quantized model's own float weight before its fake-quant (null for a fixed-point layer: integers only). */
  readonly own: Float32Array | null;
  /** The weight as the quantized model uses it (dequantized). */
  readonly dequantized: () => Float32Array;
  readonly scale: Float32Array;
  readonly axis: number;
  readonly dtype: QuantDType;
  readonly quantMin: number;
  readonly quantMax: number;
  readonly source: LayerWeightComparison['scaleSource'];
  /** Relative error bound of each channel's scale (0: the exact scale; a derived one is off by up to 0.5 / multiplier). */
  readonly scaleError: Float64Array;
  readonly shape: readonly number[];
}

/** Maps a flat weight index to the index of its scale (per tensor: always 0). */
function channelIndex(shape: readonly number[], axis: number, scales: number): (i: number) => number {
  if (axis < 0 || scales === 1) return () => 0;
  let inner = 1;
  for (let d = axis + 1; d < shape.length; d++) inner *= shape[d]!;
  return (i) => Math.floor(i / inner) % shape[axis]!;
}

function fakeQuantWeight(m: QatModule): QuantizedWeight | null {
  const fq = m.weightFakeQuant;
  const w = weightedLayer(m.module);
  if (!fq || !w) return null;
  const q = fq.calculateQparams();
  const round = roundingFunction(fq.rounding);
  const shape = w.layer.weight.shape;
  const own = Float32Array.from(w.layer.weight.values());
  return {
    // the fake-quant's own arithmetic (float32 scale, clamp, store as float32) on the QAT model's own weight
    // (QAT training moves it away from the float one), without running the module: in CALIBRATION or QAT
    // state a call would also update its observer
    own,
    dequantized: () => {
      const ch = channelIndex(shape, q.chAxis, q.scale.length);
      const out = new Float32Array(own.length);
      for (let i = 0; i < own.length; i++) {
        const s = q.scale[ch(i)]!;
        const r = round(own[i]! / s);
        out[i] = (r < q.quantMin ? q.quantMin : r > q.quantMax ? q.quantMax : r) * s;
      }
      return out;
    },
    scale: q.scale,
    axis: q.scale.length > 1 ? q.chAxis : -1,
    dtype: q.dtype,
    quantMin: q.quantMin,
    quantMax: q.quantMax,
    source: 'fake-quant',
    scaleError: new Float64Array(q.scale.length),
    shape,
  };
}

/**
 * The scale of the value a fixed-point node receives as its first argument: the producer's output
 * scale, looking through value ops that keep their input's scale (flatten, reshape, max-pool...).
 */
function fixedInputScale(gm: GraphModule, node: Node): number | null {
  let arg = node.args[0];
  for (let depth = 0; depth < 64; depth++) {
    if (!arg || typeof arg !== 'object' || (arg as object).constructor?.name !== 'Node') return null;
    const producer = arg as Node;
    if (producer.op !== 'call_module') return null;
    const m = subAt(gm, producer.target) as Module & { outScale?: unknown; config?: { outScale?: unknown } };
    // a module's own output scale; null where it keeps its input's (a resize or clamp without requantize)
    let own: unknown;
    if (m instanceof Quantize) own = m.scale;
    else if (m instanceof FixedValueOp) own = m.output ? m.output.scale : null;
    else if ('outScale' in m) own = m.outScale;
    else own = m.config?.outScale;
    if (typeof own === 'number') return own;
    if (own instanceof Float32Array) return own.length === 1 ? own[0]! : null;
    if (own !== null) return null;
    arg = producer.args[0];
  }
  return null;
}

function fixedWeight(gm: GraphModule, node: Node, m: FixedConv): QuantizedWeight {
  const cfg = m.config;
  const sx = fixedInputScale(gm, node);
  if (sx === null) {
    throw new InvalidArgumentError(
      `compareWeights: cannot find the input scale of the fixed-point layer '${node.target}', so its weight scale is unknown; compare the float model with the calibrated / QAT model instead`,
    );
  }
  const axis = cfg.kind === 'conv_transpose' ? 1 : 0;
  const shape = cfg.weight.shape;
  const channels = shape[axis]!;
  // s_acc[c] = s_x · s_w[c]; a requantized output keeps s_acc only in its plan: y = acc · m · 2^-(pre + n) in units of s_out
  const plan = cfg.requant;
  const scale = new Float32Array(channels);
  const scaleError = new Float64Array(channels);
  for (let c = 0; c < channels; c++) {
    let sAcc: number;
    if (!plan) sAcc = cfg.outScale[c % cfg.outScale.length]!;
    else {
      const k = plan.m.length === 1 ? 0 : c;
      sAcc = cfg.outScale[0]! * plan.m[k]! * 2 ** -(plan.pre[k]! + plan.n[k]!);
      // the multiplier was rounded to an integer: the ratio it stands for is known to ±0.5 / m
      scaleError[c] = plan.m[k]! > 0 ? 0.5 / plan.m[k]! : 1;
    }
    scale[c] = sAcc / sx;
  }
  const ints = cfg.weight.values();
  return {
    own: null,
    dequantized: () => {
      const ch = channelIndex(shape, axis, channels);
      return Float32Array.from(ints, (k, i) => k * scale[ch(i)]!);
    },
    scale,
    axis,
    dtype: 'qint8',
    quantMin: -128,
    quantMax: 127,
    source: 'fixed-point',
    scaleError,
    shape,
  };
}

const isBatchNorm = (m: Module): boolean =>
  m instanceof BatchNorm1d || m instanceof BatchNorm2d || m instanceof BatchNorm3d;

/** The float layer a quantized node stands for, and the BatchNorm after it that fusion folded. */
function floatCounterpart(
  floatModel: GraphModule,
  floatNodes: ReadonlyMap<string, Node>,
  node: Node,
): { path: string; weight: Float32Array; bn: string | null } | { reason: string } {
  const candidates = aliasesOf(node)
    .map((a) => floatNodes.get(a))
    .filter((n): n is Node => n !== undefined);
  const layerNode = candidates.find((n) => weightedLayer(subAt(floatModel, n.target)) !== null);
  if (!layerNode) return { reason: 'no weighted layer of the float model has its name (or a name it was fused from)' };
  const module = subAt(floatModel, layerNode.target);
  const layer = weightedLayer(module)!.layer;
  const path = layer === module ? layerNode.target : `${layerNode.target}.conv`;
  const bnNode = candidates.find(
    (n) => isBatchNorm(subAt(floatModel, n.target)) && n.args[0] === layerNode && layerNode.numUsers === 1,
  );
  if (!bnNode) return { path, weight: Float32Array.from(layer.weight.values()), bn: null };
  const folded = absorbBatchNorm(layer as AbsorbingLayer, subAt(floatModel, bnNode.target) as never);
  return { path, weight: Float32Array.from(folded.weight.values()), bn: bnNode.target };
}

/**
 * A weight is clipped when clamping costs more than rounding would: w / s lies more than half a step
 * beyond [quantMin, quantMax]. A min-max scale (abs-max / 127.5 for int8) puts the largest positive
 * weight exactly half a step above 127, which rounding alone would cost too, so that is not clipping;
 * the 1e-3 step allows for the scale's float32 rounding (a scale derived from a fixed-point plan gets its own bound on top).
 */
const CLIP_MARGIN = 0.5 + 1e-3;

/**
 * max |w − w_q| / s against the float weight, and the count of clipped weights: of the quantized model's own
 * weight before its fake-quant (a QAT layer), else of the float weight (a fixed-point layer's integers).
 */
function stepsAndClipping(fw: Float32Array, wq: Float32Array, q: QuantizedWeight): { steps: number; clipped: number } {
  const ch = channelIndex(q.shape, q.axis, q.scale.length);
  const before = q.own ?? fw;
  let steps = 0;
  let clipped = 0;
  for (let i = 0; i < fw.length; i++) {
    const s = q.scale[ch(i)]!;
    const k = Math.abs(fw[i]! - wq[i]!) / s;
    if (k > steps) steps = k;
    const r = before[i]! / s;
    // a derived scale's error moves w / s by up to |w / s| · scaleError
    const margin = CLIP_MARGIN + Math.abs(r) * q.scaleError[ch(i)]!;
    if (r > q.quantMax + margin || r < q.quantMin - margin) clipped++;
  }
  return { steps, clipped };
}

/**
 * Compares every weighted layer (conv, conv-transpose, linear, fused or not) of `quantized` (a
 * calibrated / QAT model, or a fixed-point one) with `floatModel`'s weight. Like is compared with like:
 * a fused layer's weight has its BatchNorm folded in (running statistics, at fusion), so an unfused
 * float model's conv weight is folded with its BatchNorm the same way first; a float model already fused
 * (fuseFx) is compared as it is. Layers left as float in the quantized model (no weight fake-quant) are
 * not listed. Neither model is changed.
 */
export function compareWeights(float: Module, quantized: GraphModule): CompareWeightsResult {
  if (!(float instanceof Module) || !(quantized instanceof GraphModule))
    throw new InvalidArgumentError(
      'compareWeights: expected a float model (Module or GraphModule) and a quantized GraphModule',
    );
  const floatModel = float instanceof GraphModule ? float : symbolicTrace(float);
  const floatNodes = new Map<string, Node>();
  for (const n of floatModel.graph.nodes) if (n.op === 'call_module') floatNodes.set(n.name, n);
  const layers: LayerWeightComparison[] = [];
  const unmatched: { name: string; reason: string }[] = [];
  const seen = new Set<string>();
  for (const node of quantized.graph.nodes) {
    if (node.op !== 'call_module' || seen.has(node.target)) continue;
    seen.add(node.target);
    const m = subAt(quantized, node.target);
    const q =
      m instanceof QatModule ? fakeQuantWeight(m) : m instanceof FixedConv ? fixedWeight(quantized, node, m) : null;
    if (!q) continue;
    const counterpart = floatCounterpart(floatModel, floatNodes, node);
    if ('reason' in counterpart) {
      unmatched.push({ name: node.target, reason: counterpart.reason });
      continue;
    }
    const fw = counterpart.weight;
    if (fw.length !== q.shape.reduce((a, b) => a * b, 1)) {
      unmatched.push({
        name: node.target,
        reason: `the float weight of '${counterpart.path}' has ${fw.length} values, the quantized one [${q.shape}]`,
      });
      continue;
    }
    const wq = q.dequantized();
    const sim = similarityOf(fw, wq);
    const { steps, clipped } = stepsAndClipping(fw, wq, q);
    layers.push({
      name: node.target,
      type: nodeTypeOf(quantized, node),
      floatLayer: counterpart.path,
      foldedBatchNorm: counterpart.bn,
      shape: [...q.shape],
      dtype: q.dtype,
      axis: q.axis,
      scale: Array.from(q.scale),
      scaleSource: q.source,
      cosine: sim.cosine,
      mse: sim.mse,
      l1: sim.l1,
      sqnr: Number.isFinite(sim.sqnr) ? sim.sqnr : null,
      maxAbsDiff: sim.maxAbsDiff,
      maxDiffSteps: steps,
      clipped: fw.length ? clipped / fw.length : 0,
      clippedCount: clipped,
    });
  }
  return { version: 1, layers, unmatched };
}
