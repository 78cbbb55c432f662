// The hand-made hostile ONNX models of the fuzz corpus (fixtures/malformed): each stands for a way a
// file once crashed, hung or exhausted the importer, or imported when it should not. scripts/
// make-malformed-corpus.ts writes them; the fuzz test imports every file there.
import { AttrType, DataType, type AttributeMsg, type ModelMsg, type NodeMsg, type TensorMsg } from '../onnx-schema.js';
import { handMadeModel, valueInfo } from '../testing/hand-made-model.js';

const vi = valueInfo;
const ints = (name: string, values: number[]): AttributeMsg => ({ name, type: AttrType.INTS, ints: values });
const floats = (dims: number[], values: number[], name: string): TensorMsg => ({
  name,
  dims,
  data_type: DataType.FLOAT,
  float_data: values,
});
const int64s = (dims: number[], values: number[], name: string): TensorMsg => ({
  name,
  dims,
  data_type: DataType.INT64,
  int64_data: values,
});

/** The corpus's base model: x and y of shape [1, 4] unless `graph` says otherwise. */
function model(nodes: NodeMsg[], graph: Partial<ModelMsg['graph']> = {}): Uint8Array {
  return handMadeModel(nodes, { input: [vi('x', [1, 4])], output: [vi('y', [1, 4])], ...graph });
}

const relu = (name: string, input = 'x', output = 'y'): NodeMsg => ({
  op_type: 'Relu',
  name,
  input: [input],
  output: [output],
});
const conv3x3 = (
  attrs: AttributeMsg[] = [],
  w: TensorMsg = floats([2, 1, 3, 3], Array(18).fill(0.1), 'w'),
): Uint8Array =>
  model([{ op_type: 'Conv', name: 'conv', input: ['x', 'w'], output: ['y'], attribute: attrs }], {
    input: [vi('x', [1, 1, 6, 6])],
    output: [vi('y', [1, 2, 4, 4])],
    initializer: [w],
  });

/** File name → bytes, in a fixed order. */
export function malformedCorpus(): [string, Uint8Array][] {
  return [
    [
      'huge-input.onnx',
      model([relu('r')], { input: [vi('x', [1, 1, 20000, 20000])], output: [vi('y', [1, 1, 20000, 20000])] }),
    ],
    [
      'constant-of-shape-huge.onnx',
      model(
        [
          { op_type: 'ConstantOfShape', name: 'c', input: ['s'], output: ['big'] },
          { op_type: 'Add', name: 'a', input: ['x', 'big'], output: ['y'] },
        ],
        {
          initializer: [int64s([2], [50000, 50000], 's')],
        },
      ),
    ],
    [
      'negative-initializer-dims.onnx',
      model([{ op_type: 'Add', name: 'a', input: ['x', 'b'], output: ['y'] }], {
        initializer: [floats([-1, 4], [1, 2, 3, 4], 'b')],
      }),
    ],
    [
      'oversized-initializer-dims.onnx',
      model([{ op_type: 'Add', name: 'a', input: ['x', 'b'], output: ['y'] }], {
        initializer: [floats([2 ** 31, 2 ** 31], [1], 'b')],
      }),
    ],
    [
      'input-dims-beyond-typed-arrays.onnx',
      model([relu('r')], { input: [vi('x', [2 ** 40, 4])], output: [vi('y', [2 ** 40, 4])] }),
    ],
    ...['eval', 'train', 'registerModule', '__proto__', 'inputSpecs'].map((name): [string, Uint8Array] => [
      `node-named-${name.replace(/_/g, 'u')}.onnx`,
      model([relu(name)]),
    ]),
    ['duplicate-output-names.onnx', model([relu('r')], { output: [vi('y', [1, 4]), vi('y', [1, 4])] })],
    ['no-outputs.onnx', model([relu('r')], { output: [] })],
    ['negative-pads.onnx', conv3x3([ints('pads', [-1, -1, -1, -1])])],
    ['kernel-shape-contradicts-weights.onnx', conv3x3([ints('kernel_shape', [5, 5])])],
    ['nan-weights.onnx', conv3x3([], floats([2, 1, 3, 3], Array(18).fill(Number.NaN), 'w'))],
    ['missing-initializer.onnx', model([{ op_type: 'Add', name: 'a', input: ['x', 'nowhere'], output: ['y'] }])],
    [
      'cyclic-graph.onnx',
      model([
        relu('r1', 'b', 'a'),
        relu('r2', 'a', 'b'),
        { op_type: 'Add', name: 'out', input: ['x', 'b'], output: ['y'] },
      ]),
    ],
    [
      'expand-huge.onnx',
      model(
        [
          { op_type: 'Expand', name: 'e', input: ['one', 's'], output: ['big'] },
          { op_type: 'Add', name: 'a', input: ['x', 'big'], output: ['y'] },
        ],
        {
          initializer: [floats([1], [1], 'one'), int64s([2], [60000, 60000], 's')],
        },
      ),
    ],
  ];
}
