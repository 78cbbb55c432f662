import { DTypeError } from './errors.js';

export type DType = 'float32' | 'int8' | 'int16' | 'int32' | 'bool';
export type TypedArray = Float32Array | Int8Array | Int16Array | Int32Array | Uint8Array;

export const DTYPES: readonly DType[] = ['float32', 'int8', 'int16', 'int32', 'bool'];

const CONSTRUCTORS = {
  float32: Float32Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  bool: Uint8Array,
} as const;

/** Integer range of a dtype; float32 reports ±Infinity. */
export function dtypeRange(dtype: DType): { min: number; max: number } {
  switch (dtype) {
    case 'int8':
      return { min: -128, max: 127 };
    case 'int16':
      return { min: -32768, max: 32767 };
    case 'int32':
      return { min: -2147483648, max: 2147483647 };
    case 'bool':
      return { min: 0, max: 1 };
    default:
      return { min: -Infinity, max: Infinity };
  }
}

export function allocate(dtype: DType, size: number): TypedArray {
  const ctor = CONSTRUCTORS[dtype];
  if (!ctor) throw new DTypeError(`unknown dtype '${String(dtype)}'; use one of ${DTYPES.join(', ')}`);
  return new ctor(size);
}

export function dtypeOfArray(data: TypedArray): DType {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Int16Array) return 'int16';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof Uint8Array) return 'bool';
  throw new DTypeError(
    'unsupported typed array; use Float32Array, Int8Array, Int16Array, Int32Array or Uint8Array (bool)',
  );
}

export function isFloating(dtype: DType): boolean {
  return dtype === 'float32';
}

/** Converts a JS number to what a dtype stores: integers truncate toward zero and wrap like the typed array. */
export function castArray(src: ArrayLike<number>, dtype: DType): TypedArray {
  const out = allocate(dtype, src.length);
  if (dtype === 'bool') {
    for (let i = 0; i < src.length; i++) out[i] = src[i] ? 1 : 0;
  } else {
    for (let i = 0; i < src.length; i++) out[i] = src[i]!;
  }
  return out;
}
