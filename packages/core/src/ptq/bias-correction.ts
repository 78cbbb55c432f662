// Bias correction after calibration (data-free quantization's empirical form): a layer whose weight W is quantized
// to Wq computes Wq·x + b, whose expectation misses the float layer's by (Wq − W)·E[x]. With E[x], each input
// channel's mean over the calibration samples as the calibrated model sees them (its fake-quants applying their
// scales), the bias becomes b − (Wq − W)·E[x], one value per output channel. Conversion quantizes that bias like any
// other, so the integer bias of every march carries the correction.
import { FakeQuantize } from '@qtk/fake-quant';
import { type GraphModule, subAt } from '@qtk/ir';
import { Parameter } from '@qtk/nn';
import { InvalidArgumentError, noGrad, Tensor } from '@qtk/tensor';
import type { CalibrationBatch } from '../calibration.js';
import { ownWeightedLayer, QatModule, weightedLayer } from '../qat-module.js';

export interface BiasCorrection {
  /** The layer's module path. */
  readonly name: string;
  /** The largest |correction| over its output channels, in the output's units. */
  readonly maxAbs: number;
}

export interface BiasCorrectionResult {
  readonly layers: readonly BiasCorrection[];
  /** How many calibration samples the input means came from (0 for the analytic form, which runs no data). */
  readonly samples: number;
  /** Layers left as they were, and why (the analytic form, where a layer's input mean cannot be derived). */
  readonly skipped?: readonly { readonly name: string; readonly reason: string }[];
}

/** Running per-channel sums of a layer's input: channel axis 1 for a conv, the last axis for a linear layer. */
class ChannelMeans {
  readonly sums: Float64Array;
  count = 0;

  constructor(
    channels: number,
    private readonly lastAxis: boolean,
  ) {
    this.sums = new Float64Array(channels);
  }

  add(x: Tensor): void {
    const v = x.values();
    const c = this.sums.length;
    if (this.lastAxis) {
      for (let i = 0; i < v.length; i++) this.sums[i % c]! += v[i]!;
      this.count += v.length / c;
      return;
    }
    const n = x.shape[0]!;
    const inner = v.length / (n * c);
    for (let b = 0, i = 0; b < n; b++)
      for (let ch = 0; ch < c; ch++) {
        let s = 0;
        for (const end = i + inner; i < end; i++) s += v[i]!;
        this.sums[ch]! += s;
      }
    this.count += n * inner;
  }

  means(): Float64Array {
    return this.sums.map((s) => s / Math.max(1, this.count));
  }
}

export interface CorrectedLayer {
  readonly name: string;
  /** The layer's graph node's first input. */
  readonly input: unknown;
  readonly layer: { weight: Tensor; bias?: Tensor | null; groups?: number };
  readonly fq: FakeQuantize;
  readonly means: ChannelMeans;
}

/** The conv and linear layers of `gm` whose weights are fake-quantized, with an input-mean accumulator each. */
export function correctedLayers(gm: GraphModule): CorrectedLayer[] {
  const out: CorrectedLayer[] = [];
  for (const n of gm.graph.nodes) {
    if (n.op !== 'call_module' || n.method !== undefined) continue;
    const m = subAt(gm, n.target);
    if (!(m instanceof QatModule) || !m.weightFakeQuant) continue;
    // a transposed conv's weight is [in, out / groups, ...]: left as it is
    if (weightedLayer(m.module)?.chAxis !== 0) continue;
    const layer = ownWeightedLayer(m)!.layer as CorrectedLayer['layer'];
    const isLinear = layer.weight.ndim === 2;
    const cin = isLinear ? layer.weight.shape[1]! : layer.weight.shape[1]! * (layer.groups ?? 1);
    out.push({
      name: n.target,
      input: n.args[0],
      layer,
      fq: m.weightFakeQuant,
      means: new ChannelMeans(cin, isLinear),
    });
  }
  return out;
}

