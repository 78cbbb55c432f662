import { CompressedDataError, DataFormatError } from '../errors.js';
import type { RawArray } from './convert.js';
import { isGzip } from './gzip-magic.js';

export type IdxDType = 'uint8' | 'int8' | 'int16' | 'int32' | 'float32' | 'float64';

export interface IdxArray {
  dtype: IdxDType;
  shape: number[];
  data: RawArray;
}

const CODES: Record<number, { dtype: IdxDType; bytes: number }> = {
  8: { dtype: 'uint8', bytes: 1 },
  9: { dtype: 'int8', bytes: 1 },
  11: { dtype: 'int16', bytes: 2 },
  12: { dtype: 'int32', bytes: 4 },
  13: { dtype: 'float32', bytes: 4 },
  14: { dtype: 'float64', bytes: 8 },
};

/**
 * Parses an IDX file (the MNIST format): two zero bytes, a dtype code, the number of dims, the dims
 * as big-endian u32, then big-endian data. Gzipped bytes are refused with a CompressedDataError: this
 * parser takes the inflated file (readIdx from @qtk/nn/node reads and inflates a .gz file).
 */
export function parseIdx(input: Uint8Array, source?: string): IdxArray {
  if (isGzip(input)) throw new CompressedDataError('the IDX bytes', source);
  // A plain view, so slice() copies even when the input is a (pooled) Node Buffer.
  const bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  if (bytes.length < 4)
    throw new DataFormatError(`truncated IDX header: ${bytes.length} bytes, need at least 4`, source);
  if (bytes[0] !== 0 || bytes[1] !== 0) {
    throw new DataFormatError(
      `bad IDX magic 0x${[...bytes.subarray(0, 4)].map((b) => b.toString(16).padStart(2, '0')).join('')}: the first two bytes must be 0`,
      source,
    );
  }
  const code = CODES[bytes[2]!];
  if (!code) {
    throw new DataFormatError(
      `unknown IDX dtype code 0x${bytes[2]!.toString(16)}; known: 0x08 u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32, 0x0e f64`,
      source,
    );
  }
  const ndim = bytes[3]!;
  if (ndim === 0) throw new DataFormatError('IDX file declares 0 dimensions', source);
  const headerBytes = 4 + 4 * ndim;
  if (bytes.length < headerBytes)
    throw new DataFormatError(
      `truncated IDX header: ${ndim} dims need ${headerBytes} bytes, file has ${bytes.length}`,
      source,
    );
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const shape: number[] = [];
  for (let i = 0; i < ndim; i++) shape.push(dv.getUint32(4 + 4 * i, false));
  const count = shape.reduce((a, b) => a * b, 1);
  const need = count * code.bytes;
  const have = bytes.length - headerBytes;
  if (have < need) {
    throw new DataFormatError(
      `truncated IDX data: shape [${shape.join(', ')}] of ${code.dtype} needs ${need} bytes, file has ${have}`,
      source,
    );
  }
  if (have > need)
    throw new DataFormatError(
      `IDX file has ${have - need} trailing bytes after the data for shape [${shape.join(', ')}]`,
      source,
    );
  let data: RawArray;
  const o = headerBytes;
  switch (code.dtype) {
    case 'uint8':
      data = bytes.slice(o, o + need);
      break;
    case 'int8':
      data = new Int8Array(bytes.slice(o, o + need).buffer);
      break;
    case 'int16':
      data = bigEndian(new Int16Array(count), (i) => dv.getInt16(o + 2 * i, false));
      break;
    case 'int32':
      data = bigEndian(new Int32Array(count), (i) => dv.getInt32(o + 4 * i, false));
      break;
    case 'float32':
      data = bigEndian(new Float32Array(count), (i) => dv.getFloat32(o + 4 * i, false));
      break;
    case 'float64':
      data = bigEndian(new Float64Array(count), (i) => dv.getFloat64(o + 8 * i, false));
      break;
  }
  return { dtype: code.dtype, shape, data };
}

/** Fills `out` with the file's big-endian values, `read(i)` giving the i-th (IDX stores every dtype big-endian). */
function bigEndian<A extends Int16Array | Int32Array | Float32Array | Float64Array>(
  out: A,
  read: (i: number) => number,
): A {
  for (let i = 0; i < out.length; i++) out[i] = read(i);
  return out;
}
