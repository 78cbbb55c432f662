import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { allocate, DTYPES, sizeOf, Tensor, type DType } from '@qtk/tensor';
import { writeFileAtomic, writeFileAtomicSync } from './atomic-write.js';
import { DataFormatError } from './errors.js';
import { STATE_DICT_VERSION, type JsonValue, type StateDict } from './state-dict.js';

/*
 * File layout (little-endian):
 *   8 bytes  magic "QTKSTATE"
 *   u32      file format version (STATE_DICT_FILE_VERSION)
 *   u32      header length H
 *   H bytes  UTF-8 JSON { version, metadata?, extra?, tensors: [{ name, dtype, shape, offset, byteLength }] }
 *   padding  to a multiple of 8 bytes, then the tensor data; offsets are relative to that point and 8-aligned.
 * Version 2 added `extra` (modules' extra states by module path; non-finite numbers as
 * { "$number": "Infinity" | "-Infinity" | "NaN" }). Version-1 files are read as dicts without it.
 */
export const STATE_DICT_FILE_VERSION = 2;
const OLDEST_READABLE_VERSION = 1;
const MAGIC = 'QTKSTATE';
const BYTES: Record<DType, number> = { float32: 4, int8: 1, int16: 2, int32: 4, bool: 1 };

interface Entry {
  name: string;
  dtype: DType;
  shape: number[];
  offset: number;
  byteLength: number;
}

function assertLittleEndian(): void {
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
    throw new DataFormatError('state dict files are little-endian and this host is big-endian; conversion is not supported');
  }
}

const align8 = (n: number) => (n + 7) & ~7;

/*
 * JSON.stringify would turn ±Infinity and NaN (an observer's untouched range) into null: they are
 * written as { "$number": "Infinity" }, and keys that start with '$' get one more '$' so no value
 * of the caller's can be mistaken for that.
 */
function encodeJson(v: JsonValue): JsonValue {
  if (typeof v === 'number') return Number.isFinite(v) ? v : { $number: String(v) };
  if (Array.isArray(v)) return v.map(encodeJson);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.startsWith('$') ? `$${k}` : k, encodeJson(x)]));
}

function decodeJson(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(decodeJson);
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === '$number' && typeof v.$number === 'string') return Number(v.$number);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.startsWith('$$') ? k.slice(1) : k, decodeJson(x)]));
}

/** Encodes a state dict (tensors, extra states and metadata) into the versioned binary format. */
export function serializeStateDict(sd: StateDict): Uint8Array {
  assertLittleEndian();
  const entries: Entry[] = [];
  const payloads: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of Object.entries(sd.tensors)) {
    const v = t.values();
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    entries.push({ name, dtype: t.dtype, shape: [...t.shape], offset, byteLength: bytes.byteLength });
    payloads.push(bytes);
    offset = align8(offset + bytes.byteLength);
  }
  const header = new TextEncoder().encode(
    JSON.stringify({
      version: STATE_DICT_FILE_VERSION,
      ...(sd.metadata ? { metadata: sd.metadata } : {}),
      ...(sd.extra ? { extra: encodeJson(sd.extra) } : {}),
      tensors: entries,
    }),
  );
  const dataStart = align8(16 + header.byteLength);
  const out = new Uint8Array(dataStart + offset);
  out.set(new TextEncoder().encode(MAGIC), 0);
  const dv = new DataView(out.buffer);
  dv.setUint32(8, STATE_DICT_FILE_VERSION, true);
  dv.setUint32(12, header.byteLength, true);
  out.set(header, 16);
  entries.forEach((e, i) => out.set(payloads[i]!, dataStart + e.offset));
  return out;
}

/** Decodes bytes written by `serializeStateDict`; `source` names the file in errors. */
export function deserializeStateDict(bytes: Uint8Array, source?: string): StateDict {
  assertLittleEndian();
  const fail = (msg: string): never => {
    throw new DataFormatError(msg, source);
  };
  if (bytes.byteLength < 16 || new TextDecoder().decode(bytes.subarray(0, 8)) !== MAGIC) {
    fail(`not a QTK state dict file (expected magic "${MAGIC}")`);
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = dv.getUint32(8, true);
  if (version < OLDEST_READABLE_VERSION || version > STATE_DICT_FILE_VERSION) {
    fail(
      `unsupported state dict file version ${version} (this build reads versions ${OLDEST_READABLE_VERSION} to ${STATE_DICT_FILE_VERSION})` +
        (version > STATE_DICT_FILE_VERSION ? '; it was written by a newer QTK: upgrade @qtk/nn to read it' : ''),
    );
  }
  const headerLength = dv.getUint32(12, true);
  if (16 + headerLength > bytes.byteLength) fail(`truncated header: needs ${headerLength} bytes, file has ${bytes.byteLength - 16}`);
  let header: { version: number; metadata?: Record<string, unknown>; extra?: JsonValue; tensors: Entry[] };
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(16, 16 + headerLength)));
  } catch (cause) {
    throw new DataFormatError('header is not valid JSON', source, { cause });
  }
  if (!Array.isArray(header.tensors)) fail('header has no tensor table');
  const extra = version >= 2 ? header.extra : undefined;
  if (extra !== undefined && (typeof extra !== 'object' || extra === null || Array.isArray(extra))) {
    fail('header field "extra" must be an object of extra states by module path');
  }
  const dataStart = align8(16 + headerLength);
  const tensors: Record<string, Tensor> = {};
  for (const e of header.tensors) {
    if (!DTYPES.includes(e.dtype)) fail(`tensor '${e.name}' has unknown dtype '${e.dtype}'`);
    const n = sizeOf(e.shape);
    if (e.byteLength !== n * BYTES[e.dtype]) fail(`tensor '${e.name}': ${e.byteLength} bytes do not fit shape [${e.shape.join(', ')}] of ${e.dtype}`);
    const start = dataStart + e.offset;
    if (start + e.byteLength > bytes.byteLength) fail(`truncated: tensor '${e.name}' needs bytes up to ${start + e.byteLength}, file has ${bytes.byteLength}`);
    const data = allocate(e.dtype, n);
    new Uint8Array(data.buffer).set(bytes.subarray(start, start + e.byteLength));
    tensors[e.name] = new Tensor({ data, shape: e.shape, dtype: e.dtype });
  }
  return {
    version: STATE_DICT_VERSION,
    tensors,
    ...(extra !== undefined ? { extra: decodeJson(extra) as Record<string, JsonValue> } : {}),
    ...(header.metadata ? { metadata: header.metadata } : {}),
  };
}

/** Writes a state dict atomically: a temporary file in the same directory, flushed, then renamed over `path`. */
export async function saveStateDict(sd: StateDict, path: string): Promise<void> {
  await writeFileAtomic(path, serializeStateDict(sd));
}

export function saveStateDictSync(sd: StateDict, path: string): void {
  writeFileAtomicSync(path, serializeStateDict(sd));
}

export async function loadStateDictFile(path: string): Promise<StateDict> {
  return deserializeStateDict(await readFile(path), path);
}

export function loadStateDictFileSync(path: string): StateDict {
  return deserializeStateDict(readFileSync(path), path);
}
