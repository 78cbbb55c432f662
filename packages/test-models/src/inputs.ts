import type { Module } from '@qtk/nn';
import { Generator, rand, type Tensor } from '@qtk/tensor';

/** Calls a module whose `call` signature the caller knows (tests call layers of any arity). */
export const call = (m: Module, ...x: Tensor[]): Tensor =>
  (m as unknown as { call(...x: Tensor[]): Tensor }).call(...x);

/** Random inputs in [-1, 1] of shape [n, 3, 8, 8]. */
export const randomInputs = (seed: number, n = 4): Tensor =>
  rand([n, 3, 8, 8], { generator: new Generator(seed) })
    .mul(2)
    .sub(1);

/** `n` random images in [-1, 1] of shape [batch, 3, 6, 6], one generator per seed. */
export function imageBatches(seed: number, n: number, batch = 4): Tensor[] {
  const generator = new Generator(seed);
  return Array.from({ length: n }, () => rand([batch, 3, 6, 6], { generator }).mul(2).sub(1));
}
