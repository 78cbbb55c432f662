import { gunzipSync } from 'node:zlib';
import { DataFormatError } from '../errors.js';
import { isGzip } from '../data/gzip-magic.js';
import { type IdxArray, parseIdx } from '../data/idx.js';
import { readDataFile } from './read-data-file.js';

/** The default cap on an inflated .gz IDX file: 1 GiB (Fashion-MNIST's largest file is 47 MB). */
export const IDX_MAX_INFLATED_BYTES = 2 ** 30;

export interface IdxOptions {
  /** The most bytes a gzipped file may inflate to (default IDX_MAX_INFLATED_BYTES), so a gzip bomb cannot exhaust memory. */
  maxInflatedBytes?: number;
}

/**
 * The inflated bytes of a gzipped IDX file, up to a cap; bytes that are not gzipped are returned as
 * they are. `source` names the file in errors.
 */
export function inflateIdx(bytes: Uint8Array, source?: string, options: IdxOptions = {}): Uint8Array {
  if (!isGzip(bytes)) return bytes;
  const max = options.maxInflatedBytes ?? IDX_MAX_INFLATED_BYTES;
  try {
    return gunzipSync(bytes, { maxOutputLength: max });
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new DataFormatError(
        `gzip stream inflates to more than ${max} bytes (the cap; pass maxInflatedBytes to raise it)`,
        source,
        { cause },
      );
    }
    throw new DataFormatError('gzip stream is corrupt or truncated', source, { cause });
  }
}

/** Reads an IDX file (plain or gzipped). */
export function readIdx(path: string, options: IdxOptions = {}): IdxArray {
  return parseIdx(inflateIdx(readDataFile(path), path, options), path);
}
