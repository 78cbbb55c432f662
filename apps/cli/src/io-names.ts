// The ONNX names of a model's inputs and outputs: read from an imported file, saved by qtk quantize in the model
// file's meta, and given back to the export so the written file keeps the names the deployer's code uses.
import type { GraphModule } from '@qtk/ir';
import { OnnxGraphModule } from '@qtk/onnx';

export interface IoNames {
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

/** The names an imported ONNX model had; undefined for any other model. */
export function ioNamesOf(model: GraphModule): IoNames | undefined {
  if (!(model instanceof OnnxGraphModule)) return undefined;
  return { inputs: model.inputSpecs.map((s) => s.onnxName), outputs: [...model.outputNames] };
}

const names = (v: unknown): v is string[] =>
  Array.isArray(v) && v.length > 0 && v.every((n) => typeof n === 'string' && n !== '');

/** The names a model file's meta records (`io`, written by qtk quantize); undefined when absent or malformed. */
export function savedIoNames(meta: Record<string, unknown>): IoNames | undefined {
  const io = meta.io as { inputs?: unknown; outputs?: unknown } | undefined;
  if (!io || typeof io !== 'object' || !names(io.inputs) || !names(io.outputs)) return undefined;
  return { inputs: io.inputs, outputs: io.outputs };
}

/**
 * exportOnnx's inputNames / outputNames for `model` from `io`: only when the counts match the model's inputs and
 * outputs and every name is distinct (else the export's defaults).
 */
export function exportNames(
  model: GraphModule,
  io: IoNames | undefined,
): { inputNames?: string[]; outputNames?: string[] } {
  if (!io) return {};
  const outArg = model.graph.outputNode?.args[0];
  const outCount = Array.isArray(outArg) ? outArg.length : 1;
  const all = [...io.inputs, ...io.outputs];
  if (io.inputs.length !== model.graph.placeholders.length || io.outputs.length !== outCount) return {};
  if (new Set(all).size !== all.length) return {};
  return { inputNames: [...io.inputs], outputNames: [...io.outputs] };
}
