// Model files on disk: modelToBytes / modelFromBytes with atomic writes and file reads.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { GraphModule } from '@qtk/ir';
import { writeFileAtomic, writeFileAtomicSync } from '@qtk/nn/node';
import {
  type LoadedModel,
  ModelFileError,
  type ModelFileHeader,
  modelFromBytes,
  modelHeaderFromBytes,
  modelToBytes,
  type SaveModelOptions,
} from '../model-file.js';

const saveFailed = (path: string, err: unknown) =>
  new ModelFileError(`could not save the model: ${(err as Error).message}; the file was left as it was`, path, {
    cause: err,
  });

/**
 * Saves `gm` to `path` atomically: the bytes are built first, written to a temporary file in the
 * same directory, flushed, then renamed over `path`; on any failure `path` is left as it was.
 */
export async function saveModelFile(gm: GraphModule, path: string, options: SaveModelOptions = {}): Promise<void> {
  const bytes = modelToBytes(gm, options);
  try {
    await writeFileAtomic(path, bytes);
  } catch (err) {
    throw saveFailed(path, err);
  }
}

/** Synchronous saveModelFile. */
export function saveModelFileSync(gm: GraphModule, path: string, options: SaveModelOptions = {}): void {
  const bytes = modelToBytes(gm, options);
  try {
    writeFileAtomicSync(path, bytes);
  } catch (err) {
    throw saveFailed(path, err);
  }
}

const readFailed = (path: string, e: unknown) =>
  new ModelFileError(`cannot read the model file: ${(e as Error).message}`, path, { cause: e });

async function readBytes(path: string): Promise<Uint8Array> {
  try {
    return await readFile(path);
  } catch (e) {
    throw readFailed(path, e);
  }
}

/** Loads a model saved by saveModelFile (float, QAT or fixed-point). */
export async function loadModelFile(path: string): Promise<LoadedModel> {
  return modelFromBytes(await readBytes(path), path);
}

/** Synchronous loadModelFile. */
export function loadModelFileSync(path: string): LoadedModel {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw readFailed(path, e);
  }
  return modelFromBytes(bytes, path);
}

/** The header of a model file (kind, march, meta), read without building the model. */
export async function readModelFileHeader(path: string): Promise<ModelFileHeader> {
  return modelHeaderFromBytes(await readBytes(path), path);
}
