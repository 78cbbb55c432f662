// Small ONNX graphs of the decomposed patterns exporters write (GELU, LayerNorm, SiLU, HardSwish), for
// the importer's fusion tests, and helpers to run them in QTK and onnxruntime-node. Not exported by the package.
import type { GraphModule } from '@qtk/ir';
import { opOfNode } from '@qtk/spec';
import { Generator, randn, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { DataType, type NodeMsg, type TensorMsg } from '../onnx-schema.js';
import { handMadeModel, valueInfo } from './hand-made-model.js';

export const X_SHAPE = [2, 5, 8];

/** A float32 initializer; a scalar when `values` has one entry and no dims are given. */
export function floats(name: string, values: number[], dims: number[] = values.length === 1 ? [] : [values.length]) {
  const data = Float32Array.from(values);
  return { name, dims, data_type: DataType.FLOAT, raw_data: new Uint8Array(data.buffer) } satisfies TensorMsg;
}

/** Attributes by kind: floats (f), integers (i) and integer lists (ints). */
export interface NodeAttrs {
  f?: Record<string, number>;
  i?: Record<string, number>;
  ints?: Record<string, number[]>;
}

/** A node of the default domain, named as PyTorch names them ('/block/Erf_e'). */
export function node(op: string, input: string[], output: string, attrs: NodeAttrs = {}): NodeMsg {
  const attribute = [
    ...Object.entries(attrs.f ?? {}).map(([name, f]) => ({ name, f, type: 1 })),
    ...Object.entries(attrs.i ?? {}).map(([name, i]) => ({ name, i, type: 2 })),
    ...Object.entries(attrs.ints ?? {}).map(([name, ints]) => ({ name, ints, type: 7 })),
  ];
  return { op_type: op, name: `/block/${op}_${output}`, input, output: [output], attribute };
}

/** A model of `nodes` from x [2, 5, 8] to y (and any `extraOutputs`), with the given initializers. */
export function patternModel(
  nodes: NodeMsg[],
  initializer: TensorMsg[],
  { opset = 13, extraOutputs = [] as string[] } = {},
): Uint8Array {
  return handMadeModel(
    nodes,
    {
      input: [valueInfo('x', X_SHAPE)],
      output: [valueInfo('y', X_SHAPE), ...extraOutputs.map((o) => valueInfo(o, X_SHAPE))],
      initializer,
    },
    opset,
  );
}

/** The catalog op (or the target's name) of every call_module and call_function node, in graph order. */
export function opsOf(gm: GraphModule): string[] {
  return [...gm.graph.nodes]
    .filter((n) => n.op === 'call_module' || n.op === 'call_function')
    .map((n) => opOfNode(gm, n)?.op ?? String(n.target));
}

export function exampleInput(seed = 7, scale = 3): Tensor {
  return randn(X_SHAPE, { generator: new Generator(seed) }).mul(scale);
}

/** onnxruntime-node's first output for input x. */
export async function runtimeOutput(bytes: Uint8Array, x: Tensor): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
  const out = await session.run({ x: new ort.Tensor('float32', x.values() as Float32Array, [...x.shape]) });
  return out[session.outputNames[0]!]!.data as Float32Array;
}

/** max |a − b| / max |b|. */
export function relativeError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let diff = 0;
  let ref = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    ref = Math.max(ref, Math.abs(b[i]!));
  }
  return diff / ref;
}
