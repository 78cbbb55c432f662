// Shared steps of the conversion tests (convert-*.test.ts, model-file.test.ts): build a calibrated
// QAT model, call models, find the output step and measure fixed-point vs fake-quant in output
// steps. Not a test file itself (vitest includes *.test.ts only) and not part of the package build.
import { FakeQuantize, setFakeQuantize } from '@qtk/fake-quant';
import { FixedAdd, FixedCat, FixedMul } from '@qtk/fixed-point';
import type { GraphModule, Node } from '@qtk/ir';
import { Conv3d, DeQuantStub, Module, QuantStub, Softmax, type BatchNorm2d } from '@qtk/nn';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { calibrate, getMarch, prepareQatFx, QatModule, type PrepareQatFxOptions, type QConfigDict } from '../index.js';
import '@qtk/march-bayes';

/** Calls a model (traced or eager) with tensor arguments. */
export const callModel = (m: Module, ...args: Tensor[]): Tensor =>
  (m as unknown as { call(...a: Tensor[]): Tensor }).call(...args);

/**
 * prepareQatFx (for the selected march, else bayes) + calibrate on `batches`; then the fake-quants are frozen in VALIDATION unless
 * `validation` is false (the model stays as calibrate leaves it).
 */
export function calibratedQat(
  model: Module,
  qconfig: QConfigDict,
  batches: Iterable<Tensor | Tensor[]>,
  options: { prepare?: PrepareQatFxOptions; validation?: boolean } = {},
): GraphModule {
  // prepare needs a march: the tests convert for one or both marches, and bayes carries every dtype either has
  const gm = prepareQatFx(model, qconfig, { march: getMarch() ?? 'bayes', ...options.prepare });
  calibrate(gm, batches);
  if (options.validation !== false) setFakeQuantize(gm, 'VALIDATION');
  return gm;
}

/** Non-trivial BatchNorm statistics: running mean in [−0.1, 0.1), running var in [0.5, 1), from generator seed + i for BN i. */
export function setBatchNormStats(bns: readonly BatchNorm2d[], seed: number): void {
  for (const [i, bn] of bns.entries()) {
    const g = new Generator(seed + i);
    const c = bn.runningMean!.size;
    bn.runningMean!.values().set(rand([c], { generator: g }).mul(0.2).sub(0.1).values() as Float32Array);
    bn.runningVar!.values().set(rand([c], { generator: g }).mul(0.5).add(0.5).values() as Float32Array);
  }
}

export const moduleAt = (gm: GraphModule, n: Node): Module | null =>
  n.op === 'call_module' ? gm.getSubmodule(n.target) : null;

/** The scale of the value the DeQuantStub receives: the nearest activation fake-quant upstream. */
export function outputStep(gm: GraphModule): number {
  const dq = gm.graph.nodes.find((n) => moduleAt(gm, n) instanceof DeQuantStub)!;
  let n: Node = dq.inputNodes[0]!;
  for (;;) {
    const m = moduleAt(gm, n);
    const fq = m instanceof FakeQuantize ? m : m instanceof QatModule ? m.activationPostProcess : null;
    if (fq) return fq.calculateQparams().scale[0]!;
    n = n.inputNodes[0]!;
  }
}

/**
 * Largest |want − got| / step over the elements. `onGrid`: both read back as integers on the
 * output grid first (so float32 rounding of q·s is not counted).
 */
export function maxSteps(want: Tensor, got: Tensor, step: number, onGrid = false): number {
  const w = want.values();
  const c = got.values();
  let worst = 0;
  for (let i = 0; i < w.length; i++) {
    const d = onGrid ? Math.abs(Math.round(w[i]! / step) - Math.round(c[i]! / step)) : Math.abs(w[i]! - c[i]!) / step;
    worst = Math.max(worst, d);
  }
  return worst;
}

/** What `fn` throws (undefined when it returns), for asserting on a conversion's error. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** quant → Conv3d and Softmax side by side → dequant, added: two nodes bernoulli2 converts neither of. */
export class Conv3dSoftmaxNet extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly conv3d = new Conv3d(1, 1, 3, { padding: 1, generator: new Generator(1) });
  readonly softmax = new Softmax({ dim: 1 });
  readonly dq1 = new DeQuantStub();
  readonly dq2 = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const q = this.quant.call(x);
    return this.dq1.call(this.conv3d.call(q)).add(this.dq2.call(this.softmax.call(q)));
  }
}

/** The FixedCat of a converted `cat([add(a, b), mul(a, b), ...])` and the FixedAdd / FixedMul that feed it. */
export function catAndProducers(fixed: GraphModule): { cat: FixedCat; add: FixedAdd; mul: FixedMul } {
  const mods = [...fixed.modules()];
  return {
    cat: mods.find((m) => m instanceof FixedCat) as FixedCat,
    add: mods.find((m) => m instanceof FixedAdd) as FixedAdd,
    mul: mods.find((m) => m instanceof FixedMul) as FixedMul,
  };
}

/** [m, n, pre] of the requantization of each input of a FixedCat: [1, 0, 0] where the input is copied. */
export const catInputRequants = (c: FixedCat): number[][] =>
  c.config.requants.map((r) => [r.m[0]!, r.n[0]!, r.pre[0]!]);
