import { readFileSync, statSync } from 'node:fs';
import { DataFormatError } from '../errors.js';

/**
 * The bytes of a data file, or a DataFormatError naming it when it is not a readable regular file
 * (a directory, device, FIFO, broken symbolic link, or unreadable), instead of Node's raw error.
 */
export function readDataFile(path: string): Uint8Array {
  let reason: string | null = null;
  try {
    const st = statSync(path);
    if (st.isDirectory()) reason = 'is a directory, not a file';
    else if (!st.isFile()) reason = 'is not a regular file (a device, FIFO or socket)';
    else return readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    reason =
      code === 'ENOENT'
        ? 'does not exist (or is a broken symbolic link)'
        : `cannot be read (${code ?? (e as Error).message})`;
    throw new DataFormatError(reason, path, { cause: e });
  }
  throw new DataFormatError(reason, path);
}
