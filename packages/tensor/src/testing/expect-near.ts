// Tolerance assertions the op tests share (not part of the ./testing entry).
import { expect } from 'vitest';
import type { Tensor } from '../tensor.js';

/** Equal lengths, and |actual[i] − expected[i]| < tol at every index. */
export function expectAllNear(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < actual.length; i++) expect(Math.abs(actual[i]! - expected[i]!)).toBeLessThan(tol);
}

/** The tensor has the expected shape, and its largest difference from `expected.data` is below tol. */
export function expectTensorNear(actual: Tensor, expected: { data: number[]; shape: number[] }, tol: number): void {
  expect(actual.shape).toEqual(expected.shape);
  const a = actual.toArray();
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - expected.data[i]!));
  expect(worst).toBeLessThan(tol);
}
