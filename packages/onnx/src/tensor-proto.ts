import { Tensor } from '@qtk/tensor';
import { OnnxError, OnnxExternalDataError, OnnxFormatError } from './errors.js';
import { COMPUTED_TYPES, DataType, onnxTypeName, type TensorMsg } from './onnx-schema.js';

/** A constant read from a TensorProto: floats as a float32 Tensor; integers and bools also as exact JS numbers. */
export interface OnnxConst {
  dataType: number;
  shape: number[];
  /** Values as numbers (int64 beyond 2^53 lose precision; they only appear as "to the end" markers). */
  numbers: number[];
  /**
   * The values of float raw data as read (every weight of a float model), so tensors are made without a
   * JavaScript array in between; `numbers` is then built from it when first read.
   */
  float32?: Float32Array;
}

const INT_TYPES: ReadonlySet<number> = new Set([
  DataType.UINT8,
  DataType.INT8,
  DataType.UINT16,
  DataType.INT16,
  DataType.INT32,
  DataType.INT64,
  DataType.BOOL,
  DataType.UINT32,
  DataType.UINT64,
]);

export function isIntType(dt: number): boolean {
  return INT_TYPES.has(dt);
}

const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

function rawNumbers(dt: number, raw: Uint8Array, count: number, name: string): number[] {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const out = new Array<number>(count);
  const element = RAW_ELEMENT[dt];
  if (element === undefined)
    throw new OnnxError(`tensor '${name}': data type ${onnxTypeName(dt)} is not supported (${COMPUTED_TYPES} are)`);
  const { width: w, read } = element;
  if (raw.byteLength < w * count)
    throw new OnnxError(
      `tensor '${name}': raw_data holds ${raw.byteLength} bytes, ${w * count} expected; the file is truncated`,
    );
  for (let i = 0; i < count; i++) out[i] = read(view, i * w);
  return out;
}

function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

/** How raw_data stores one element of each computed ONNX data type: its bytes, and how to read it (little-endian). */
const RAW_ELEMENT: Record<number, { width: number; read: (view: DataView, at: number) => number }> = {
  [DataType.FLOAT]: { width: 4, read: (v, o) => v.getFloat32(o, true) },
  [DataType.UINT8]: { width: 1, read: (v, o) => v.getUint8(o) },
  [DataType.INT8]: { width: 1, read: (v, o) => v.getInt8(o) },
  [DataType.UINT16]: { width: 2, read: (v, o) => v.getUint16(o, true) },
  [DataType.INT16]: { width: 2, read: (v, o) => v.getInt16(o, true) },
  [DataType.INT32]: { width: 4, read: (v, o) => v.getInt32(o, true) },
  [DataType.INT64]: { width: 8, read: (v, o) => Number(v.getBigInt64(o, true)) },
  [DataType.BOOL]: { width: 1, read: (v, o) => v.getUint8(o) },
  [DataType.FLOAT16]: { width: 2, read: (v, o) => half(v.getUint16(o, true)) },
  [DataType.DOUBLE]: { width: 8, read: (v, o) => v.getFloat64(o, true) },
  [DataType.UINT32]: { width: 4, read: (v, o) => v.getUint32(o, true) },
  [DataType.UINT64]: { width: 8, read: (v, o) => Number(v.getBigUint64(o, true)) },
};

/**
 * The element count of `dims`, checked before anything is allocated: every dim a non-negative
 * integer, and the count no more than the values the file actually holds (`available`).
 */
function checkedCount(label: string, shape: number[], available: number, field: string): number {
  const bad = shape.findIndex((d) => !Number.isSafeInteger(d) || d < 0);
  if (bad >= 0) {
    throw new OnnxFormatError(
      `${label}: dims[${bad}] = ${shape[bad]} is not a valid dimension (dims must be non-negative integers); the file is malformed`,
    );
  }
  let count = 1;
  for (const d of shape) count *= d;
  if (count !== available) {
    throw new OnnxFormatError(
      `${label}: dims [${shape.join(', ')}] describe ${count} values, but ${field} holds ${available}; the file is truncated or malformed`,
    );
  }
  return count;
}

/**
 * Reads a TensorProto into numbers; throws for external data and string tensors. `label` names the
 * tensor in errors (default "tensor '<name>'", e.g. "initializer 'w'").
 */
