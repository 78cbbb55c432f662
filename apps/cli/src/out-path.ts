import { statSync, type Stats } from 'node:fs';
import { WriteTargetError } from '@qtk/nn';
import { checkWriteTarget } from '@qtk/nn/node';
import { CliError } from './io.js';

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

/**
 * Refuses an output path before any work is done (exit code 2): one that is an input of the command
 * (same device and inode, so a symbolic or hard link to the input counts too), and one the atomic
 * writer would refuse (a directory, FIFO, socket, device or dangling link; packages/nn/docs/saving-files.md).
 */
export function checkOutPath(out: string, inputs: readonly { path: string; what: string }[], option = '--out'): void {
  try {
    checkWriteTarget(out);
  } catch (e) {
    if (e instanceof WriteTargetError) throw new CliError(`${option}: ${e.message}`, { exitCode: 2, cause: e });
    throw e;
  }
  const target = statOrNull(out);
  if (!target) return;
  for (const input of inputs) {
    const s = statOrNull(input.path);
    if (s && s.dev === target.dev && s.ino === target.ino) {
      throw new CliError(
        `${option} '${out}' is the ${input.what} '${input.path}': saving there would overwrite it; choose another file`,
        { exitCode: 2 },
      );
    }
  }
}
