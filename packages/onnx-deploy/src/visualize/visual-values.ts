// The values of a GraphModule run node by node for the visualisation export: runtime arguments,
// value types, and the quantization a value carries.
import { QTensor } from '@qtk/fixed-point';
import { type Argument, Node } from '@qtk/ir';
import { Tensor } from '@qtk/tensor';
import { DataType, type ValueInfoMsg } from '@qtk/onnx';
import type { QuantInfo } from './describe-module.js';

const ELEM: Record<string, number> = {
  float32: DataType.FLOAT,
  int8: DataType.INT8,
  int16: DataType.INT16,
  int32: DataType.INT32,
  bool: DataType.BOOL,
};

export const isValue = (v: unknown): v is Tensor | QTensor => v instanceof Tensor || v instanceof QTensor;

export function valueInfo(name: string, v: Tensor | QTensor, dynamicBatch: boolean): ValueInfoMsg {
  const t = v instanceof QTensor ? v.data : v;
  const dim = t.shape.map((d, i) => (i === 0 && dynamicBatch ? { dim_param: 'batch' } : { dim_value: d }));
  return { name, type: { tensor_type: { elem_type: ELEM[t.dtype] ?? DataType.FLOAT, shape: { dim } } } };
}

export const quantOf = (v: QTensor): QuantInfo => ({ scale: v.scale, dtype: v.dtype, axis: v.axis });

export function sameQuant(a: QuantInfo, b: QuantInfo): boolean {
  return (
    a.dtype === b.dtype &&
    a.axis === b.axis &&
    a.scale.length === b.scale.length &&
    a.scale.every((s, i) => Object.is(s, b.scale[i]))
  );
}

export function mapArgs(a: Argument, env: Map<Node, unknown>): unknown {
  if (Array.isArray(a)) return a.map((x) => mapArgs(x as Argument, env));
  if (a instanceof Node) return env.get(a);
  if (a && typeof a === 'object' && !isValue(a))
    return Object.fromEntries(Object.entries(a as Record<string, Argument>).map(([k, v]) => [k, mapArgs(v, env)]));
  return a;
}

/** A call's runtime arguments: positional, then the kwargs object when it has any keys (as compiled graphs call). */
export function callArgs(node: Node, env: Map<Node, unknown>): unknown[] {
  const args = node.args.map((a) => mapArgs(a, env));
  if (Object.keys(node.kwargs).length > 0) args.push(mapArgs(node.kwargs as Argument, env));
  return args;
}

/** The constant part of a node argument (numbers, strings, lists of them): graph values and tensors left out. */
export function constantPart(a: unknown): unknown {
  if (a instanceof Node || a instanceof Tensor || a instanceof QTensor) return undefined;
  if (Array.isArray(a)) return a.map(constantPart);
  if (a && typeof a === 'object') return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, constantPart(v)]));
  return a;
}