export function readTensorProto(t: TensorMsg, label?: string): OnnxConst {
  const name = t.name ?? '(unnamed)';
  label ??= `tensor '${name}'`;
  if (t.data_location === 1 || (t.external_data && t.external_data.length > 0)) {
    const loc = t.external_data?.find((e) => e.key === 'location')?.value;
    throw new OnnxExternalDataError(
      `tensor '${name}' is stored in an external data file${loc ? ` ('${loc}')` : ''}; QTK reads only self-contained models. ` +
        'Re-save it with onnx.save_model(model, path, save_as_external_data=False) (models under 2 GB).',
    );
  }
  const dt = t.data_type ?? 0;
  const shape = (t.dims ?? []).map(Number);
  let numbers: number[];
  if (t.raw_data && t.raw_data.length > 0) {
    const w = RAW_ELEMENT[dt]?.width;
    if (w === undefined)
      throw new OnnxError(`${label}: data type ${onnxTypeName(dt)} is not supported (${COMPUTED_TYPES} are)`);
    const count = checkedCount(
      label,
      shape,
      Math.floor(t.raw_data.byteLength / w),
      `raw_data (${t.raw_data.byteLength} bytes of ${w})`,
    );
    if (dt === DataType.FLOAT && LITTLE_ENDIAN) return floatConst(shape, t.raw_data, count);
    numbers = rawNumbers(dt, t.raw_data, count, name);
  } else if (dt === DataType.FLOAT) numbers = t.float_data ?? [];
  else if (dt === DataType.DOUBLE) numbers = t.double_data ?? [];
  else if (dt === DataType.INT64) numbers = t.int64_data ?? [];
  else if (dt === DataType.UINT32 || dt === DataType.UINT64) numbers = t.uint64_data ?? [];
  else if (dt === DataType.FLOAT16) numbers = (t.int32_data ?? []).map(half);
  else if (INT_TYPES.has(dt)) numbers = t.int32_data ?? [];
  else throw new OnnxError(`${label}: data type ${onnxTypeName(dt)} is not supported (${COMPUTED_TYPES} are)`);
  if (!(t.raw_data && t.raw_data.length > 0)) checkedCount(label, shape, numbers.length, 'its data field');
  // raw data is already numbers; the typed fields may hold int64 objects
  return { dataType: dt, shape, numbers: t.raw_data && t.raw_data.length > 0 ? numbers : Array.from(numbers, Number) };
}

/**
 * The common case (every weight of a float model): the raw bytes copied once into a Float32Array, the same
 * values as getFloat32 per element; `numbers` is made from it only if someone reads it.
 */
function floatConst(shape: number[], raw: Uint8Array, count: number): OnnxConst {
  const float32 = new Float32Array(count);
  new Uint8Array(float32.buffer).set(raw.subarray(0, count * 4));
  let numbers: number[] | null = null;
  return {
    dataType: DataType.FLOAT,
    shape,
    float32,
    get numbers() {
      numbers ??= Array.from(float32);
      return numbers;
    },
  };
}

/** A QTK tensor of a constant: float32 for floating types, bool for bool, int32 for integers. */
export function constToTensor(c: OnnxConst): Tensor {
  if (c.dataType === DataType.BOOL)
    return new Tensor({ data: Uint8Array.from(c.numbers), shape: c.shape, dtype: 'bool' });
  if (isIntType(c.dataType)) {
    return new Tensor({
      data: Int32Array.from(c.numbers, (v) => Math.max(-2147483648, Math.min(2147483647, v))),
      shape: c.shape,
      dtype: 'int32',
    });
  }
  return new Tensor({
    data: c.float32 ? c.float32.slice() : Float32Array.from(c.numbers),
    shape: c.shape,
    dtype: 'float32',
  });
}

/** A TensorProto message (raw little-endian data) for a tensor; floats as FLOAT, integers as `intType`. */
export function tensorToProto(name: string, t: Tensor, intType: number = DataType.INT64): TensorMsg {
  const v = t.values();
  let raw: Uint8Array;
  let dt: number;
  if (t.dtype === 'float32') {
    dt = DataType.FLOAT;
    raw = new Uint8Array(Float32Array.from(v as Float32Array).buffer);
  } else if (t.dtype === 'bool') {
    dt = DataType.BOOL;
    raw = Uint8Array.from(v as ArrayLike<number>);
  } else if (intType === DataType.INT64) {
    dt = DataType.INT64;
    raw = new Uint8Array(BigInt64Array.from(Array.from(v as ArrayLike<number>, (x) => BigInt(x))).buffer);
  } else {
    dt = DataType.INT32;
    raw = new Uint8Array(Int32Array.from(v as ArrayLike<number>).buffer);
  }
  return { name, dims: [...t.shape], data_type: dt, raw_data: raw };
}

/** An int64 TensorProto from numbers. */
export function int64Proto(name: string, values: readonly number[], dims: number[] = [values.length]): TensorMsg {
  return {
    name,
    dims,
    data_type: DataType.INT64,
    raw_data: new Uint8Array(BigInt64Array.from(values.map((x) => BigInt(x))).buffer),
  };
}
