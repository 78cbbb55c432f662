import { describe, expect, it } from 'vitest';
import { stageImages } from './wasm-staging.js';

describe('stageImages', () => {
  it('copies everything at once when unshared, and publishes the count', () => {
    const d = new Int32Array(4);
    const copies: [number, number][] = [];
    stageImages(d, 2, 7, false, 3, (from, to) => copies.push([from, to]));
    expect(copies).toEqual([[0, 7]]);
    expect(Array.from(d)).toEqual([0, 0, 7, 0]);
  });

  it('copies in groups of `step` when shared, publishing the count after each group', () => {
    const d = new Int32Array(new SharedArrayBuffer(16));
    const seen: [number, number, number][] = [];
    stageImages(d, 1, 7, true, 3, (from, to) => seen.push([from, to, Atomics.load(d, 1)]));
    // each copy sees the count of the groups before it
    expect(seen).toEqual([
      [0, 3, 0],
      [3, 6, 3],
      [6, 7, 6],
    ]);
    expect(Atomics.load(d, 1)).toBe(7);
  });

  it('publishes the whole batch even when a copy throws, so the worker never waits forever', () => {
    const d = new Int32Array(new SharedArrayBuffer(8));
    expect(() =>
      stageImages(d, 0, 5, true, 1, (from) => {
        if (from === 2) throw new RangeError('out of memory');
      }),
    ).toThrow('out of memory');
    expect(Atomics.load(d, 0)).toBe(5);
  });
});
