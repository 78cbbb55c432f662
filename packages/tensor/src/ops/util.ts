import { allocate, type DType, type TypedArray } from '../dtype.js';
import { DTypeError } from '../errors.js';
import { Tensor } from '../tensor.js';
import type { Shape } from '../shape.js';

/** A fresh contiguous tensor. */
export function make(data: TypedArray, shape: Shape, dtype: DType = 'float32'): Tensor {
  return new Tensor({ data, shape, dtype });
}

export function empty(shape: Shape, dtype: DType = 'float32'): Tensor {
  let n = 1;
  for (const d of shape) n *= d;
  return new Tensor({ data: allocate(dtype, n), shape, dtype });
}

/** Row-major float32 values of a tensor (shared when already contiguous float32). */
export function f32(t: Tensor): Float32Array {
  const v = t.values();
  if (v instanceof Float32Array) return v;
  return Float32Array.from(v);
}

export function requireFloat(t: Tensor, op: string, what = 'input'): void {
  if (t.dtype !== 'float32') {
    throw new DTypeError(`${op}: ${what} must be float32, got ${t.dtype}; convert it first with .toType('float32')`);
  }
}

/** Result dtype of a binary arithmetic op: float32 wins, then the widest integer. */
export function promote(a: DType, b: DType): DType {
  if (a === 'float32' || b === 'float32') return 'float32';
  const rank: Record<DType, number> = { bool: 0, int8: 1, int16: 2, int32: 3, float32: 4 };
  const r = Math.max(rank[a], rank[b]);
  return (Object.keys(rank) as DType[]).find((k) => rank[k] === r)!;
}
