// Free input dims (issue 28 §1): the shape given drives the import, and a defaulted dim that breaks
// it is named in the error with the option that fixes it.
import { describe, expect, it } from 'vitest';
import { Tensor } from '@qtk/tensor';
import { OnnxError, OnnxInputShapeError, importOnnx } from '../index.js';
import type { NodeMsg } from '../onnx-schema.js';
import { handMadeModel, valueInfo } from '../testing/hand-made-model.js';
import { int64Proto } from '../tensor-proto.js';

const maxPool = (input: string, output: string): NodeMsg => ({
  op_type: 'MaxPool',
  name: '/features/pool/MaxPool',
  input: [input],
  output: [output],
  attribute: [{ name: 'kernel_shape', ints: [3, 3], type: 7 }],
});

/** x [N, 2, H, W] → MaxPool 3×3 → Reshape to [-1, 2·(H-2)·(W-2)] with H = W = 6 fixed by the reshape. */
const poolThenReshape = handMadeModel(
  [maxPool('x', 'p'), { op_type: 'Reshape', name: '/flatten/Reshape', input: ['p', 'shape'], output: ['y'] }],
  {
    input: [valueInfo('x', ['N', 2, 'H', 'W'])],
    output: [valueInfo('y', ['N', 32])],
    initializer: [int64Proto('shape', [-1, 32])],
  },
);

function failure(f: () => unknown): Error {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}

const ramp = (shape: number[]) => {
  const n = shape.reduce((a, b) => a * b, 1);
  return new Tensor({ data: Float32Array.from({ length: n }, (_, i) => i), shape, dtype: 'float32' });
};

describe('inputShapes drives the import (issue 28 §1)', () => {
  it('imports a pooling model with free H and W at the shape given, and it computes', () => {
    const gm = importOnnx(poolThenReshape, { inputShapes: { x: [1, 2, 6, 6] } });
    const y = gm.call(ramp([3, 2, 6, 6])) as Tensor;
    expect(y.shape).toEqual([3, 32]);
    // channel 0 of sample 0 is 0..35 row-major: the 3×3 max of the window at (0, 0) is 14, at (3, 3) 35
    const v = y.values() as Float32Array;
    expect(v[0]).toBe(14);
    expect(v[15]).toBe(35);
    expect(v[16]).toBe(50); // channel 1 starts at 36: 36 + 14
  });

  it('without a shape, the failing import names the input, the free dims, the value used and inputShapes', () => {
    const err = failure(() => importOnnx(poolThenReshape));
    expect(err).toBeInstanceOf(OnnxError);
    expect(err.message).toContain('is smaller than the kernel');
    expect(err.message).toContain(
      "input 'x': free dim 0 (N), dim 2 (H) and dim 3 (W) set to 1, so it was imported at [1, 2, 1, 1]",
    );
    expect(err.message).toContain('importOnnx(bytes, { inputShapes: { "x": [...] } }) (or exampleInputs)');
    const info = (err as OnnxError).defaultedDims!;
    expect(info.dims.map((d) => [d.input, d.dim, d.param, d.value])).toEqual([
      ['x', 0, 'N', 1],
      ['x', 2, 'H', 1],
      ['x', 3, 'W', 1],
    ]);
    expect(info.importShapes).toEqual({ x: [1, 2, 1, 1] });
  });

  it('a defaulted dim that a fixed reshape contradicts says which dims were free', () => {
    // the pool fits at 4×4 but leaves 2·2·2 = 8 elements, which cannot reshape to [-1, 32]
    const err = failure(() => importOnnx(poolThenReshape, { inputShapes: { x: [1, 2, 4, 4] } }));
    expect(err.message).toMatch(/Reshape/);
    expect(err.message).not.toContain('free dim');
    const noShape = handMadeModel([{ op_type: 'Reshape', name: 'r', input: ['x', 'shape'], output: ['y'] }], {
      input: [valueInfo('x', ['N', 'T', 4])],
      output: [valueInfo('y', ['N', 64])],
      initializer: [int64Proto('shape', [-1, 64])],
    });
    const e2 = failure(() => importOnnx(noShape));
    expect(e2.message).toContain("input 'x': free dim 0 (N) and dim 1 (T) set to 1, so it was imported at [1, 1, 4]");
    expect((importOnnx(noShape, { inputShapes: { x: [1, 16, 4] } }).call(ramp([2, 16, 4])) as Tensor).shape).toEqual([
      2, 64,
    ]);
  });

  it('a rank-3 [N, T, D] text input imports at its T and runs at another batch', () => {
    const bytes = handMadeModel(
      [
        { op_type: 'MatMul', name: '/encoder/proj/MatMul', input: ['x', 'w'], output: ['h'] },
        { op_type: 'Reshape', name: '/head/Reshape', input: ['h', 'shape'], output: ['y'] },
      ],
      {
        input: [valueInfo('x', ['N', 'T', 2])],
        output: [valueInfo('y', ['N', 24])],
        initializer: [
          { name: 'w', dims: [2, 3], data_type: 1, float_data: [1, 0, 1, 0, 1, 1] },
          int64Proto('shape', [-1, 24]),
        ],
      },
    );
    expect(failure(() => importOnnx(bytes)).message).toContain("input 'x': free dim 0 (N) and dim 1 (T) set to 1");
    const gm = importOnnx(bytes, { inputShapes: { x: [1, 8, 2] } });
    const y = gm.call(ramp([2, 8, 2])) as Tensor;
    expect(y.shape).toEqual([2, 24]);
    // sample 1, token 0 is [16, 17]: times w = [16, 17, 33]
    expect(Array.from((y.values() as Float32Array).slice(24, 27))).toEqual([16, 17, 33]);
  });

  it('takes shapes for several inputs, and names only the input left at its default', () => {
    const bytes = handMadeModel(
      [
        {
          op_type: 'Concat',
          name: 'cat',
          input: ['a', 'b'],
          output: ['s'],
          attribute: [{ name: 'axis', i: 1, type: 2 }],
        },
        maxPool('s', 'y'),
      ],
      {
        input: [valueInfo('a', ['N', 1, 'H', 'W']), valueInfo('b', ['N', 1, 'H2', 'W2'])],
        output: [valueInfo('y', ['N', 2, 'h', 'w'])],
      },
    );
    const gm = importOnnx(bytes, { inputShapes: { a: [1, 1, 4, 4], b: [1, 1, 4, 4] } });
    expect((gm.call(ramp([1, 1, 4, 4]), ramp([1, 1, 4, 4])) as Tensor).values()).toEqual(
      Float32Array.from([10, 11, 14, 15, 10, 11, 14, 15]),
    );
    const err = failure(() => importOnnx(bytes, { inputShapes: { a: [1, 1, 4, 4] } }));
    expect(err.message).toContain("input 'b': free dim 0 (N), dim 2 (H2) and dim 3 (W2) set to 1");
    expect(err.message).not.toContain("input 'a':");
    expect(err.message).toContain('inputShapes: { "b": [...] }');
  });

  it('accepts the shape of an example input as before', () => {
    const gm = importOnnx(poolThenReshape, { exampleInputs: { x: ramp([1, 2, 6, 6]) } });
    expect((gm.call(ramp([1, 2, 6, 6])) as Tensor).shape).toEqual([1, 32]);
  });
});

