import { describe, expect, it } from 'vitest';
import { samePadding, windowOutSize } from './conv-args.js';
import { poolOutSize } from './pool.js';

describe('conv geometry', () => {
  it('gives the output length of a sliding window from size, kernel, stride, padding and dilation', () => {
    expect(windowOutSize(7, 3, 1, 1, 1, 1)).toBe(7);
    expect(windowOutSize(7, 3, 2, 1, 1, 1)).toBe(4);
    expect(windowOutSize(8, 3, 2, 0, 1, 1)).toBe(4);
    // dilation 2 spans 5 inputs: (10 - 5) / 1 + 1
    expect(windowOutSize(10, 3, 1, 0, 0, 2)).toBe(6);
    expect(windowOutSize(2, 3, 1, 0, 0, 1)).toBe(0);
  });

  it("splits padding 'same' with the odd leftover after", () => {
    expect(samePadding([3, 3], [1, 1])).toEqual([1, 1, 1, 1]);
    expect(samePadding([4], [1])).toEqual([1, 2]);
    expect(samePadding([3, 2], [2, 3])).toEqual([2, 1, 2, 2]);
    expect(windowOutSize(9, 4, 1, 1, 2, 1)).toBe(9);
  });

  it('pools with the same rule, and in ceil mode never starts a window in the right padding', () => {
    expect(poolOutSize(7, 2, 2, 0, 1, false)).toBe(3);
    expect(poolOutSize(7, 2, 2, 0, 1, true)).toBe(4);
    expect(poolOutSize(6, 3, 2, 1, 1, true)).toBe(4);
    // rounding up would give 4 windows; the fourth would start in the right padding
    expect(windowOutSize(5 + 1, 2, 2, 1, 1, 1)).toBe(4);
    expect(poolOutSize(5, 2, 2, 1, 1, true)).toBe(3);
  });
});
