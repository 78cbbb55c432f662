// The check that lets onnxruntime's values stand in for QTK's: float rounding passes, anything else is named.
import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { leadingRows, runtimeDifference } from './runtime-agreement.js';

const t = (values: number[], shape = [values.length]) =>
  new Tensor({ data: Float32Array.from(values), shape, dtype: 'float32' });

describe('runtimeDifference', () => {
  it('passes float rounding (judged against 1 below magnitude 1), NaN for NaN and equal infinities', () => {
    expect(
      runtimeDifference(t([1000, 2, Number.NaN, -Infinity]), t([1000.05, 2, Number.NaN, -Infinity]), 1e-4),
    ).toBeNull();
    expect(runtimeDifference(t([1e-3, 0]), t([1e-3 + 5e-5, 0]), 1e-4)).toBeNull();
  });

  it('names a difference beyond the tolerance, a non-finite mismatch and another shape', () => {
    expect(runtimeDifference(t([1000, 2]), t([1000.2, 2]), 1e-4)).toMatch(/^largest difference 0\.2/);
    expect(runtimeDifference(t([1, Number.NaN]), t([1, 0]), 1e-4)).toBe("element 1 is 0 against QTK's NaN");
    expect(runtimeDifference(t([1, 2], [2]), t([1, 2], [1, 2]), 1e-4)).toBe('shape [1, 2] instead of [2]');
  });
});

describe('leadingRows', () => {
  it('takes the first rows of a batch, and the batch itself when it has no more', () => {
    const x = t([1, 2, 3, 4, 5, 6], [3, 2]);
    const first = leadingRows(x, 2);
    expect([first.shape, Array.from(first.values())]).toEqual([
      [2, 2],
      [1, 2, 3, 4],
    ]);
    expect(leadingRows(x, 5)).toBe(x);
  });
});
