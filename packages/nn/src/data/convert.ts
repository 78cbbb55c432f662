import { allocate, type DType, Tensor } from '@qtk/tensor';

/** Element arrays the file readers return (wider than the tensor dtypes: uint8 and float64 too). */
export type RawArray = Uint8Array | Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;

export interface RawNdArray {
  shape: number[];
  data: RawArray;
}

/**
 * A tensor from reader output. Default dtype: float32 for float data, int32 for uint8 and the
 * integer types that need it, the same type otherwise (bool data stays bool when asked).
 */
export function rawToTensor(a: RawNdArray, dtype?: DType): Tensor {
  const d = a.data;
  const target: DType =
    dtype ??
    (d instanceof Float32Array || d instanceof Float64Array
      ? 'float32'
      : d instanceof Int8Array
        ? 'int8'
        : d instanceof Int16Array
          ? 'int16'
          : 'int32');
  const out = allocate(target, d.length);
  if (target === 'bool') for (let i = 0; i < d.length; i++) out[i] = d[i] ? 1 : 0;
  else out.set(d);
  return new Tensor({ data: out, shape: a.shape, dtype: target });
}
