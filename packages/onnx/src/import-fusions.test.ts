// MatMul + Add of a bias become one Linear, also when the weight and bias come through Identity nodes
// (PyTorch's exporter writes a parameter equal to an earlier one, as in the cloned layers of a freshly
// built nn.TransformerEncoder, as an Identity of it).
import { Linear } from '@qtk/nn';
import { noGrad, Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx } from './index.js';
import { DataType, type TensorMsg } from './onnx-schema.js';
import { handMadeModel } from './testing/hand-made-model.js';

const floats = (name: string, dims: number[], values: number[]): TensorMsg => ({
  name,
  dims,
  data_type: DataType.FLOAT,
  raw_data: new Uint8Array(Float32Array.from(values).buffer),
});

const W = [1, 2, 0, -1, 0.5, 0, 0, 3, -2, 1, 1, 0, 0, 0, 2, 1]; // [4, 4], x·W
const B = [0.5, -1, 2, 0.25];

describe('importOnnx: MatMul + Add as Linear', () => {
  it('folds a weight and a bias read through Identity nodes, bias first in the Add', () => {
    const bytes = handMadeModel(
      [
        { op_type: 'Identity', input: ['w0'], output: ['w1'], name: 'Identity_w' },
        { op_type: 'Identity', input: ['b0'], output: ['b1'], name: 'Identity_b' },
        { op_type: 'MatMul', input: ['x', 'w1'], output: ['mm'], name: 'fc/MatMul' },
        { op_type: 'Add', input: ['b1', 'mm'], output: ['y'], name: 'fc/Add' },
      ],
      { initializer: [floats('w0', [4, 4], W), floats('b0', [4], B)] },
    );
    const gm = importOnnx(bytes);
    const calls = gm.graph.nodes.filter((n) => n.op !== 'placeholder' && n.op !== 'output');
    expect(calls.map((n) => n.op)).toEqual(['call_module']);
    const fc = gm.getSubmodule(calls[0]!.target);
    expect(fc).toBeInstanceOf(Linear);
    const x = new Tensor({ data: Float32Array.from([1, -1, 2, 0.5]), shape: [1, 4], dtype: 'float32' });
    const y = noGrad(() => (gm as unknown as { call(x: Tensor): Tensor }).call(x)).values();
    // x·W + b by hand
    const want = [0, 1, 2, 3].map((j) => [1, -1, 2, 0.5].reduce((s, xi, i) => s + xi * W[i * 4 + j]!, 0) + B[j]!);
    expect(Array.from(y)).toEqual(want);
  });
});
