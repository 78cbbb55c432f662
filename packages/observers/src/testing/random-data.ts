import { tensor, type Tensor } from '@qtk/tensor';

/** A small deterministic generator for test data (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Float32 values: normal(0, std) with a fraction of heavy outliers (× 8), like activations. */
export function activations(n: number, seed: number, std = 1, outliers = 0.002): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const g = Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
    out[i] = g * std * (r() < outliers ? 8 : 1);
  }
  return out;
}

export function t(values: Float32Array, shape: number[] = [values.length]): Tensor {
  return tensor(values, shape);
}

/** Batches of activations as tensors of `shape`. */
export function batches(count: number, shape: number[], seed: number, std = 1): Tensor[] {
  const n = shape.reduce((a, b) => a * b, 1);
  return Array.from({ length: count }, (_, i) => t(activations(n, seed * 1000 + i, std * (1 + 0.1 * i)), shape));
}

/** Round half up then clamp: the fake-quant the marches use. */
export function fakeQuantMse(v: ArrayLike<number>, s: number, qmin: number, qmax: number): number {
  let e = 0;
  for (let i = 0; i < v.length; i++) {
    const q = Math.min(qmax, Math.max(qmin, Math.floor(v[i]! / s + 0.5)));
    const d = v[i]! - q * s;
    e += d * d;
  }
  return e;
}

export function concat(parts: Tensor[]): Float32Array {
  const n = parts.reduce((a, p) => a + p.size, 0);
  const out = new Float32Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p.values() as Float32Array, o);
    o += p.size;
  }
  return out;
}
