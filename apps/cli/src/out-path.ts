import { accessSync, constants, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { WriteTargetError } from '@qtk/nn';
import { checkWriteTarget } from '@qtk/nn/node';
import { shownPath } from './display-path.js';
import { CliError } from './io.js';

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

/**
 * Refuses a folder a command cannot write into, before any work: the nearest existing ancestor of
 * `dir` must be a directory QTK may write in (the missing rest is created, as a report folder is).
 */
export function checkOutDir(dir: string, option = '--out', what = dir): void {
  let at = resolve(dir);
  let st = statOrNull(at);
  while (!st && dirname(at) !== at) {
    at = dirname(at);
    st = statOrNull(at);
  }
  if (!st) return;
  if (!st.isDirectory())
    throw new CliError(
      `${option} ${shownPath(what)} cannot be written: '${at}' is a file, not a directory; choose a path in a directory`,
      { exitCode: 2 },
    );
  try {
    accessSync(at, constants.W_OK | constants.X_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new CliError(
      `${option} ${shownPath(what)} cannot be written: the directory '${at}' is not writable (${code}); choose another path`,
      { exitCode: 2, cause: e },
    );
  }
}

/**
 * Refuses an output path before any work is done (exit code 2): one in a directory that is missing,
 * not a directory or not writable; one that is an input of the command (same device and inode, so a
 * symbolic or hard link to the input counts too); and one the atomic writer would refuse (a directory,
 * FIFO, socket, device or dangling link; packages/nn/docs/saving-files.md).
 */
export function checkOutPath(out: string, inputs: readonly { path: string; what: string }[], option = '--out'): void {
  try {
    checkWriteTarget(out);
  } catch (e) {
    if (e instanceof WriteTargetError) throw new CliError(`${option}: ${e.message}`, { exitCode: 2, cause: e });
    throw e;
  }
  const parent = dirname(resolve(out));
  const parentStat = statOrNull(parent);
  if (!parentStat) {
    throw new CliError(`${option} ${shownPath(out)} cannot be written: the directory '${parent}' does not exist`, {
      exitCode: 2,
    });
  }
  checkOutDir(parent, option, out);
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
