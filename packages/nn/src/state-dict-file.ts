import { allocate, DTYPES, Tensor, type DType } from '@qtk/tensor';
import { z } from 'zod';
import { crc32 } from './crc32.js';
import { DataFormatError } from './errors.js';
import { STATE_DICT_VERSION, type JsonValue, type StateDict } from './state-dict.js';

/*
 * File layout (little-endian):
 *   8 bytes  magic "QTKSTATE"
 *   u32      file format version (STATE_DICT_FILE_VERSION)
 *   u32      header length H
 *   u32      CRC-32 of every byte from offset 24 to the end (version 3)
 *   u32      0 (reserved; version 3)
 *   H bytes  UTF-8 JSON { version, metadata?, extra?, tensors: [{ name, dtype, shape, offset, byteLength }] }
 *   padding  to a multiple of 8 bytes, then the tensor data; offsets are relative to that point and 8-aligned.
 * Version 2 added `extra` (modules' extra states by module path; non-finite numbers as
 * { "$number": "Infinity" | "-Infinity" | "NaN" }); version 3 the CRC. Versions 1 and 2 (a 16-byte
 * prefix, no CRC) are still read; version-1 files as dicts without `extra`.
 */
export const STATE_DICT_FILE_VERSION = 3;
const OLDEST_READABLE_VERSION = 1;
const MAGIC = 'QTKSTATE';
const BYTES: Record<DType, number> = { float32: 4, int8: 1, int16: 2, int32: 4, bool: 1 };
/** Bytes before the JSON header: 16 up to version 2, 24 from version 3 (CRC and a reserved word). */
const prefixOf = (version: number) => (version >= 3 ? 24 : 16);

interface Entry {
  name: string;
  dtype: DType;
  shape: number[];
  offset: number;
  byteLength: number;
}

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const entrySchema = z.object({
  name: z.string(),
  dtype: z.enum(DTYPES as unknown as [DType, ...DType[]]),
  shape: z.array(count).max(64),
  offset: count.multipleOf(8, 'must be a multiple of 8'),
  byteLength: count,
});
const headerSchema = z.object({
  version: z.number().int(),
  metadata: z.record(z.unknown()).optional(),
  extra: z.unknown().optional(),
  tensors: z.array(z.unknown()),
});

function assertLittleEndian(): void {
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
    throw new DataFormatError(
      'state dict files are little-endian and this host is big-endian; conversion is not supported',
    );
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
  const prefix = prefixOf(STATE_DICT_FILE_VERSION);
  const dataStart = align8(prefix + header.byteLength);
  const out = new Uint8Array(dataStart + offset);
  out.set(new TextEncoder().encode(MAGIC), 0);
  const dv = new DataView(out.buffer);
  dv.setUint32(8, STATE_DICT_FILE_VERSION, true);
  dv.setUint32(12, header.byteLength, true);
  out.set(header, prefix);
  entries.forEach((e, i) => {
    out.set(payloads[i]!, dataStart + e.offset);
  });
  dv.setUint32(16, crc32(out.subarray(prefix)), true);
  return out;
}

/** The entry's name for errors: its `name` when it has one, else its index. */
function entryLabel(raw: unknown, i: number): string {
  const name = (raw as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? `tensor '${name}'` : `tensor entry ${i}`;
}

/** The header's tensor table, each entry checked (fields, sizes, bounds, unique names) before anything is allocated. */
function checkEntries(raw: unknown[], dataStart: number, fileLength: number, fail: (msg: string) => never): Entry[] {
  const seen = new Set<string>();
  return raw.map((r, i) => {
    const parsed = entrySchema.safeParse(r);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      fail(`${entryLabel(r, i)}: field '${issue.path.join('.') || '(entry)'}': ${issue.message}`);
    }
    const e = parsed.data as Entry;
    const label = `tensor '${e.name}'`;
    if (seen.has(e.name)) fail(`${label} appears twice in the tensor table`);
    seen.add(e.name);
    const start = dataStart + e.offset;
    if (start + e.byteLength > fileLength)
      fail(`truncated: ${label} needs bytes up to ${start + e.byteLength}, file has ${fileLength}`);
    const n = e.shape.reduce((a, b) => a * b, 1);
    if (e.byteLength !== n * BYTES[e.dtype])
      fail(`${label}: ${e.byteLength} bytes do not fit shape [${e.shape.join(', ')}] of ${e.dtype}`);
    return e;
  });
}

/** Decodes bytes written by `serializeStateDict` (versions 1 to 3); `source` names the file in errors. */
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
  const prefix = prefixOf(version);
  if (bytes.byteLength < prefix)
    fail(`truncated: ${bytes.byteLength} bytes, shorter than the ${prefix}-byte prefix of a version-${version} file`);
  if (version >= 3 && crc32(bytes.subarray(prefix)) !== dv.getUint32(16, true)) {
    fail(
      'corrupted or truncated: the checksum does not match the contents (a damaged or interrupted copy); copy or save the state dict again',
    );
  }
  const headerLength = dv.getUint32(12, true);
  if (prefix + headerLength > bytes.byteLength)
    fail(`truncated header: needs ${headerLength} bytes, file has ${bytes.byteLength - prefix}`);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes.subarray(prefix, prefix + headerLength)));
  } catch (cause) {
    throw new DataFormatError('header is not valid JSON', source, { cause });
  }
  const parsedHeader = headerSchema.safeParse(json);
  if (!parsedHeader.success) {
    const issue = parsedHeader.error.issues[0]!;
    const field = issue.path.join('.');
    fail(
      field === 'tensors'
        ? 'header has no tensor table'
        : `malformed header: field '${field || '(header)'}': ${issue.message}`,
    );
  }
  const header = parsedHeader.data!;
  const extra = version >= 2 ? (header.extra as JsonValue | undefined) : undefined;
  if (extra !== undefined && (typeof extra !== 'object' || extra === null || Array.isArray(extra))) {
    fail('header field "extra" must be an object of extra states by module path');
  }
  const dataStart = align8(prefix + headerLength);
  const entries = checkEntries(header.tensors, dataStart, bytes.byteLength, fail);
  const tensors: Record<string, Tensor> = {};
  for (const e of entries) {
    const start = dataStart + e.offset;
    const data = allocate(e.dtype, e.byteLength / BYTES[e.dtype]);
    new Uint8Array(data.buffer).set(bytes.subarray(start, start + e.byteLength));
    // defineProperty: a tensor named '__proto__' stays an entry instead of replacing the record's prototype.
    Object.defineProperty(tensors, e.name, {
      value: new Tensor({ data, shape: e.shape, dtype: e.dtype }),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return {
    version: STATE_DICT_VERSION,
    tensors,
    ...(extra !== undefined ? { extra: decodeJson(extra) as Record<string, JsonValue> } : {}),
    ...(header.metadata ? { metadata: header.metadata } : {}),
  };
}
