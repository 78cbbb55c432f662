// Bias correction's analytic form (data-free quantization, Nagel et al. 2019): a layer's input mean E[x] is derived
// from the BatchNorm absorbed into the layer before it, with no data. That BatchNorm normalised its output to mean β
// and standard deviation |γ| per channel; taking the output as Gaussian with those, E[f(y)] of the activation after
// it is a one-dimensional integral, and average pools, upsampling and flattening keep channel means.
import { absorbedBatchNormOf, FusedConvBase } from '@qtk/fusion';
import { type GraphModule, Node, subAt } from '@qtk/ir';
import {
  AdaptiveAvgPool2d,
  AvgPool2d,
  Dropout,
  Flatten,
  GELU,
  Hardsigmoid,
  Hardswish,
  Identity,
  type Module,
  QuantStub,
  ReLU,
  ReLU6,
  Sigmoid,
  SiLU,
  Tanh,
  Upsample,
} from '@qtk/nn';
import { FakeQuantize } from '@qtk/fake-quant';
import { QatModule, weightedLayer } from '../qat-module.js';
import {
  applyBiasCorrection,
  type BiasCorrection,
  type BiasCorrectionResult,
  correctedLayers,
  requireValidation,
} from './bias-correction.js';

type Activation = (y: number) => number;

const relu6: Activation = (y) => Math.min(6, Math.max(0, y));
const erf = (x: number): number => {
  // Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7)
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return Math.sign(x) * (1 - p * Math.exp(-x * x));
};

/** The elementwise activations whose expectation over a Gaussian input is integrated. */
const ACTIVATIONS: readonly [abstract new (...a: never[]) => Module, Activation][] = [
  [ReLU, (y) => Math.max(0, y)],
  [ReLU6, relu6],
  [Hardswish, (y) => (y * relu6(y + 3)) / 6],
  [Hardsigmoid, (y) => relu6(y + 3) / 6],
  [Sigmoid, (y) => 1 / (1 + Math.exp(-y))],
  [Tanh, Math.tanh],
  [SiLU, (y) => y / (1 + Math.exp(-y))],
  [GELU, (y) => 0.5 * y * (1 + erf(y / Math.SQRT2))],
  [Identity, (y) => y],
];

/** Modules that keep each channel's mean: the prior passes through them (no longer Gaussian). */
const MEAN_PRESERVING: readonly (abstract new (...a: never[]) => Module)[] = [
  AdaptiveAvgPool2d,
  AvgPool2d,
  Upsample,
  Flatten,
  Dropout,
];

// the standard normal on [−8, 8], 2001 points: E[f(μ + σz)] as a weighted sum (within 3e-6 of ReLU's closed form)
const Z = Float64Array.from({ length: 2001 }, (_, i) => -8 + i * 0.008);
const W = (() => {
  const w = Z.map((z) => Math.exp(-0.5 * z * z));
  const total = w.reduce((a, b) => a + b, 0);
  return w.map((v) => v / total);
})();

/** E[f(y)] for y ~ N(mean, std²), by quadrature (f itself when std is 0). */
export function gaussianExpectation(f: Activation, mean: number, std: number): number {
  if (!(std > 0)) return f(mean);
  let s = 0;
  for (let i = 0; i < Z.length; i++) s += W[i]! * f(mean + std * Z[i]!);
  return s;
}

/** A tensor's per-channel prior: Gaussian (a normalised output before any activation) or only its means. */
type Prior =
  | { readonly gaussian: true; readonly mean: Float32Array; readonly std: Float32Array }
  | { readonly gaussian: false; readonly mean: Float64Array };

function meansOf(p: Prior): Prior {
  return p.gaussian ? { gaussian: false, mean: Float64Array.from(p.mean) } : p;
}

