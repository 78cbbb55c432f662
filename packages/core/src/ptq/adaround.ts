// AdaRound (Nagel et al., "Up or Down? Adaptive Rounding for Post-Training Quantization", 2020): instead of
// rounding each weight to its nearest grid point, each layer learns whether to round down or up so that its
// output on the calibration data stays closest to the float layer's. Per weight, with w/s = ⌊w/s⌋ + rest,
//   h(V) = clamp(σ(V)·(ζ − γ) + γ, 0, 1),  w̃ = s · clamp(⌊w/s⌋ + h(V), qmin, qmax),
// V starts where h(V) = rest and minimizes  ‖W x − W̃ x‖² + λ Σ (1 − |2h(V) − 1|^β),  β annealed from 20 to 2,
// which pushes every h to 0 or 1. The layers are taken in graph order, each on the inputs the model gives it
// with the earlier layers already rounded. The chosen grid values become the layer's float weight, so the
// march's own weight rounding reproduces exactly those integers: conversion, export and compare need nothing new.
import type { FakeQuantize } from '@qtk/fake-quant';
import { type GraphModule, subAt } from '@qtk/ir';
import { Adam, Parameter } from '@qtk/nn';
import { Generator, InvalidArgumentError, matmul, mul, noGrad, reshape, sub, Tensor, transpose } from '@qtk/tensor';
import type { CalibrationBatch } from '../calibration.js';
import { ownWeightedLayer, QatModule, weightedLayer } from '../qat-module.js';
import { type PatchPool, patchPool } from './adaround-patches.js';
import { SoftRounding } from './adaround-rounding.js';

export interface AdaRoundOptions {
  /** Optimizer steps per layer (default 1000). */
  iterations?: number;
  /** Output positions (a sample's pixels, or a linear layer's rows) per step (default 256). */
  rowsPerStep?: number;
  /** Output positions sampled from the calibration inputs per layer, the pool steps draw from (default 16384). */
  poolRows?: number;
  /** λ, the weight of the rounding regulariser (default 0.01). */
  regularization?: number;
  /** β from its first to its last value over the steps after the warm start (default [20, 2]). */
  betaRange?: readonly [number, number];
  /** Share of the steps run without the regulariser first (default 0.2). */
  warmStart?: number;
  /** Adam's learning rate (default 0.01: within 1000 steps, 0.001 leaves most of the gain on the table). */
  learningRate?: number;
  /** Seed of the position sampling (default 0). */
  seed?: number;
  /** Called as each layer starts and every 100 steps: the layer's path, its index, the layer count and the step. */
  onProgress?: (progress: {
    layer: string;
    index: number;
    layers: number;
    iteration: number;
    iterations: number;
  }) => void;
}

export interface AdaRoundLayer {
  /** The layer's module path. */
  readonly name: string;
  /** Weights rounded the other way than to nearest, and all of them. */
  readonly flipped: number;
  readonly weights: number;
  /** Mean squared output error against the float layer at the sampled positions, rounded to nearest and after. */
  readonly mseNearest: number;
  readonly mseAdaRound: number;
  /** The learnt rounding did not beat rounding to nearest on the sampled positions, so the layer kept nearest. */
  readonly keptNearest: boolean;
}

export interface AdaRoundResult {
  readonly layers: readonly AdaRoundLayer[];
  /** Layers left rounded to nearest, with the reason. */
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
  /** Calibration samples each layer's inputs came from. */
  readonly samples: number;
}

/** One layer to round: its QAT module, path, weight fake-quant. */
interface Target {
  readonly name: string;
  readonly qat: QatModule;
  readonly fq: FakeQuantize;
}

function targetsOf(gm: GraphModule): Target[] {
  const out: Target[] = [];
  const seen = new Set<QatModule>();
  for (const n of gm.graph.nodes) {
    if (n.op !== 'call_module' || n.method !== undefined) continue;
    const m = subAt(gm, n.target);
    if (!(m instanceof QatModule) || !m.weightFakeQuant || seen.has(m)) continue;
    // a transposed conv's weight is [in, out / groups, ...]; its per-channel scales run along axis 1: not rounded here
    if (weightedLayer(m.module)?.chAxis !== 0) continue;
    seen.add(m);
    out.push({ name: n.target, qat: m, fq: m.weightFakeQuant as FakeQuantize });
  }
  return out;
}

