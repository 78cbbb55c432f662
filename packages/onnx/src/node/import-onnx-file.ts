import { readFileSync } from 'node:fs';
import { OnnxError } from '../errors.js';
import { type ImportOnnxOptions, importOnnx as importOnnxBytes, type OnnxGraphModule } from '../import/import-onnx.js';

/**
 * importOnnx of @qtk/onnx that also takes a file path: the file is read, and errors about its contents
 * name it (as `options.source` does for bytes).
 */
export function importOnnx(source: string | Uint8Array, options: ImportOnnxOptions = {}): OnnxGraphModule {
  if (typeof source !== 'string') return importOnnxBytes(source, options);
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(source);
  } catch (e) {
    throw new OnnxError(`importOnnx: cannot read '${source}': ${(e as Error).message}`, { cause: e });
  }
  return importOnnxBytes(bytes, { ...options, source });
}
