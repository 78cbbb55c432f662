import {
  closeSync,
  fchmodSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { constants } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { WriteTargetError } from '../errors.js';

// Policy (packages/nn/docs/saving-files.md): QTK writes only to a new path or over a regular file.
// A symbolic link is followed when it resolves to an existing regular file: that file is replaced
// atomically and the link is kept. A link to anything else, or to nothing, is refused, as is an
// existing directory, FIFO, socket or device.

/** What a non-regular file is, for messages. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/**
 * Where a save to `path` really goes, checked against the policy above: `path` itself when it does
 * not exist or is a regular file, the link's target when `path` is a symbolic link to a regular file.
 * Throws WriteTargetError for anything else. A path that cannot be examined (missing directory, no
 * permission) is returned as is: writing the temporary file then reports the system error.
 */
export function checkWriteTarget(path: string): { target: string; mode?: number } {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    return { target: path };
  }
  if (st.isFile()) return { target: path, mode: st.mode & 0o7777 };
  if (!st.isSymbolicLink()) throw new WriteTargetError(path, kindOf(st));
  let real: string;
  let target: Stats;
  try {
    real = realpathSync(path);
    target = statSync(real);
  } catch (err) {
    throw new WriteTargetError(path, 'a symbolic link to a missing file', { cause: err });
  }
  if (!target.isFile()) throw new WriteTargetError(path, `a symbolic link to ${kindOf(target)} ('${real}')`);
  return { target: real, mode: target.mode & 0o7777 };
}

// Temporary files: `.<name>.qtk-<pid>-<random>.tmp` beside the target (the rename must not cross
// file systems). Older versions wrote `.<name>.<pid>.<random>.tmp`; both are recognised as stale.
const STALE = /^(?:qtk-)?(\d+)[.-][0-9a-z]+\.tmp$/;

function tempPath(target: string): string {
  return join(
    dirname(target),
    `.${basename(target)}.qtk-${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}.tmp`,
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes temporary files for `target` left by processes that no longer run (killed mid-write). */
export function removeStaleTempFiles(target: string): string[] {
  const dir = dirname(target);
  const prefix = `.${basename(target)}.`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = STALE.exec(name.slice(prefix.length));
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || isAlive(pid)) continue;
    const p = join(dir, name);
    try {
      if (!lstatSync(p).isFile()) continue;
      unlinkSync(p);
      removed.push(p);
    } catch {
      /* gone meanwhile, or not ours to remove */
    }
  }
  return removed;
}

// Temporary files being written, removed by SIGINT/SIGTERM handlers that exist only while a write is
// pending. The handlers are taken down two turns of the event loop after the last write ends, so a
// signal that arrived during a synchronous write (JS cannot run then) is still seen and re-raised
// rather than lost.
const pending = new Set<string>();
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
let installed = false;
let teardown: NodeJS.Immediate | undefined;

function onSignal(signal: NodeJS.Signals): void {
  for (const p of pending) {
    try {
      unlinkSync(p);
    } catch {
      /* never created */
    }
  }
  pending.clear();
  uninstall();
  // Other listeners decide for themselves; alone, die of the signal as if we had not been here.
  if (process.listenerCount(signal) > 0) return;
  process.exitCode = 128 + (constants.signals[signal] ?? 0);
  process.kill(process.pid, signal);
}

function uninstall(): void {
  if (teardown) clearImmediate(teardown);
  teardown = undefined;
  if (!installed) return;
  for (const s of SIGNALS) process.removeListener(s, onSignal);
  installed = false;
}

function track(tmp: string): void {
  if (teardown) clearImmediate(teardown);
  teardown = undefined;
  if (!installed) {
    for (const s of SIGNALS) process.on(s, onSignal);
    installed = true;
  }
  pending.add(tmp);
}

function untrack(tmp: string): void {
  pending.delete(tmp);
  if (pending.size === 0 && installed && !teardown) {
    // two turns: the first check phase may come right after the callback that did the write, before
    // the loop has polled for the signal
    teardown = setImmediate(() => {
      teardown = setImmediate(() => {
        teardown = undefined;
        if (pending.size === 0) uninstall();
      });
    });
  }
}

function bytesOf(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? new TextEncoder().encode(data) : data;
}

/** What both writers do before writing: check the target, clear stale temporary files, pick and track the new one. */
function startAtomicWrite(
  path: string,
  data: Uint8Array | string,
): { bytes: Uint8Array; target: string; mode: number | undefined; tmp: string } {
  const bytes = bytesOf(data);
  const { target, mode } = checkWriteTarget(path);
  removeStaleTempFiles(target);
  const tmp = tempPath(target);
  track(tmp);
  return { bytes, target, mode, tmp };
}

/**
 * Writes `data` to `path` atomically: a temporary file in the same directory, flushed, then renamed
 * over `path`. On any failure the temporary file is removed and `path` is left as it was.
 *
 * Only a new path or a regular file is written; an existing directory, FIFO, socket or device is
 * refused with WriteTargetError. A symbolic link to a regular file is followed: the file it points to
 * is replaced (keeping its permissions) and the link stays; a link to anything else or to nothing is
 * refused. SIGINT/SIGTERM during the write remove the temporary file before the process ends; temporary
 * files of processes killed outright (SIGKILL) are removed by the next save to the same target.
 * The check and the rename are not one atomic step: a target swapped in between is not detected.
 */
export function writeFileAtomicSync(path: string, data: Uint8Array | string): void {
  const { bytes, target, mode, tmp } = startAtomicWrite(path, data);
  try {
    const fd = openSync(tmp, 'wx');
    try {
      if (mode !== undefined) fchmodSync(fd, mode);
      let written = 0;
      while (written < bytes.byteLength) written += writeSync(fd, bytes, written);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, target);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* never created or already gone */
    }
    throw err;
  } finally {
    untrack(tmp);
  }
}

/** The asynchronous writeFileAtomicSync (same policy on targets, links and signals). */
export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const { bytes, target, mode, tmp } = startAtomicWrite(path, data);
  try {
    const fh = await open(tmp, 'wx');
    try {
      if (mode !== undefined) await fh.chmod(mode);
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, target);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  } finally {
    untrack(tmp);
  }
}
