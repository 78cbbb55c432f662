// The proof FixedModelEngines trusts the runtime on: every output element identical to QTK's (integers, floats
// bit for bit, NaN for NaN), in the same shape.
import { QTensor } from '@qtk/fixed-point';
import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { firstDifference } from './fixed-model-engines.js';

const q = QTensor.fromInts([1, -2, 3, 127], [2, 2], [0.5], 'qint8');
const f = new Tensor({ data: Float32Array.of(0.25, Number.NaN, -0), shape: [3], dtype: 'float32' });
const rt = (data: number[], dims: number[]) => ({ data, dims });

describe('firstDifference', () => {
  it('is null when every integer and every float is identical, NaN included', () => {
    expect(firstDifference([q, f], [rt([1, -2, 3, 127], [2, 2]), rt([0.25, Number.NaN, -0], [3])])).toBeNull();
  });

  it('names the first element that differs, a shape that differs, and a missing output', () => {
    expect(firstDifference([q], [rt([1, -2, 4, 127], [2, 2])])).toBe("output 0, element 2: 4 against QTK's 3");
    expect(firstDifference([f], [rt([0.25, Number.NaN, 0], [3])])).toBe("output 0, element 2: 0 against QTK's 0");
    expect(firstDifference([f], [rt([0.25000003, Number.NaN, -0], [3])])).toMatch(/^output 0, element 0: /);
    expect(firstDifference([q], [rt([1, -2, 3, 127], [4])])).toBe("output 0 has the shape [4] against QTK's [2,2]");
    expect(firstDifference([q, f], [rt([1, -2, 3, 127], [2, 2])])).toBe("1 outputs against QTK's 2");
  });
});
