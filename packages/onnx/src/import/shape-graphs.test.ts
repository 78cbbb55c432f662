// Graphs whose shapes the importer computes from the input: a Linear on a rank-3 input counted by what it
// computes, and a dynamic batch through a reshape whose input's first dim is not the batch (Swin's windows).
import { Tensor, relu } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx } from '../index.js';
import { handMadeModel, valueInfo } from '../testing/hand-made-model.js';
import { floats, node } from '../testing/pattern-models.js';
import { int64Proto } from '../tensor-proto.js';

function ramp(shape: number[]): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return new Tensor({ data: Float32Array.from({ length: n }, (_, i) => Math.sin(i)), shape, dtype: 'float32' });
}

describe('shapes the import computes', () => {
  it('MatMul of a [64, 1, 16] input by a constant [16, 64] weight is a Linear, checked by its output, not a broadcast weight', () => {
    const w = Array.from({ length: 16 * 64 }, (_, i) => ((i % 13) - 6) / 13);
    const bytes = handMadeModel([node('MatMul', ['x', 'w'], 'y')], {
      input: [valueInfo('x', [64, 1, 16])],
      output: [valueInfo('y', [64, 1, 64])],
      initializer: [floats('w', w, [16, 64])],
    });
    // the weight broadcast over the 64 rows would be 64 · 16 · 64 = 65536 elements; the output is 4096
    const gm = importOnnx(bytes, { maxElements: 10000 });
    const x = ramp([64, 1, 16]);
    const y = gm.call(x) as Tensor;
    expect(y.shape).toEqual([64, 1, 64]);
    let want = 0;
    for (let k = 0; k < 16; k++) want += (x.values()[5 * 16 + k] as number) * w[k * 64 + 7]!;
    expect(y.values()[5 * 64 + 7]).toBeCloseTo(want, 5);
  });

  it('a shape vector [N, 4, 6] reshapes windows of shape [2N, 2, 6] back to [N, 4, 6], at any batch', () => {
    const bytes = handMadeModel(
      [
        node('Shape', ['x'], 's'),
        node('Gather', ['s', 'zero'], 'b'),
        node('Unsqueeze', ['b', 'axis0'], 'b1'),
        node('Reshape', ['x', 'windows'], 'w'),
        node('Relu', ['w'], 'r'),
        { ...node('Concat', ['b1', 'four', 'six'], 'target'), attribute: [{ name: 'axis', i: 0, type: 2 }] },
        node('Reshape', ['r', 'target'], 'y'),
      ],
      {
        input: [valueInfo('x', ['N', 4, 6])],
        output: [valueInfo('y', ['N', 4, 6])],
        initializer: [
          int64Proto('zero', [0], []),
          int64Proto('axis0', [0]),
          int64Proto('windows', [-1, 2, 6]),
          int64Proto('four', [4]),
          int64Proto('six', [6]),
        ],
      },
    );
    const gm = importOnnx(bytes);
    for (const batch of [1, 3]) {
      const x = ramp([batch, 4, 6]);
      const y = gm.call(x) as Tensor;
      expect(y.shape).toEqual([batch, 4, 6]);
      expect(Array.from(y.values())).toEqual(Array.from(relu(x).values()));
    }
  });
});
