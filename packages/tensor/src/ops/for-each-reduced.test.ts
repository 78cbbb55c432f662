import { describe, expect, it } from 'vitest';
import { forEachReduced } from '../index.js';

describe('forEachReduced', () => {
  it('visits the input in row-major order with the flat index of its output cell', () => {
    const seen: [number, number][] = [];
    forEachReduced([2, 3], [1], (i, o) => seen.push([i, o]));
    expect(seen).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 1],
      [4, 1],
      [5, 1],
    ]);
    const outer: number[] = [];
    forEachReduced([2, 1, 2], [0], (_, o) => outer.push(o));
    expect(outer).toEqual([0, 1, 0, 1]);
  });
});
