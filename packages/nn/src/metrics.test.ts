import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { accuracy, agreement, top1 } from './index.js';

describe('top1', () => {
  it('gives the index of the first largest score of each row', () => {
    const scores = new Float32Array([0.1, 0.7, 0.2, /**/ 3, -1, 3, /**/ -5, -4, -6, /**/ 0, 0, 0]);
    expect([...top1(scores, 4)]).toEqual([1, 0, 1, 0]);
  });

  it('reads any [rows, ...] layout as rows of equal length, and never picks a NaN after a number', () => {
    expect([...top1([1, 2, 9, 4, /**/ 8, Number.NaN, 1, 0], 2)]).toEqual([2, 0]);
    expect([...top1([Number.NaN, 1, 2], 1)]).toEqual([0]);
    expect([...top1([], 0)]).toEqual([]);
  });

  it('refuses scores that do not split into the rows', () => {
    expect(() => top1([1, 2, 3], 2)).toThrow(InvalidArgumentError);
    expect(() => top1([1, 2, 3], 2)).toThrow(/3 scores do not split into 2 rows/);
    expect(() => top1([1], 0)).toThrow(InvalidArgumentError);
  });
});

describe('accuracy and agreement', () => {
  it('count the share of equal positions', () => {
    expect(accuracy([1, 2, 3, 4], new Int32Array([1, 0, 3, 0]))).toBe(0.5);
    expect(agreement(new Int32Array([7, 7, 1]), [7, 2, 1])).toBeCloseTo(2 / 3, 15);
    expect(agreement([4, 4, 4, 4, 4], [4, 4, 4, 4, 4])).toBe(1);
    expect(accuracy([0, 1], [1, 0])).toBe(0);
  });

  it('refuse arrays of different lengths, naming both', () => {
    expect(() => accuracy([1, 2, 3], [1, 2])).toThrow(/accuracy: 3 predictions but 2 labels/);
    expect(() => agreement([1], [1, 2])).toThrow(InvalidArgumentError);
  });

  it('are NaN on no samples', () => {
    expect(agreement([], [])).toBeNaN();
  });
});