/** Thrown by the capturing hook once a layer's input is recorded: the rest of the forward pass is not needed. */
class LayerReached extends Error {}

/**
 * The samples of every batch's first-argument tensor reaching `qat`, stacked: [samples, ...one sample]. Each
 * forward stops at the layer (a layer shared by several calls records its first), so capturing the layers in order
 * costs about half a forward pass of the calibration batches per layer.
 */
function capturedInputs(gm: GraphModule, qat: QatModule, batches: Iterable<CalibrationBatch>): Tensor {
  const parts: Tensor[] = [];
  const handle = qat.registerForwardPreHook((_m, args) => {
    parts.push(args[0] as Tensor);
    throw new LayerReached();
  });
  try {
    noGrad(() => {
      for (const batch of batches) {
        try {
          gm.call(...(Array.isArray(batch) ? batch : [batch]));
        } catch (e) {
          if (!(e instanceof LayerReached)) throw e;
        }
      }
    });
  } finally {
    handle.remove();
  }
  if (parts.length === 0) throw new InvalidArgumentError('adaround: no calibration batches reached the layer');
  const inner = parts[0]!.shape.slice(1);
  const rows = parts.reduce((n, p) => n + p.shape[0]!, 0);
  const data = new Float32Array(rows * inner.reduce((a, b) => a * b, 1));
  let at = 0;
  for (const p of parts) {
    data.set(p.values(), at);
    at += p.size;
  }
  return new Tensor({ data, shape: [rows, ...inner], dtype: 'float32' });
}

/** Rows `rows` of axis 1 of a [groups, rows, width] tensor, as one [groups, rows.length, width] tensor. */
function rowsOf(x: Tensor, rows: readonly number[]): Tensor {
  const [groups, all, width] = x.shape as [number, number, number];
  const src = x.values();
  const data = new Float32Array(groups * rows.length * width);
  for (let g = 0; g < groups; g++)
    for (const [i, r] of rows.entries()) {
      const from = (g * all + r) * width;
      data.set(src.subarray(from, from + width), (g * rows.length + i) * width);
    }
  return new Tensor({ data, shape: [groups, rows.length, width], dtype: 'float32' });
}

type Layer = { weight: Tensor; forward(x: Tensor): Tensor };

/** patches × weight per group: [G, M, J] × [cout, ...] viewed as [G, cout/G, J]. */
function product(patches: Tensor, weight: Tensor): Tensor {
  const [groups, , j] = patches.shape as [number, number, number];
  return matmul(patches, transpose(reshape(weight, [groups, weight.size / (groups * j), j])));
}

function meanSquaredError(a: Tensor, b: Tensor): number {
  const av = a.values();
  const bv = b.values();
  let s = 0;
  for (let i = 0; i < av.length; i++) s += (av[i]! - bv[i]!) ** 2;
  return s / Math.max(1, av.length);
}

/** Whether the pool's targets are its patches times the float weight (the geometry was read right). */
function poolMatches(pool: PatchPool, weight: Tensor): boolean {
  const got = noGrad(() => product(pool.patches, weight)).values();
  const want = pool.targets.values();
  let peak = 1e-6;
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    peak = Math.max(peak, Math.abs(want[i]!));
    worst = Math.max(worst, Math.abs(want[i]! - got[i]!));
  }
  return worst <= 1e-3 * peak;
}

/**
 * Learns the rounding of every conv and linear weight of a calibrated model (prepareQatFx's result after
 * calibration, its fake-quants in VALIDATION) on `batches` (the calibration batches, iterated once per layer) and
 * puts the rounded weights in its layers (copies: the float model keeps its own). Weight scales stay those
 * calibration chose. Transposed convolutions are left as they are. Returns per layer how many weights changed
 * their rounding and the output error before and after, measured on the calibration inputs.
 */
