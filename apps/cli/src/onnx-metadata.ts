// What qtk export adds to an exported ONNX file's metadata: the preprocessing `qtk quantize` saved (so that
// `qtk eval FILE.onnx` normalises images as the model file would), how to read each output's integers, and the
// march and model file the file came from (so `qtk compare` can refuse a file exported from another).
import { QTensor } from '@qtk/fixed-point';
import type { ModelMsg } from '@qtk/onnx';
import { Tensor } from '@qtk/tensor';
import type { Preprocess } from './data/samples.js';
import { CliError } from './io.js';

/** Metadata key of the image preprocessing (JSON { mean, std, size? }). */
export const PREPROCESS_KEY = 'qtk.preprocess';

const encoder = new TextEncoder();

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

/** A length-delimited protobuf field: tag (field number, wire type 2), length, bytes. */
function lengthDelimited(field: number, bytes: Uint8Array): number[] {
  return [...varint((field << 3) | 2), ...varint(bytes.length), ...bytes];
}

/**
 * The model bytes with `entries` added to ModelProto.metadata_props (field 14). Protobuf concatenates
 * repeated fields, so the entries are appended after the existing bytes, which stay exactly as written.
 */
export function withMetadata(model: Uint8Array, entries: Readonly<Record<string, string>>): Uint8Array {
  const extra: number[] = [];
  for (const [key, value] of Object.entries(entries)) {
    const entry = new Uint8Array([
      ...lengthDelimited(1, encoder.encode(key)),
      ...lengthDelimited(2, encoder.encode(value)),
    ]);
    extra.push(...lengthDelimited(14, entry));
  }
  const out = new Uint8Array(model.length + extra.length);
  out.set(model);
  out.set(extra, model.length);
  return out;
}

const numbers = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number' && Number.isFinite(x));

/** The preprocessing an exported file carries; undefined when it has none or the entry is not well formed. */
export function savedPreprocess(model: ModelMsg): Partial<Preprocess> | undefined {
  const value = model.metadata_props?.find((p) => p.key === PREPROCESS_KEY)?.value;
  if (value === undefined) return undefined;
  let p: { mean?: unknown; std?: unknown; size?: unknown };
  try {
    p = JSON.parse(value) as typeof p;
  } catch {
    return undefined;
  }
  if (typeof p !== 'object' || p === null || !numbers(p.mean) || !numbers(p.std)) return undefined;
  const size = numbers(p.size) && p.size.length === 2 ? ([p.size[0]!, p.size[1]!] as const) : undefined;
  return { mean: p.mean, std: p.std, ...(size ? { size } : {}) };
}

/** Metadata key of the outputs: JSON [{ name, dtype, scale?, axis? }], how to read each output's numbers. */
export const OUTPUTS_KEY = 'qtk.outputs';
/** Metadata key of the march a quantized model was converted or prepared for. */
export const MARCH_KEY = 'qtk.march';
/** Metadata key of the SHA-256 (hex) of the model file the ONNX file was exported from. */
export const MODEL_SHA256_KEY = 'qtk.model_sha256';

/**
 * How to read one output of an exported file: a float output is the value itself; an integer output (a
 * fixed-point model's quantized output) is `integer × scale`, per tensor (axis null) or per channel along `axis`.
 */
export interface OutputInfo {
  readonly name: string;
  readonly dtype: string;
  readonly scale?: number[];
  readonly axis?: number | null;
}

/** The OutputInfo of a model output value (a QTensor or a Tensor). */
export function outputInfoOf(name: string, value: unknown): OutputInfo {
  if (value instanceof QTensor)
    return { name, dtype: value.data.dtype, scale: Array.from(value.scale), axis: value.axis < 0 ? null : value.axis };
  if (value instanceof Tensor) return { name, dtype: value.dtype };
  throw new CliError(`output '${name}' is a ${typeof value}, not a tensor; qtk export writes tensor outputs`);
}

/** One metadata entry's value, or undefined. */
export function metadataOf(model: ModelMsg, key: string): string | undefined {
  return model.metadata_props?.find((p) => p.key === key)?.value ?? undefined;
}

/** The OutputInfo list an exported file carries; undefined when it has none or it is not well formed. */
export function savedOutputs(model: ModelMsg): OutputInfo[] | undefined {
  const value = metadataOf(model, OUTPUTS_KEY);
  if (value === undefined) return undefined;
  try {
    const list = JSON.parse(value) as unknown;
    if (!Array.isArray(list)) return undefined;
    return list.every((o) => o && typeof o.name === 'string' && typeof o.dtype === 'string') ? list : undefined;
  } catch {
    return undefined;
  }
}
