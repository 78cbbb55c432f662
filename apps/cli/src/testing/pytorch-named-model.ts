// A small classifier as torch.onnx.export names it: node names are module scopes
// ('/features/features.1/conv/Conv'), so QTK's names ('features_features_1_conv') differ from the ones a
// PyTorch user knows (issue 28 §5).
import { DataType, encodeModel, type NodeMsg, type TensorMsg } from '@qtk/onnx';
import { linearGemm, valueInfo } from './onnx-graph-parts.js';

function floats(name: string, dims: number[]): TensorMsg {
  const n = dims.reduce((a, b) => a * b, 1);
  const float_data = Array.from({ length: n }, (_, i) => ((i * 29) % 13) / 13 - 0.45);
  return { name, dims, data_type: DataType.FLOAT, float_data };
}

/** A 3×3 Conv padded by 1, `input` [x, W, b]. */
function conv3x3(name: string, input: readonly string[], output: string): NodeMsg {
  const attribute = [
    { name: 'kernel_shape', ints: [3, 3], type: 7 },
    { name: 'pads', ints: [1, 1, 1, 1], type: 7 },
  ];
  return { op_type: 'Conv', name, input: [...input], output: [output], attribute };
}

/**
 * input [N, 3, 8, 8] → features.0 (conv 3→4, relu) → features.1 (conv 4→4 as 'conv', relu as 'act') →
 * avgpool → flatten → classifier.1 (linear 4→3).
 */
export function pytorchNamedModel(): Uint8Array {
  return encodeModel({
    ir_version: 7,
    opset_import: [{ domain: '', version: 13 }],
    graph: {
      name: 'torch_jit',
      node: [
        conv3x3('/features/features.0/features.0.0/Conv', ['input', 'w0', 'b0'], 'c0'),
        { op_type: 'Relu', name: '/features/features.0/features.0.1/Relu', input: ['c0'], output: ['r0'] },
        conv3x3('/features/features.1/conv/Conv', ['r0', 'w1', 'b1'], 'c1'),
        { op_type: 'Relu', name: '/features/features.1/act/Relu', input: ['c1'], output: ['r1'] },
        { op_type: 'GlobalAveragePool', name: '/avgpool/GlobalAveragePool', input: ['r1'], output: ['p'] },
        { op_type: 'Flatten', name: '/Flatten', input: ['p'], output: ['f'] },
        linearGemm('/classifier/classifier.1/Gemm', ['f', 'fw', 'fb'], 'output'),
      ],
      input: [valueInfo('input', ['N', 3, 8, 8])],
      output: [valueInfo('output', ['N', 3])],
      initializer: [
        floats('w0', [4, 3, 3, 3]),
        floats('b0', [4]),
        floats('w1', [4, 4, 3, 3]),
        floats('b1', [4]),
        floats('fw', [3, 4]),
        floats('fb', [3]),
      ],
    },
  });
}
