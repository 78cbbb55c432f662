import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { OnnxLimitError, importOnnx } from '../index.js';
import { handMadeModel } from '../testing/hand-made-model.js';
import { float32s, op } from '../testing/opset-models.js';

const x = new Tensor({ data: Float32Array.of(1, -2, 3, 0.25, 4, 9, -1, 16), shape: [2, 4], dtype: 'float32' });

describe('the one-function handlers (unary, binary)', () => {
  it('binary calls its function on both inputs, broadcast (Pow from tensor.ts, Max from elementwise.ts)', () => {
    const gm = importOnnx(
      handMadeModel([op('Pow', ['x', 'two'], ['sq']), op('Max', ['sq', 'floor'], ['y'])], {
        initializer: [float32s('two', [2]), float32s('floor', [5, 0, 5, 0], [4])],
      }),
    );
    expect(Array.from((gm.call(x) as Tensor).values())).toEqual([5, 4, 9, 0.0625, 16, 81, 5, 256]);
  });

  it('unary calls its function on the first input (Abs, then Sqrt)', () => {
    const gm = importOnnx(handMadeModel([op('Abs', ['x'], ['a']), op('Sqrt', ['a'], ['y'])]));
    expect(Array.from((gm.call(x) as Tensor).values())).toEqual([
      1,
      Math.fround(Math.SQRT2),
      Math.fround(Math.sqrt(3)),
      0.5,
      2,
      3,
      1,
      4,
    ]);
  });

  it('binary refuses a broadcast beyond the import limit, naming the node, before computing it', () => {
    const bytes = handMadeModel([op('Pow', ['a', 'b'], ['y'])], {
      input: [],
      initializer: [
        float32s('a', new Array(30000).fill(1), [30000, 1]),
        float32s('b', new Array(30000).fill(2), [1, 30000]),
      ],
    });
    expect(() => importOnnx(bytes)).toThrow(OnnxLimitError);
    expect(() => importOnnx(bytes)).toThrow(/Pow_y.*\[30000, 30000\].*maxElements/);
  });
});
