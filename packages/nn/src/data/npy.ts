import { DataFormatError } from '../errors.js';
import type { RawArray } from './convert.js';

export type NpyDType = 'float32' | 'float64' | 'int8' | 'int16' | 'int32' | 'uint8' | 'bool';

export interface NpyArray {
  dtype: NpyDType;
  shape: number[];
  data: RawArray;
}

const DESCR: Record<string, { dtype: NpyDType; bytes: number; make: (buf: ArrayBuffer) => RawArray }> = {
  f4: { dtype: 'float32', bytes: 4, make: (b) => new Float32Array(b) },
  f8: { dtype: 'float64', bytes: 8, make: (b) => new Float64Array(b) },
  i1: { dtype: 'int8', bytes: 1, make: (b) => new Int8Array(b) },
  i2: { dtype: 'int16', bytes: 2, make: (b) => new Int16Array(b) },
  i4: { dtype: 'int32', bytes: 4, make: (b) => new Int32Array(b) },
  u1: { dtype: 'uint8', bytes: 1, make: (b) => new Uint8Array(b) },
  b1: { dtype: 'bool', bytes: 1, make: (b) => new Uint8Array(b) },
};

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

/**
 * Parses a .npy file (format versions 1, 2 and 3): little-endian f4, f8, i1, i2, i4, u1, b1 in
 * C order. Fortran order and big-endian data are rejected with an explanation.
 */
export function parseNpy(input: Uint8Array, source?: string): NpyArray {
  // A plain view, so slice() copies even when the input is a (pooled) Node Buffer.
  const bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  const fail = (msg: string): never => {
    throw new DataFormatError(msg, source);
  };
  if (bytes.length < 10 || MAGIC.some((m, i) => bytes[i] !== m)) fail('not a .npy file (missing the \\x93NUMPY magic)');
  const major = bytes[6]!;
  if (major < 1 || major > 3)
    fail(`unsupported .npy format version ${major}.${bytes[7]} (this reader handles 1.x, 2.x and 3.x)`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lenBytes = major === 1 ? 2 : 4;
  if (bytes.length < 8 + lenBytes) fail('truncated .npy header length');
  const headerLen = major === 1 ? dv.getUint16(8, true) : dv.getUint32(8, true);
  const start = 8 + lenBytes;
  if (bytes.length < start + headerLen)
    fail(`truncated .npy header: needs ${headerLen} bytes, file has ${bytes.length - start}`);
  const header = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(start, start + headerLen));
  const descrM = /['"]descr['"]\s*:\s*['"]([^'"]+)['"]/.exec(header);
  const fortranM = /['"]fortran_order['"]\s*:\s*(True|False)/.exec(header);
  const shapeM = /['"]shape['"]\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descrM || !fortranM || !shapeM) fail(`malformed .npy header: ${header.trim()}`);
  if (fortranM![1] === 'True') {
    fail('array is stored in Fortran (column-major) order; save it in C order (np.ascontiguousarray(a)) and retry');
  }
  const descr = descrM![1]!;
  const order = descr[0]!;
  const kind = descr.slice(1);
  const spec = DESCR[kind];
  if (!spec || !['<', '|', '='].includes(order)) {
    if (order === '>' && spec && spec.bytes > 1)
      fail(`big-endian dtype '${descr}' is not supported; convert with a.astype('<${kind}')`);
    fail(`unsupported dtype '${descr}'; supported: <f4, <f8, i1, <i2, <i4, u1, b1 (little-endian)`);
  }
  const shape = shapeM![1]!
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      const n = Number(s.replace(/L$/, ''));
      if (!Number.isInteger(n) || n < 0) fail(`bad dimension '${s}' in shape (${shapeM![1]})`);
      return n;
    });
  const count = shape.reduce((a, b) => a * b, 1);
  const dataStart = start + headerLen;
  const need = count * spec!.bytes;
  const have = bytes.length - dataStart;
  if (have < need)
    fail(`truncated .npy data: shape (${shape.join(', ')}) of ${descr} needs ${need} bytes, file has ${have}`);
  // Copy into a fresh buffer: the data offset need not be aligned for the element type.
  const buf = bytes.slice(dataStart, dataStart + need).buffer;
  return { dtype: spec!.dtype, shape, data: spec!.make(buf) };
}

/**
 * A little-endian float32 .npy file (format version 1.0, C order) of `data` with `shape`; parseNpy reads it
 * back, and so does numpy.load.
 */
export function serializeNpy(shape: readonly number[], data: Float32Array): Uint8Array {
  const count = shape.reduce((a, b) => a * b, 1);
  if (count !== data.length)
    throw new DataFormatError(`serializeNpy: shape (${shape.join(', ')}) holds ${count} values, got ${data.length}`);
  const dims = `${shape.join(', ')}${shape.length === 1 ? ',' : ''}`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims}), }`;
  // The magic, version and length take 10 bytes; the header ends with '\n' and pads the data start to 64 bytes.
  header += `${' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64)}\n`;
  const out = new Uint8Array(10 + header.length + data.byteLength);
  out.set([...MAGIC, 1, 0]);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  const dv = new DataView(out.buffer, 10 + header.length);
  for (let i = 0; i < data.length; i++) dv.setFloat32(4 * i, data[i]!, true);
  return out;
}
