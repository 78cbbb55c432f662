import type { Shape } from '../shape.js';

/**
 * A row-major tensor seen along one axis as [outer, n, inner]: element (o, k, j) sits at
 * (o·n + k)·inner + j. Ops along an axis (softmax, max, cat, split) loop over this layout.
 */
export interface AxisLayout {
  outer: number;
  n: number;
  inner: number;
}

export function axisLayout(shape: Shape, axis: number): AxisLayout {
  let outer = 1;
  let inner = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i]!;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i]!;
  return { outer, n: shape.length ? shape[axis]! : 1, inner };
}
