// The ONNX node names survive the pipeline (issue 28 §5): import → fuse → prepare → convert → model file,
// so a table can show the name a PyTorch user knows beside QTK's.
import '@qtk/march-bayes';
import { calibrate, convertFx, modelFromBytes, modelToBytes, prepareQatFx } from '@qtk/core';
import { getDefaultQconfig } from '@qtk/fake-quant';
import { fuseFx } from '@qtk/fusion';
import { type GraphModule, importedNamesOf } from '@qtk/ir';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx, pytorchModulePath, DataType, type NodeMsg, type TensorMsg } from '@qtk/onnx';
import { handMadeModel, valueInfo } from '@qtk/onnx/testing';

const floats = (name: string, dims: number[]): TensorMsg => {
  const n = dims.reduce((a, b) => a * b, 1);
  return { name, dims, data_type: DataType.FLOAT, float_data: Array.from({ length: n }, (_, i) => (i % 5) / 5 - 0.4) };
};
const k1 = { name: 'kernel_shape', ints: [1, 1], type: 7 };

const CONV0 = '/features/features.0/features.0.0/Conv';
const RELU0 = '/features/features.0/features.0.2/Relu';
const CONV1 = '/features/features.1/block/block.0/block.0.0/Conv';
const ADD = '/features/features.1/Add';

/** A MobileNet-style stem and residual block with PyTorch's scoped node names. */
const nodes: NodeMsg[] = [
  { op_type: 'Conv', name: CONV0, input: ['x', 'w0', 'b0'], output: ['c0'], attribute: [k1] },
  { op_type: 'Relu', name: RELU0, input: ['c0'], output: ['r0'] },
  { op_type: 'Conv', name: CONV1, input: ['r0', 'w1', 'b1'], output: ['c1'], attribute: [k1] },
  { op_type: 'Add', name: ADD, input: ['c1', 'r0'], output: ['y'] },
];
const bytes = handMadeModel(nodes, {
  input: [valueInfo('x', ['N', 2, 4, 4])],
  output: [valueInfo('y', ['N', 2, 4, 4])],
  initializer: [floats('w0', [2, 2, 1, 1]), floats('b0', [2]), floats('w1', [2, 2, 1, 1]), floats('b1', [2])],
});

/** QTK node name → the ONNX names it records, for the nodes that record any. */
function recorded(gm: GraphModule): Record<string, readonly string[]> {
  const out: Record<string, readonly string[]> = {};
  for (const n of gm.graph.nodes) if (importedNamesOf(n).length) out[n.name] = importedNamesOf(n);
  return out;
}

describe('ONNX node names through the pipeline (issue 28 §5)', () => {
  it('each imported node records its ONNX name', () => {
    expect(recorded(importOnnx(bytes))).toEqual({
      features_features_0_features_0_0: [CONV0],
      features_features_0_features_0_2: [RELU0],
      features_features_1_block_block_0_block_0_0: [CONV1],
      features_features_1: [ADD],
    });
  });

  it('a fused conv records its parts first op first, so it shows the conv, and the names reach the model file', () => {
    const float = importOnnx(bytes);
    const fused = fuseFx(float, { march: 'bayes' });
    const fusedNames = recorded(fused);
    // conv + relu sits at the relu's name; conv + add at the (generated) add's: each lists the conv first
    expect(fusedNames.features_features_0_features_0_2).toEqual([CONV0, RELU0]);
    expect(fusedNames._generated_add_0).toEqual([CONV1, ADD]);
    expect(pytorchModulePath(fusedNames.features_features_0_features_0_2![0]!)).toBe('features.0.0');

    const prepared = prepareQatFx(float, { global: getDefaultQconfig() }, { march: 'bayes', inputQuantStubs: true });
    calibrate(prepared, [rand([2, 2, 4, 4], { low: -1, high: 1, generator: new Generator(1) })]);
    const fixed = convertFx(prepared, { march: 'bayes' });
    const expected = {
      features_features_0_features_0_2: [CONV0, RELU0],
      _generated_add_0: [CONV1, ADD],
    };
    expect(recorded(prepared)).toEqual(expected);
    expect(recorded(fixed)).toEqual(expected);
    expect(recorded(modelFromBytes(modelToBytes(fixed)).model as GraphModule)).toEqual(expected);
  });
});
