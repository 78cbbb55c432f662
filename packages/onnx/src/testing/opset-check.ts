// Imports a hand-built model, runs it in QTK and in onnxruntime-node on the same inputs, and returns both,
// for the importer's opset tests. Not exported by the package.
import type { Tensor } from '@qtk/tensor';
import { importOnnx, type OnnxGraphModule } from '../import/import-onnx.js';
import { type ModelSpec, opsetModel, runtimeOutputs } from './opset-models.js';

export interface Agreement {
  gm: OnnxGraphModule;
  /** QTK's outputs, flattened, in graph order. */
  qtk: number[][];
  shapes: number[][];
  runtime: number[][];
  /** max |qtk − runtime| / max |runtime| over all outputs (0 when both are all zero). */
  relError: number;
}

export async function compareWithOrt(spec: ModelSpec, feeds: Record<string, Tensor>): Promise<Agreement> {
  const bytes = opsetModel(spec);
  const gm = importOnnx(bytes);
  const result = gm.call(...Object.keys(spec.inputs).map((k) => feeds[k]!)) as Tensor | Tensor[];
  const outs = Array.isArray(result) ? result : [result];
  const qtk = outs.map((t) => Array.from(t.values() as ArrayLike<number>, Number));
  const runtime = await runtimeOutputs(bytes, feeds);
  let diff = 0;
  let ref = 0;
  runtime.forEach((r, k) => {
    if (r.length !== qtk[k]!.length) diff = Infinity;
    r.forEach((v, i) => {
      diff = Math.max(diff, Math.abs(v - (qtk[k]![i] ?? Number.NaN)));
      ref = Math.max(ref, Math.abs(v));
    });
  });
  return { gm, qtk, shapes: outs.map((t) => [...t.shape]), runtime, relError: diff === 0 ? 0 : diff / ref };
}
