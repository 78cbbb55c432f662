// The preprocessing `qtk quantize` saved, carried into an exported ONNX file as a metadata entry so
// that `qtk eval FILE.onnx` normalises images as the model file would.
import type { ModelMsg } from '@qtk/onnx';
import type { Preprocess } from './data/samples.js';

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
