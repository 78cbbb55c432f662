// Parts of the hand-written ONNX graphs the CLI tests build: float value infos and nodes as torch.onnx.export
// writes them.
import { DataType, type NodeMsg, type ValueInfoMsg } from '@qtk/onnx';

/** A float32 value of these dims; a string is a free dim (dim_param). */
export function valueInfo(name: string, dims: readonly (number | string)[]): ValueInfoMsg {
  const dim = dims.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d }));
  return { name, type: { tensor_type: { elem_type: DataType.FLOAT, shape: { dim } } } };
}

/** A Gemm node as torch.onnx.export writes a Linear: `input` [x, W, b], y = x·Wᵀ + b (transB = 1). */
export function linearGemm(name: string, input: readonly string[], output: string): NodeMsg {
  return { op_type: 'Gemm', name, input: [...input], output: [output], attribute: [{ name: 'transB', i: 1, type: 2 }] };
}