export function adaround(
  calibrated: GraphModule,
  batches: Iterable<CalibrationBatch>,
  options: AdaRoundOptions = {},
): AdaRoundResult {
  const iterations = options.iterations ?? 1000;
  const rowsPerStep = options.rowsPerStep ?? 256;
  const poolRows = options.poolRows ?? 16384;
  const lambda = options.regularization ?? 0.01;
  const [betaStart, betaEnd] = options.betaRange ?? [20, 2];
  const warm = Math.floor((options.warmStart ?? 0.2) * iterations);
  for (const [name, v] of Object.entries({ iterations, rowsPerStep, poolRows }))
    if (!Number.isInteger(v) || v < 1)
      throw new InvalidArgumentError(`adaround: ${name} must be a positive integer, got ${v}`);
  const observing = calibrated.namedModules().find(([, m]) => {
    const state = (m as unknown as Partial<FakeQuantize>).fakeQuantState;
    return state !== undefined && state !== 'VALIDATION';
  });
  if (observing)
    throw new InvalidArgumentError(
      `adaround: fake-quant '${observing[0]}' is in ${(observing[1] as FakeQuantize).fakeQuantState}, so the run would change its statistics; round a calibrated model (setFakeQuantize(model, 'VALIDATION') after calibration)`,
    );
  const targets = targetsOf(calibrated);
  const g = new Generator(options.seed ?? 0);
  const wasTraining = calibrated.training;
  calibrated.eval();
  const layers: AdaRoundLayer[] = [];
  const skipped: { name: string; reason: string }[] = [];
  let samples = 0;
  try {
    for (const [index, t] of targets.entries()) {
      options.onProgress?.({ layer: t.name, index, layers: targets.length, iteration: 0, iterations });
      const inputs = capturedInputs(calibrated, t.qat, batches);
      samples = inputs.shape[0]!;
      const found = weightedLayer(t.qat.module)!.layer as unknown as Layer;
      const pool = patchPool(
        found,
        inputs,
        noGrad(() => found.forward(inputs)),
        poolRows,
        g,
      );
      if (!pool || !poolMatches(pool, found.weight)) {
        skipped.push({ name: t.name, reason: `${found.constructor.name}'s output is not read as patches × weights` });
        continue;
      }
      const layer = ownWeightedLayer(t.qat)!.layer as unknown as Layer;
      const w = layer.weight;
      const rounding = new SoftRounding(w, t.fq);
      const optimizer = new Adam([rounding.v], { lr: options.learningRate ?? 1e-2 });
      const poolSize = pool.patches.shape[1]!;
      const outChannels = w.shape[0]!;
      for (let it = 0; it < iterations; it++) {
        const rows = Array.from({ length: Math.min(rowsPerStep, poolSize) }, () => g.int(poolSize));
        const patches = rowsOf(pool.patches, rows);
        const diff = noGrad(() => sub(product(patches, rounding.soft()), rowsOf(pool.targets, rows)));
        // the loss: the squared error summed over output channels, averaged over positions; its gradient with
        // respect to the soft weights is (2 · cout / size) · diffᵀ · patches per group
        const gradWeight = noGrad(() => matmul(transpose(mul(diff, (2 * outChannels) / diff.size)), patches)).values();
        const beta =
          it >= warm ? betaStart + ((betaEnd - betaStart) * (it - warm)) / Math.max(1, iterations - warm - 1) : null;
        rounding.backward(gradWeight, beta, lambda);
        optimizer.step();
        if ((it + 1) % 100 === 0 || it + 1 === iterations)
          options.onProgress?.({ layer: t.name, index, layers: targets.length, iteration: it + 1, iterations });
      }
      const learnt = rounding.hard();
      const nearest = noGrad(() => t.fq.call(w));
      const mseNearest = meanSquaredError(
        noGrad(() => product(pool.patches, nearest)),
        pool.targets,
      );
      const mseLearnt = meanSquaredError(
        noGrad(() => product(pool.patches, learnt)),
        pool.targets,
      );
      // too few steps can leave a rounding worse than nearest: the layer keeps nearest rounding then
      const keptNearest = !(mseLearnt < mseNearest);
      const rounded = keptNearest ? nearest : learnt;
      let flipped = 0;
      const rv = rounded.values();
      const nv = nearest.values();
      for (let i = 0; i < rv.length; i++) if (rv[i] !== nv[i]) flipped++;
      layer.weight = new Parameter(rounded, w.requiresGrad);
      layers.push({
        name: t.name,
        flipped,
        weights: w.size,
        mseNearest,
        mseAdaRound: keptNearest ? mseNearest : mseLearnt,
        keptNearest,
      });
    }
  } finally {
    calibrated.train(wasTraining);
  }
  return { layers, skipped, samples };
}