function activate(p: Prior, f: Activation, what: string): Prior | string {
  if (!p.gaussian) return `its input passes ${what} after a non-Gaussian value`;
  return { gaussian: false, mean: Float64Array.from(p.mean, (m, c) => gaussianExpectation(f, m, p.std[c]!)) };
}

function activationOf(m: Module): Activation | null {
  return ACTIVATIONS.find(([cls]) => m instanceof cls)?.[1] ?? null;
}

/** The prior of the value `arg` holds, or why there is none. */
function priorOf(gm: GraphModule, arg: unknown): Prior | string {
  if (!(arg instanceof Node)) return 'its input is not a graph value';
  if (arg.op === 'placeholder') return `its input is the model input '${arg.name}' (no BatchNorm before it)`;
  if (arg.op !== 'call_module' || arg.method !== undefined) return `its input comes from '${arg.name}' (${arg.op})`;
  const m = subAt(gm, arg.target);
  const inner = m instanceof QatModule ? m.module : m;
  const name = `'${arg.target}' (${inner?.constructor.name})`;
  if (m instanceof FakeQuantize || inner instanceof QuantStub || inner instanceof Identity || inner instanceof Dropout)
    return priorOf(gm, arg.args[0]);
  if (inner instanceof FusedConvBase) {
    if (inner.withAdd) return `its input comes from ${name}, fused with an add`;
    const stats = absorbedBatchNormOf(weightedLayer(inner)!.layer);
    if (!stats) return `its input comes from ${name}, which had no BatchNorm`;
    const normalised: Prior = { gaussian: true, mean: stats.mean, std: stats.std };
    if (inner.activation === 'relu') return activate(normalised, (y) => Math.max(0, y), name);
    if (inner.activation === 'relu6') return activate(normalised, relu6, name);
    return normalised;
  }
  const f = inner ? activationOf(inner) : null;
  if (f) {
    const p = priorOf(gm, arg.args[0]);
    return typeof p === 'string' ? p : activate(p, f, name);
  }
  if (inner && MEAN_PRESERVING.some((cls) => inner instanceof cls)) {
    const p = priorOf(gm, arg.args[0]);
    return typeof p === 'string' ? p : meansOf(p);
  }
  return `its input comes from ${name}, whose output mean is not derived`;
}

/** The prior's means as the layer's input channels: a linear layer after a flatten sees each channel's mean repeated. */
function inputMeans(p: Prior, channels: number, isLinear: boolean): Float64Array | string {
  const c = p.mean.length;
  if (c === channels) return Float64Array.from(p.mean);
  if (isLinear && channels % c === 0) {
    const k = channels / c;
    return Float64Array.from({ length: channels }, (_, i) => p.mean[Math.floor(i / k)]!);
  }
  return `its input has ${c} channels with a known mean, the layer ${channels}`;
}

/**
 * Corrects the bias of every conv and linear layer of a calibrated model whose input mean follows from an absorbed
 * BatchNorm (the analytic form of correctBias: no data is run). A layer fed by the model input, an add, a max pool, a
 * concatenation or a layer without BatchNorm is left as it is and listed in `skipped` with the reason. Only models
 * whose BatchNorms were fused by prepareQatFx (or fuseFx / fuseModules) carry the statistics: an exporter that folded
 * BatchNorm into the conv before QTK saw it leaves nothing to derive from.
 */
export function correctBiasAnalytic(calibrated: GraphModule): BiasCorrectionResult {
  requireValidation(calibrated, 'correctBiasAnalytic');
  const layers: BiasCorrection[] = [];
  const skipped: { name: string; reason: string }[] = [];
  for (const l of correctedLayers(calibrated)) {
    const p = priorOf(calibrated, l.input);
    const means = typeof p === 'string' ? p : inputMeans(p, l.means.sums.length, l.layer.weight.ndim === 2);
    if (typeof means === 'string') skipped.push({ name: l.name, reason: means });
    else layers.push(applyBiasCorrection(l, means));
  }
  return { layers, samples: 0, skipped };
}
