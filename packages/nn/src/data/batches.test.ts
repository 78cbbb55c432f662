import { InvalidArgumentError, Tensor, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { batchesOf } from '../index.js';

const rows = (n: number) =>
  new Tensor({ data: Float32Array.from({ length: n * 2 * 3 }, (_, i) => i), shape: [n, 2, 3], dtype: 'float32' });

describe('batchesOf', () => {
  it('splits along the first axis, the last batch shorter, as views of the data', () => {
    const x = rows(5);
    const got = [...batchesOf(x, 2)];
    expect(got.map((b) => b.shape)).toEqual([
      [2, 2, 3],
      [2, 2, 3],
      [1, 2, 3],
    ]);
    expect([...got[2]!.values()]).toEqual([24, 25, 26, 27, 28, 29]);
    expect(got[1]!.values()[0]).toBe(12);
    expect(got[0]!.values().buffer).toBe(x.values().buffer);
  });

  it('takes the first `count` samples only', () => {
    expect([...batchesOf(rows(5), 2, 3)].map((b) => b.shape[0])).toEqual([2, 1]);
    expect([...batchesOf(rows(5), 64, 256)].map((b) => b.shape[0])).toEqual([5]);
    expect([...batchesOf(rows(5), 2, 0)]).toEqual([]);
  });

  it('keeps the dtype', () => {
    const labels = tensor([3, 1, 4, 1, 5], { dtype: 'int32' });
    const got = [...batchesOf(labels, 3)];
    expect(got.map((b) => [b.dtype, [...b.values()]])).toEqual([
      ['int32', [3, 1, 4]],
      ['int32', [1, 5]],
    ]);
  });

  it('refuses a batch size that is not a positive integer, and a scalar', () => {
    expect(() => [...batchesOf(rows(2), 0)]).toThrow(InvalidArgumentError);
    expect(() => [...batchesOf(rows(2), 1.5)]).toThrow(/batch size must be a positive integer, got 1.5/);
    expect(() => [...batchesOf(tensor(1), 1)]).toThrow(/leading sample dimension/);
  });
});
