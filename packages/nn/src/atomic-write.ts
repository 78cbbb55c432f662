import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

function tempPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}.tmp`);
}

function bytesOf(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? new TextEncoder().encode(data) : data;
}

/**
 * Writes `data` to `path` atomically: a temporary file in the same directory, flushed, then renamed
 * over `path`. On any failure the temporary file is removed and `path` is left as it was.
 */
export function writeFileAtomicSync(path: string, data: Uint8Array | string): void {
  const bytes = bytesOf(data);
  const tmp = tempPath(path);
  try {
    const fd = openSync(tmp, 'wx');
    try {
      let written = 0;
      while (written < bytes.byteLength) written += writeSync(fd, bytes, written);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* never created or already gone */
    }
    throw err;
  }
}

/** The asynchronous writeFileAtomicSync. */
export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const bytes = bytesOf(data);
  const tmp = tempPath(path);
  try {
    const fh = await open(tmp, 'wx');
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
}
