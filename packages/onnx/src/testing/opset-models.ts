// One-node (or few-node) ONNX models at a chosen opset, with any inputs, attributes of every kind and integer
// initializers, and onnxruntime-node's outputs for them: the importer's checks of the opset 18–21 forms.
// Not exported by the package.
import type { Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { DataType, encodeModel, type AttributeMsg, type NodeMsg, type TensorMsg } from '../onnx-schema.js';
import { floatInitializer, valueInfo } from './hand-made-model.js';

/** An attribute value: a number is an int unless `float()` wraps it; a string, int list or float list. */
export type AttrValue = number | string | number[] | { float: number } | { floats: number[] };

export const float = (f: number): { float: number } => ({ float: f });

function attribute(name: string, v: AttrValue): AttributeMsg {
  if (typeof v === 'number') return { name, type: 2, i: v };
  if (typeof v === 'string') return { name, type: 3, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: 7, ints: v };
  if ('float' in v) return { name, type: 1, f: v.float };
  return { name, type: 6, floats: v.floats };
}

/** A default-domain node named after its first output. */
export function op(opType: string, input: string[], output: string[], attrs: Record<string, AttrValue> = {}): NodeMsg {
  return {
    op_type: opType,
    name: `${opType}_${output[0]}`,
    input,
    output,
    attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
  };
}

/** An int64 initializer (axes, pads, sizes, indices). */
export function int64s(name: string, values: number[], dims: number[] = [values.length]): TensorMsg {
  const data = BigInt64Array.from(values.map(BigInt));
  return { name, dims, data_type: DataType.INT64, raw_data: new Uint8Array(data.buffer) };
}

/** A float32 initializer. */
export function float32s(name: string, values: number[], dims: number[] = [values.length]): TensorMsg {
  return floatInitializer(name, dims, values);
}

export interface ModelSpec {
  nodes: NodeMsg[];
  /** Graph inputs: name → shape (float32 unless `elem` is given). */
  inputs: Record<string, number[] | { shape: number[]; elem: number }>;
  /** Graph outputs: name → element type (float32 by default); shapes are left undeclared. */
  outputs: string[] | Record<string, number>;
  initializers?: TensorMsg[];
  opset: number;
}

/** The model's bytes, at IR version 10 (what opset 21 needs; onnxruntime reads it for every opset). */
export function opsetModel(spec: ModelSpec): Uint8Array {
  const outputs = Array.isArray(spec.outputs)
    ? Object.fromEntries(spec.outputs.map((o) => [o, DataType.FLOAT]))
    : spec.outputs;
  return encodeModel({
    ir_version: 10,
    opset_import: [{ domain: '', version: spec.opset }],
    graph: {
      name: 'g',
      node: spec.nodes,
      input: Object.entries(spec.inputs).map(([name, s]) =>
        Array.isArray(s) ? valueInfo(name, s) : valueInfo(name, s.shape, s.elem),
      ),
      output: Object.entries(outputs).map(([name, elem]) => ({ name, type: { tensor_type: { elem_type: elem } } })),
      initializer: spec.initializers ?? [],
    },
  });
}

/** onnxruntime-node's outputs (as numbers, in graph order) for float32 or bool feeds. */
export async function runtimeOutputs(bytes: Uint8Array, feeds: Record<string, Tensor>): Promise<number[][]> {
  const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
  const ortFeeds = Object.fromEntries(
    Object.entries(feeds).map(([k, t]) => [
      k,
      t.dtype === 'bool'
        ? new ort.Tensor('bool', Uint8Array.from(t.values() as ArrayLike<number>), [...t.shape])
        : new ort.Tensor('float32', Float32Array.from(t.values() as ArrayLike<number>), [...t.shape]),
    ]),
  );
  const out = await session.run(ortFeeds);
  return session.outputNames.map((n) => Array.from(out[n]!.data as ArrayLike<number | boolean>, Number));
}
