// Hand-made ONNX models whose inputs leave dims free (dim_param), as PyTorch exports them with
// dynamic axes: a fixed reshape or a pooling window only works at the real size (issue 28 §1).
import { DataType, encodeModel, type NodeMsg, type TensorMsg, type ValueInfoMsg } from '@qtk/onnx';
import { linearGemm, valueInfo } from './onnx-graph-parts.js';

function floats(name: string, dims: number[]): TensorMsg {
  const n = dims.reduce((a, b) => a * b, 1);
  const float_data = Array.from({ length: n }, (_, i) => ((i * 37) % 11) / 11 - 0.5);
  return { name, dims, data_type: DataType.FLOAT, float_data };
}

const int64s = (name: string, values: number[]): TensorMsg => ({
  name,
  dims: [values.length],
  data_type: DataType.INT64,
  int64_data: values,
});

const ints = (name: string, values: number[]) => ({ name, ints: values, type: 7 });

function model(name: string, node: NodeMsg[], input: ValueInfoMsg[], output: ValueInfoMsg[], initializer: TensorMsg[]) {
  return encodeModel({
    ir_version: 7,
    opset_import: [{ domain: '', version: 13 }],
    graph: { name, node, input, output, initializer },
  });
}

/**
 * input [N, 3, H, W] → Conv 1×1 → Relu → MaxPool 3×3 stride 2 → Reshape [-1, 36] → Gemm → [N, 5]: imports
 * only at H = W = 7 (or 8). Node names are PyTorch's scopes ('/features/features.0/Conv').
 */
export function freeHeightWidthModel(): Uint8Array {
  return model(
    'pool',
    [
      {
        op_type: 'Conv',
        name: '/features/features.0/Conv',
        input: ['input', 'w', 'b'],
        output: ['c'],
        attribute: [ints('kernel_shape', [1, 1])],
      },
      { op_type: 'Relu', name: '/features/features.1/Relu', input: ['c'], output: ['r'] },
      {
        op_type: 'MaxPool',
        name: '/features/features.2/MaxPool',
        input: ['r'],
        output: ['p'],
        attribute: [ints('kernel_shape', [3, 3]), ints('strides', [2, 2])],
      },
      { op_type: 'Reshape', name: '/flatten/Reshape', input: ['p', 'shape'], output: ['flat'] },
      linearGemm('/classifier/Gemm', ['flat', 'fw', 'fb'], 'y'),
    ],
    [valueInfo('input', ['N', 3, 'H', 'W'])],
    [valueInfo('y', ['N', 5])],
    [floats('w', [4, 3, 1, 1]), floats('b', [4]), int64s('shape', [-1, 36]), floats('fw', [5, 36]), floats('fb', [5])],
  );
}

/** A text encoder's input [N, T, 4] → MatMul [4, 4] → Relu → Reshape [-1, 32] (T = 8) → Gemm → [N, 3]. */
export function tokensModel(): Uint8Array {
  return model(
    'tokens',
    [
      { op_type: 'MatMul', name: '/encoder/proj/MatMul', input: ['input', 'w'], output: ['h'] },
      { op_type: 'Relu', name: '/encoder/act/Relu', input: ['h'], output: ['r'] },
      { op_type: 'Reshape', name: '/head/Reshape', input: ['r', 'shape'], output: ['flat'] },
      linearGemm('/head/fc/Gemm', ['flat', 'fw', 'fb'], 'y'),
    ],
    [valueInfo('input', ['N', 'T', 4])],
    [valueInfo('y', ['N', 3])],
    [floats('w', [4, 4]), int64s('shape', [-1, 32]), floats('fw', [3, 32]), floats('fb', [3])],
  );
}

/** Two inputs a, b [N, 1, H, W] → Concat on channels → [N, 2, H, W]. */
export function twoInputModel(): Uint8Array {
  return model(
    'two',
    [
      {
        op_type: 'Concat',
        name: 'cat',
        input: ['a', 'b'],
        output: ['y'],
        attribute: [{ name: 'axis', i: 1, type: 2 }],
      },
    ],
    [valueInfo('a', ['N', 1, 'H', 'W']), valueInfo('b', ['N', 1, 'H', 'W'])],
    [valueInfo('y', ['N', 2, 'H', 'W'])],
    [],
  );
}
