import { Generator, randn, type Tensor, tensor } from '@qtk/tensor';

/** Seeded normal activations of `shape`, times `gain`. */
export function normalBatches(count: number, shape: readonly number[], seed: number, gain = 1): Tensor[] {
  const g = new Generator(seed);
  return Array.from({ length: count }, (_, i) => randn([...shape], { generator: g }).mul(gain * (1 + 0.25 * i)));
}

/**
 * The tensors of `parts` (one shape) joined along the last axis: one batch holding all of them, with every
 * other axis (a channel axis 0 or 1) unchanged.
 */
export function concatenated(parts: readonly Tensor[]): Tensor {
  const shape = parts[0]!.shape;
  const inner = shape[shape.length - 1]!;
  const rows = parts[0]!.size / inner;
  const out = new Float32Array(rows * inner * parts.length);
  for (let r = 0; r < rows; r++) {
    for (const [k, p] of parts.entries()) {
      const v = p.values() as Float32Array;
      out.set(v.subarray(r * inner, (r + 1) * inner), (r * parts.length + k) * inner);
    }
  }
  return tensor(out, [...shape.slice(0, -1), inner * parts.length]);
}

/** `x` with its values scaled per channel along axis 1 by `gains[c]` (shape [n, c, k]). */
export function channelScaled(x: Tensor, gains: readonly number[]): Tensor {
  const [n, c, k] = x.shape as [number, number, number];
  const v = Float32Array.from(x.values() as ArrayLike<number>);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < c; j++) for (let l = 0; l < k; l++) v[(i * c + j) * k + l]! *= gains[j]!;
  return tensor(v, [n, c, k]);
}

/** A constant tensor. */
export const filled = (shape: readonly number[], value: number): Tensor =>
  tensor(new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(value), [...shape]);

/** `x` with every `every`-th element replaced by NaN, and `x` without those elements (flat). */
export function withNaNs(x: Tensor, every: number): { withNaN: Tensor; without: Tensor } {
  const v = x.values() as ArrayLike<number>;
  const a = Float32Array.from(v);
  const kept: number[] = [];
  for (let i = 0; i < a.length; i++) {
    if (i % every === 0) a[i] = Number.NaN;
    else kept.push(a[i]!);
  }
  return { withNaN: tensor(a, [...x.shape]), without: tensor(Float32Array.from(kept), [kept.length]) };
}

/** The bit patterns of float32 scales: equal arrays mean bit-identical scales (NaN and -0 included). */
export const scaleBits = (s: Float32Array): number[] => Array.from(new Uint32Array(Float32Array.from(s).buffer));
