// JSON form of the plain data fixed-point modules are built from (plans, tables, options): typed
// arrays, non-finite numbers and -0 survive; tensors and functions are refused (tensors belong in
// buffers, which the state dict carries).
import type { JsonValue } from '@qtk/ir';
import { SerializationError } from '@qtk/ir';
import { Tensor } from '@qtk/tensor';

const TYPED = {
  Int8Array,
  Uint8Array,
  Int16Array,
  Int32Array,
  Float32Array,
  Float64Array,
} as const;
type TypedName = keyof typeof TYPED;

function num(v: number): JsonValue {
  if (Number.isNaN(v)) return { $number: 'NaN' };
  if (!Number.isFinite(v)) return { $number: v > 0 ? 'Infinity' : '-Infinity' };
  return Object.is(v, -0) ? { $number: '-0' } : v;
}

function isPlain(v: object): boolean {
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

/** `value` as JSON; `where` names it in errors. */
export function toJsonData(value: unknown, where: string): JsonValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (value === undefined) return { $undefined: true };
  if (typeof value === 'number') return num(value);
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const name = value.constructor.name as TypedName;
    if (!(name in TYPED))
      throw new SerializationError(`cannot serialize ${where}: ${name} is not a supported typed array`);
    return { $typed: name, values: Array.from(value as unknown as ArrayLike<number>, num) };
  }
  if (Array.isArray(value)) return value.map((v, i) => toJsonData(v, `${where}[${i}]`));
  if (typeof value === 'object' && isPlain(value)) {
    const o: Record<string, JsonValue> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) o[k] = toJsonData(v, `${where}.${k}`);
    return Object.keys(o).some((k) => k.startsWith('$')) ? { $object: o } : o;
  }
  const kind =
    value instanceof Tensor
      ? 'a Tensor (register it as a buffer so the state dict carries it)'
      : typeof value === 'function'
        ? 'a function (store the rule name instead)'
        : `a ${(value as object).constructor?.name ?? typeof value}`;
  throw new SerializationError(`cannot serialize ${where}: it is ${kind}`);
}

/** Inverse of toJsonData. */
export function fromJsonData(value: JsonValue, where: string): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v, i) => fromJsonData(v, `${where}[${i}]`));
  if ('$undefined' in value) return undefined;
  if ('$number' in value) return value.$number === '-0' ? -0 : Number(value.$number);
  if ('$typed' in value) {
    const name = String(value.$typed) as TypedName;
    const cls = Object.hasOwn(TYPED, name) ? TYPED[name] : undefined;
    if (!cls || !Array.isArray(value.values)) throw new SerializationError(`${where}: malformed typed array (${name})`);
    return cls.from(value.values.map((v, i) => fromJsonData(v, `${where}[${i}]`) as number));
  }
  const body = ('$object' in value ? value.$object : value) as Record<string, JsonValue>;
  const o: Record<string, unknown> = {};
  // defineProperty: a '__proto__' key from a file stays a plain field instead of replacing the prototype.
  for (const [k, v] of Object.entries(body))
    Object.defineProperty(o, k, {
      value: fromJsonData(v, `${where}.${k}`),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return o;
}
