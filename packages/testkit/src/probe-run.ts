import { calibrate, convertFx, modelFromBytes, modelToBytes, prepareQatFx, QatModule } from '@qtk/core';
import { FakeQuantize, type QConfig, setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule, Node } from '@qtk/ir';
import { DeQuantStub, type Module } from '@qtk/nn';
import type { MarchBackendV1 } from '@qtk/spec';
import { InvalidArgumentError, noGrad, Tensor } from '@qtk/tensor';
import type { ProbeCase } from './probes.js';

/** A probe model prepared for the march, calibrated on its batches, with its fake-quants frozen. */
export function calibratedProbe(march: MarchBackendV1, probe: ProbeCase, qconfig: QConfig): GraphModule {
  const gm = prepareQatFx(probe.model, { global: qconfig }, { march: march.id, onWarning: () => {} });
  calibrate(
    gm,
    probe.batches.map((b) => [...b]),
  );
  setFakeQuantize(gm, 'VALIDATION');
  return gm;
}

export const convertProbe = (march: MarchBackendV1, qat: GraphModule): GraphModule =>
  convertFx(qat, { march: march.id, onWarning: () => {} });

const moduleAt = (gm: GraphModule, n: Node): Module | null =>
  n.op === 'call_module' ? gm.getSubmodule(n.target) : null;

/** The scale of the value the DeQuantStub receives: the nearest activation fake-quant upstream (one output step). */
export function outputStep(qat: GraphModule): number {
  const dq = qat.graph.nodes.find((n) => moduleAt(qat, n) instanceof DeQuantStub);
  let n: Node | undefined = dq?.inputNodes[0];
  while (n) {
    const m = moduleAt(qat, n);
    const fq = m instanceof FakeQuantize ? m : m instanceof QatModule ? m.activationPostProcess : null;
    if (fq) return fq.calculateQparams().scale[0]!;
    n = n.inputNodes[0];
  }
  throw new InvalidArgumentError('the probe model has no activation fake-quant in front of its DeQuantStub');
}

/**
 * The values a model returns as numbers: a float tensor's values; a march's quantized value (a boolean
 * comparison result, which the DeQuantStub passes on) by its integers, else dequantized.
 */
export function outputValues(out: unknown): Float64Array {
  if (out instanceof Tensor) return Float64Array.from(out.values() as ArrayLike<number>);
  const q = out as { dtype?: string; ints?(): ArrayLike<number>; dequantize?(): Tensor };
  if (q.dtype === 'qbool' && typeof q.ints === 'function') return Float64Array.from(q.ints());
  if (typeof q.dequantize === 'function') return Float64Array.from(q.dequantize().values() as ArrayLike<number>);
  throw new InvalidArgumentError(`a probe model returned ${String(out)}, neither a tensor nor a quantized value`);
}

export const runModel = (m: Module, args: readonly Tensor[]): Float64Array =>
  outputValues(noGrad(() => (m as unknown as { call(...a: Tensor[]): unknown }).call(...args)));

/**
 * Largest |fake-quant − fixed point| over the probe's batches in output steps, both read back as integers
 * on the output grid (float32 rounding of q·s is not counted); `exact` outputs by value.
 */
export function worstSteps(qat: GraphModule, fixed: GraphModule, probe: ProbeCase, step: number): number {
  let worst = 0;
  for (const args of probe.check ?? probe.batches) {
    const want = runModel(qat, args);
    const got = runModel(fixed, args);
    if (want.length !== got.length) {
      throw new InvalidArgumentError(
        `the fixed-point model returns ${got.length} values, the fake-quant model ${want.length}`,
      );
    }
    for (let i = 0; i < want.length; i++) {
      const d = probe.exact
        ? Math.abs(want[i]! - got[i]!)
        : Math.abs(Math.round(want[i]! / step) - Math.round(got[i]! / step));
      if (!(d <= worst)) worst = d; // NaN wins
    }
  }
  return worst;
}

/** The model after a codec round trip through the model file format. */
export const codecRoundTrip = (march: MarchBackendV1, fixed: GraphModule): GraphModule =>
  modelFromBytes(modelToBytes(fixed, { kind: 'fixed-point', march: march.id })).model;

/** Every tensor of a model's state dict, by name: dtype, shape and values. */
export function stateOf(m: Module): [string, string, readonly number[], number[]][] {
  return Object.entries(m.stateDict().tensors).map(([k, v]) => [k, v.dtype, v.shape, Array.from(v.values())]);
}

/** The outputs of every batch, for bit-for-bit comparisons. */
export const outputsOf = (m: Module, probe: ProbeCase): number[][] =>
  probe.batches.map((args) => Array.from(runModel(m, args)));
