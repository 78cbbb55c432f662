import type { Tensor } from '@qtk/tensor';
import { expect } from 'vitest';

/** Elementwise |a − e| ≤ tol·(1 + |e|), same shapes. */
export function expectClose(actual: Tensor, expected: Tensor, tol = 1e-5): void {
  expect(actual.shape).toEqual(expected.shape);
  const a = actual.values();
  const e = expected.values();
  let worst = 0;
  for (let i = 0; i < e.length; i++) worst = Math.max(worst, Math.abs(a[i]! - e[i]!) / (1 + Math.abs(e[i]!)));
  expect(worst).toBeLessThanOrEqual(tol);
}