describe('a shape that contradicts the model is refused (issue 28 §1)', () => {
  it('names the input and the fixed dim', () => {
    const err = failure(() => importOnnx(poolThenReshape, { inputShapes: { x: [1, 3, 6, 6] } }));
    expect(err).toBeInstanceOf(OnnxInputShapeError);
    expect(err.message).toBe(
      "importOnnx: inputShapes gives input 'x' the shape [1, 3, 6, 6], but its dim 1 is fixed at 2 by the model (declared [N, 2, H, W], '?' and names = free); keep 2 there",
    );
  });

  it('checks exampleInputs against fixed dims too', () => {
    const err = failure(() => importOnnx(poolThenReshape, { exampleInputs: { x: ramp([1, 3, 6, 6]) } }));
    expect(err).toBeInstanceOf(OnnxInputShapeError);
    expect(err.message).toContain("exampleInputs gives input 'x' the shape [1, 3, 6, 6], but its dim 1 is fixed at 2");
  });

  it('refuses another rank, an unknown input, a non-positive dim and a disagreeing example', () => {
    expect(failure(() => importOnnx(poolThenReshape, { inputShapes: { x: [2, 6, 6] } })).message).toBe(
      "importOnnx: inputShapes gives input 'x' the shape [2, 6, 6] (rank 3), but the model declares it [N, 2, H, W] (rank 4); give 4 dims",
    );
    expect(failure(() => importOnnx(poolThenReshape, { inputShapes: { input: [1, 2, 6, 6] } })).message).toBe(
      "importOnnx: inputShapes names 'input', which is not an input of the model; its inputs are 'x'",
    );
    expect(failure(() => importOnnx(poolThenReshape, { inputShapes: { x: [1, 2, -1, 6] } })).message).toBe(
      "importOnnx: inputShapes gives input 'x' the shape [1, 2, -1, 6]; every dim must be a non-negative integer",
    );
    expect(
      failure(() =>
        importOnnx(poolThenReshape, { inputShapes: { x: [1, 2, 6, 6] }, exampleInputs: { x: ramp([1, 2, 7, 7]) } }),
      ).message,
    ).toBe(
      "importOnnx: input 'x' has the shape [1, 2, 6, 6] in inputShapes but [1, 2, 7, 7] in exampleInputs; give one",
    );
  });
});