/** Refuses a model whose fake-quants still observe: running it (or its weight fake-quants) would change them. */
export function requireValidation(calibrated: GraphModule, caller: string): void {
  const observing = calibrated
    .namedModules()
    .find(([, m]) => m instanceof FakeQuantize && m.fakeQuantState !== 'VALIDATION');
  if (observing)
    throw new InvalidArgumentError(
      `${caller}: fake-quant '${observing[0]}' is in ${(observing[1] as FakeQuantize).fakeQuantState}, so the run would change its statistics; correct a calibrated model (setFakeQuantize(model, 'VALIDATION') after calibration)`,
    );
}

/** (Wq − W)·E[x] per output channel: each kernel's weight error summed against its group's input means. */
function expectedError(l: CorrectedLayer, mean: Float64Array): Float64Array {
  const w = l.layer.weight;
  const wv = w.values();
  const qv = noGrad(() => l.fq.call(w)).values();
  const cout = w.shape[0]!;
  const cinG = w.ndim === 2 ? w.shape[1]! : w.shape[1]!;
  const kvol = w.size / (cout * cinG);
  const perGroup = cout / (l.layer.groups ?? 1);
  const err = new Float64Array(cout);
  for (let o = 0; o < cout; o++) {
    const first = Math.floor(o / perGroup) * cinG;
    let s = 0;
    for (let c = 0; c < cinG; c++) {
      let e = 0;
      for (let k = 0, i = (o * cinG + c) * kvol; k < kvol; k++, i++) e += qv[i]! - wv[i]!;
      s += e * mean[first + c]!;
    }
    err[o] = s;
  }
  return err;
}

/**
 * Corrects the bias of every conv and linear layer of a calibrated model (prepareQatFx's result after calibration,
 * its fake-quants in VALIDATION) for the expected error its quantized weight adds, measured on `batches` (the
 * calibration batches). A layer without a bias gets one. Transposed convolutions are left as they are. The float
 * model the calibrated one was prepared from keeps its parameters. Returns each corrected layer's largest correction.
 */
export function correctBias(calibrated: GraphModule, batches: Iterable<CalibrationBatch>): BiasCorrectionResult {
  requireValidation(calibrated, 'correctBias');
  const layers = correctedLayers(calibrated);
  const byModule = new Map(layers.map((l) => [subAt(calibrated, l.name)!, l]));
  const handles = [...byModule].map(([m, l]) =>
    m.registerForwardPreHook((_m, args) => {
      l.means.add(args[0] as Tensor);
    }),
  );
  let samples = 0;
  const wasTraining = calibrated.training;
  calibrated.eval();
  try {
    noGrad(() => {
      for (const batch of batches) {
        const xs = Array.isArray(batch) ? batch : [batch];
        samples += xs[0]!.shape[0] ?? 1;
        calibrated.call(...xs);
      }
    });
  } finally {
    for (const h of handles) h.remove();
    calibrated.train(wasTraining);
  }
  if (samples === 0) throw new InvalidArgumentError('correctBias: no calibration batches; pass the calibration data');
  return { layers: layers.map((l) => applyBiasCorrection(l, l.means.means())), samples };
}

/** Subtracts (Wq − W)·E[x] from the layer's bias (a new Parameter: the old one may be the float model's too). */
export function applyBiasCorrection(l: CorrectedLayer, inputMeans: Float64Array): BiasCorrection {
  const err = expectedError(l, inputMeans);
  const bv = l.layer.bias ? l.layer.bias.values() : null;
  const next = new Float32Array(err.length);
  let maxAbs = 0;
  for (let o = 0; o < err.length; o++) {
    next[o] = (bv ? bv[o]! : 0) - err[o]!;
    maxAbs = Math.max(maxAbs, Math.abs(err[o]!));
  }
  l.layer.bias = new Parameter(
    new Tensor({ data: next, shape: [next.length], dtype: 'float32' }),
    l.layer.weight.requiresGrad,
  );
  return { name: l.name, maxAbs };
}
