// Plain JS values (a module's scales, dtypes, codec config) as ONNX node attributes, chosen so that
// every number reads back exactly: integers as INT/INTS, float32 values as FLOAT/FLOATS, any other
// double as a DOUBLE tensor attribute (an ONNX FLOAT attribute is float32 and would round it).
import { AttrType, DataType, type AttributeMsg, type TensorMsg } from '@qtk/onnx';

const encoder = new TextEncoder();

/** Integer arrays longer than this leave the attributes and become initializers (lookup tables). */
export const MAX_ATTRIBUTE_INTS = 1024;

type IntArray = Int8Array | Uint8Array | Int16Array | Int32Array;

const RAW: Record<string, { type: number; bytes: (a: ArrayLike<number>) => Uint8Array }> = {
  Float32Array: { type: DataType.FLOAT, bytes: (a) => new Uint8Array(Float32Array.from(a).buffer) },
  Float64Array: { type: DataType.DOUBLE, bytes: (a) => new Uint8Array(Float64Array.from(a).buffer) },
  Int8Array: { type: DataType.INT8, bytes: (a) => new Uint8Array(Int8Array.from(a).buffer) },
  Uint8Array: { type: DataType.UINT8, bytes: (a) => Uint8Array.from(a) },
  Int16Array: { type: DataType.INT16, bytes: (a) => new Uint8Array(Int16Array.from(a).buffer) },
  Int32Array: { type: DataType.INT32, bytes: (a) => new Uint8Array(Int32Array.from(a).buffer) },
};

/** A TensorProto in the typed array's own element type (raw little-endian data; every JS engine QTK runs on is little-endian). */
export function typedArrayProto(name: string, values: ArrayLike<number>, dims: readonly number[]): TensorMsg {
  const kind = RAW[values.constructor.name] ?? RAW.Float64Array!;
  return { name, dims: [...dims], data_type: kind.type, raw_data: kind.bytes(values) };
}

const isFloat32 = (v: number): boolean => Object.is(Math.fround(v), v) || Number.isNaN(v);

function doubles(name: string, values: readonly number[], dims: readonly number[]): AttributeMsg {
  return { name, type: AttrType.TENSOR, t: typedArrayProto('', Float64Array.from(values), dims) };
}

function numberAttr(name: string, v: number): AttributeMsg {
  if (Number.isSafeInteger(v) && !Object.is(v, -0)) return { name, type: AttrType.INT, i: v };
  if (isFloat32(v)) return { name, type: AttrType.FLOAT, f: v };
  return doubles(name, [v], []);
}

function numbersAttr(name: string, values: readonly number[], float32: boolean): AttributeMsg {
  if (!float32 && values.every((v) => Number.isSafeInteger(v) && !Object.is(v, -0)))
    return { name, type: AttrType.INTS, ints: [...values] };
  if (values.every(isFloat32)) return { name, type: AttrType.FLOATS, floats: [...values] };
  return doubles(name, values, [values.length]);
}

/** A float32 list (scales) as FLOATS, whatever its values: equal bit for bit to the Float32Array. */
export function floatsAttr(name: string, values: Float32Array): AttributeMsg {
  return { name, type: AttrType.FLOATS, floats: Array.from(values) };
}

export function stringAttr(name: string, value: string): AttributeMsg {
  return { name, type: AttrType.STRING, s: encoder.encode(value) };
}

export function stringsAttr(name: string, values: readonly string[]): AttributeMsg {
  return { name, type: AttrType.STRINGS, strings: values.map((v) => encoder.encode(v)) };
}

export function intAttr(name: string, value: number): AttributeMsg {
  return { name, type: AttrType.INT, i: value };
}

const isIntArray = (v: unknown): v is IntArray =>
  v instanceof Int8Array || v instanceof Uint8Array || v instanceof Int16Array || v instanceof Int32Array;

/** What flattening a value gives: attributes, and long integer arrays to be written as initializers. */
export interface FlatValue {
  attributes: AttributeMsg[];
  /** [dotted key, values] of integer arrays longer than MAX_ATTRIBUTE_INTS. */
  arrays: [string, IntArray][];
}

/**
 * Flattens plain data into attributes keyed by dotted paths (`requant.m`, `plans.0.kind`): numbers,
 * booleans (INT 0/1), strings, typed arrays and number or string lists become one attribute each;
 * objects and mixed lists recurse; null and undefined are left out.
 */
export function flattenToAttributes(value: unknown, key: string, into: FlatValue): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'boolean') into.attributes.push(intAttr(key, value ? 1 : 0));
  else if (typeof value === 'string') into.attributes.push(stringAttr(key, value));
  else if (typeof value === 'number') into.attributes.push(numberAttr(key, value));
  else if (value instanceof Float32Array) into.attributes.push(floatsAttr(key, value));
  else if (value instanceof Float64Array) into.attributes.push(numbersAttr(key, Array.from(value), true));
  else if (isIntArray(value)) {
    if (value.length > MAX_ATTRIBUTE_INTS) into.arrays.push([key, value]);
    else into.attributes.push({ name: key, type: AttrType.INTS, ints: Array.from(value) });
  } else if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'number'))
    into.attributes.push(numbersAttr(key, value as number[], false));
  else if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string'))
    into.attributes.push(stringsAttr(key, value as string[]));
  else if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) flattenToAttributes(v, `${key}.${i}`, into);
  } else if (typeof value === 'object')
    for (const [k, v] of Object.entries(value)) flattenToAttributes(v, key ? `${key}.${k}` : k, into);
}

/** The attributes with repeated names renamed `<name>_2`, `<name>_3`, ... (a node's attribute names must be distinct). */
export function distinctNames(attributes: AttributeMsg[]): AttributeMsg[] {
  const seen = new Map<string, number>();
  return attributes.map((a) => {
    const k = (seen.get(a.name!) ?? 0) + 1;
    seen.set(a.name!, k);
    return k === 1 ? a : { ...a, name: `${a.name}_${k}` };
  });
}
