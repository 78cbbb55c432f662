// The output walk the naive 2-d references of the op tests share.
import type { Tensor } from '../tensor.js';

/**
 * The [N, C, oh, ow] output of a per-pixel reference over x [N, C, H, W], row-major:
 * `pixel(n, c, i, j, H, W)` computes output (n, c, i, j).
 */
export function naiveNchw(
  x: Tensor,
  oh: number,
  ow: number,
  pixel: (n: number, c: number, i: number, j: number, H: number, W: number) => number,
): number[] {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const out: number[] = [];
  for (let n = 0; n < N; n++)
    for (let c = 0; c < C; c++)
      for (let i = 0; i < oh; i++) for (let j = 0; j < ow; j++) out.push(pixel(n, c, i, j, H, W));
  return out;
}
