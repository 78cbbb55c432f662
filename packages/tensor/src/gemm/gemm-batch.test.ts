import { describe, expect, it } from 'vitest';
import { gemmArgs, gemmBatch } from './gemm.js';

describe('gemmBatch', () => {
  it('multiplies each product at its strides and leaves the gaps between outputs alone', () => {
    // two 2×2 · 2×1 products; C has a gap of one element between the outputs (stride 3)
    const a = Float32Array.of(1, 2, 3, 4, /* product 1 */ 0, 1, -1, 0);
    const b = Float32Array.of(5, 6, /* product 1 */ 7, 8);
    const c = new Float32Array(6).fill(9);
    gemmBatch(2, gemmArgs(false, false, 2, 1, 2, a, b, c), { a: 4, b: 2, c: 3 });
    expect(Array.from(c)).toEqual([17, 39, 9, 8, -7, 9]);
  });

  it('reads transposed operands per product (C = Aᵀ·Bᵀ), and a count of 0 writes nothing', () => {
    const a = Float32Array.of(1, 3, 2, 4, /* product 1 */ 2, 0, 0, 2);
    const b = Float32Array.of(1, 0, 0, 1, /* product 1 */ 1, 2, 3, 4);
    const c = new Float32Array(8);
    gemmBatch(2, gemmArgs(true, true, 2, 2, 2, a, b, c), { a: 4, b: 4, c: 4 });
    expect(Array.from(c)).toEqual([1, 2, 3, 4, 2, 6, 4, 8]);
    gemmBatch(0, gemmArgs(false, false, 2, 2, 2, a, b, c), { a: 4, b: 4, c: 4 });
    expect(Array.from(c)).toEqual([1, 2, 3, 4, 2, 6, 4, 8]);
  });
});
