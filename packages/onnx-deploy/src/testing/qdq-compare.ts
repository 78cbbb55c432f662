// Runs an exported QDQ model in onnxruntime-node and QTK's fake-quant model on the same input, and
// compares every fake-quantized value (in steps of its scale) and the output.
import { QatModule } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { noGrad, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { NODE_VALUES_KEY, decodeModel, encodeModel } from '@qtk/onnx';

export interface ValueDiff {
  /** QTK node name. */
  node: string;
  /** Largest |ORT − QTK| in (whole) steps of the fake-quant's scale (per channel when it has one per channel). */
  maxSteps: number;
  /** Elements that differ at all. */
  differing: number;
  size: number;
}

export interface RuntimeComparison {
  /** Every fake-quantized value the graph computes, in execution order. */
  values: ValueDiff[];
  /** The model output: largest |ORT − QTK| and the count of differing elements. */
  outputMaxAbs: number;
  outputDiffering: number;
  outputSize: number;
}

export type OrtOptimization = 'disabled' | 'all';

/** The active output fake-quant a call_module node ends with, or null. */
function outputFakeQuant(m: Module): FakeQuantize | null {
  const fq = m instanceof QatModule ? m.activationPostProcess : m instanceof FakeQuantize ? m : null;
  return fq && fq.fakeQuantState !== 'CALIBRATION' ? fq : null;
}

/** The model bytes with `names` added as graph outputs (their value_info gives the types). */
function withOutputs(bytes: Uint8Array, names: readonly string[]): Uint8Array {
  const model = decodeModel(bytes);
  const g = model.graph!;
  const info = new Map((g.value_info ?? []).map((v) => [v.name, v]));
  g.output = [...(g.output ?? []), ...names.map((n) => info.get(n)!)];
  return encodeModel(model);
}

/** Runs both on `x` (ORT with one thread and the given graph optimization). */
export async function compareWithOrt(
  gm: GraphModule,
  bytes: Uint8Array,
  x: Tensor,
  optimization: OrtOptimization,
): Promise<RuntimeComparison> {
  const model = decodeModel(bytes);
  const pairs = JSON.parse(model.metadata_props!.find((p) => p.key === NODE_VALUES_KEY)!.value!) as [string, string][];
  const onnxName = new Map(pairs);
  const recorded = new Map<string, { fq: FakeQuantize; value: Tensor }>();
  const handles = gm.graph.nodes.flatMap((node) => {
    if (node.op !== 'call_module') return [];
    const fq = outputFakeQuant(gm.getSubmodule(node.target));
    if (!fq || !onnxName.has(node.name)) return [];
    return [
      gm.getSubmodule(node.target).registerForwardHook((_m, _a, out) => {
        recorded.set(node.name, { fq, value: out as Tensor });
      }),
    ];
  });
  const want = noGrad(() => gm.call(x)) as Tensor;
  for (const h of handles) h.remove();
  const nodes = [...recorded.keys()];
  const session = await ort.InferenceSession.create(
    withOutputs(
      bytes,
      nodes.map((n) => onnxName.get(n)!),
    ),
    {
      executionProviders: ['cpu'],
      graphOptimizationLevel: optimization,
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      logSeverityLevel: 3,
    },
  );
  const input = new ort.Tensor('float32', Float32Array.from(x.values() as Float32Array), x.shape);
  const res = await session.run({ [session.inputNames[0]!]: input });
  const values = nodes.map((node): ValueDiff => {
    const { fq, value } = recorded.get(node)!;
    const got = res[onnxName.get(node)!]!.data as Float32Array;
    const exp = value.values();
    const scales = fq.scale.values();
    const axis = fq.options.chAxis;
    const inner = axis < 0 ? exp.length : value.shape.slice(axis + 1).reduce((a, d) => a * d, 1);
    let maxSteps = 0;
    let differing = 0;
    for (let i = 0; i < exp.length; i++) {
      const d = Math.abs(got[i]! - exp[i]!);
      if (d === 0) continue;
      differing++;
      const s = scales[axis < 0 ? 0 : Math.floor(i / inner) % scales.length]!;
      // both values are integers times s rounded to float32: the quotient is within 0.01 of the integer step count
      maxSteps = Math.max(maxSteps, Math.round(d / s));
    }
    return { node, maxSteps, differing, size: exp.length };
  });
  const out = res[session.outputNames[0]!]!.data as Float32Array;
  const w = want.values();
  let outputMaxAbs = 0;
  let outputDiffering = 0;
  for (let i = 0; i < w.length; i++) {
    const d = Math.abs(out[i]! - w[i]!);
    if (d > 0) outputDiffering++;
    outputMaxAbs = Math.max(outputMaxAbs, d);
  }
  return { values, outputMaxAbs, outputDiffering, outputSize: w.length };
}
