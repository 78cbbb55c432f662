import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic, writeFileAtomicSync } from './atomic-write.js';
import { WriteTargetError } from '../errors.js';

const settle = () => new Promise((r) => setTimeout(r, 20));
const tempDir = () => mkdtempSync(join(tmpdir(), 'qtk-atomic-'));

/** The pid of a process that has exited (so no process runs under it, barring reuse). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid!;
}

/** Expects both writers to refuse `path` with a WriteTargetError naming it and saying what it is. */
async function expectRefused(path: string, kind: RegExp): Promise<void> {
  let sync: unknown;
  try {
    writeFileAtomicSync(path, 'new');
  } catch (e) {
    sync = e;
  }
  expect(sync).toBeInstanceOf(WriteTargetError);
  expect((sync as Error).message).toContain(`'${path}'`);
  expect((sync as Error).message).toMatch(kind);
  const async = await writeFileAtomic(path, 'new').then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(async).toBeInstanceOf(WriteTargetError);
  expect((async as WriteTargetError).path).toBe(path);
}

describe('atomic writes', () => {
  it('replace the file and leave no temporary file behind', async () => {
    const dir = tempDir();
    const path = join(dir, 'f.bin');
    writeFileAtomicSync(path, Uint8Array.of(1, 2, 3));
    expect([...readFileSync(path)]).toEqual([1, 2, 3]);
    await writeFileAtomic(path, 'text');
    expect(readFileSync(path, 'utf8')).toBe('text');
    expect(readdirSync(dir)).toEqual(['f.bin']);
  });
  it('leave an existing file untouched when the write fails', async () => {
    const dir = tempDir();
    const path = join(dir, 'f.bin');
    writeFileSync(path, 'old');
    const missingDir = join(dir, 'no-such-dir', 'f.bin');
    expect(() => writeFileAtomicSync(missingDir, 'new')).toThrow(/ENOENT/);
    await expect(writeFileAtomic(missingDir, 'new')).rejects.toThrow(/ENOENT/);
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
    expect(readdirSync(dir)).toEqual(['f.bin']);
  });
});

describe('atomic writes: what they refuse to replace', () => {
  it('refuse a FIFO and leave it a FIFO', async () => {
    const dir = tempDir();
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    await expectRefused(fifo, /FIFO/);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(readdirSync(dir)).toEqual(['pipe']);
  });
  it('refuse a symbolic link to a device (/dev/null) and keep the link', async () => {
    const dir = tempDir();
    const link = join(dir, 'out.qtk');
    symlinkSync('/dev/null', link);
    await expectRefused(link, /symbolic link to a character device/);
    expect(readlinkSync(link)).toBe('/dev/null');
    expect(statSync('/dev/null').isCharacterDevice()).toBe(true);
    expect(readdirSync(dir)).toEqual(['out.qtk']);
  });
  it('refuse a directory, even an empty one', async () => {
    const dir = tempDir();
    const sub = join(dir, 'model.qtk');
    mkdirSync(sub);
    await expectRefused(sub, /a directory/);
    expect(statSync(sub).isDirectory()).toBe(true);
  });
  it('refuse a dangling symbolic link rather than replace it', async () => {
    const dir = tempDir();
    const link = join(dir, 'out.qtk');
    symlinkSync(join(dir, 'nowhere', 'x'), link);
    await expectRefused(link, /symbolic link to a missing file/);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });
});

describe('atomic writes: symbolic links to regular files', () => {
  it('follow the link, replace the file it points to (keeping its mode) and keep the link', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'real'));
    const real = join(dir, 'real', 'model.qtk');
    writeFileSync(real, 'old');
    chmodSync(real, 0o640);
    const link = join(dir, 'link.qtk');
    symlinkSync(real, link);
    writeFileAtomicSync(link, 'sync');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toBe('sync');
    await writeFileAtomic(link, 'async');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toBe('async');
    expect(statSync(real).mode & 0o777).toBe(0o640);
    expect(readdirSync(join(dir, 'real'))).toEqual(['model.qtk']);
  });
});

describe('atomic writes: temporary files', () => {
  it('remove temporary files of dead processes for the same target, not those of live ones or other targets', () => {
    const dir = tempDir();
    const path = join(dir, 'f.bin');
    const dead = deadPid();
    const stale = [`.f.bin.qtk-${dead}-k2x9a.tmp`, `.f.bin.${dead}.mf3k2x9a1b.tmp`]; // current and older naming
    const kept = [`.f.bin.qtk-${process.ppid}-abc.tmp`, `.g.bin.qtk-${dead}-abc.tmp`, '.f.bin.notes.tmp'];
    for (const n of [...stale, ...kept]) writeFileSync(join(dir, n), 'x');
    writeFileAtomicSync(path, 'new');
    expect(readdirSync(dir).sort()).toEqual([...kept, 'f.bin'].sort());
  });
  it('install SIGINT/SIGTERM handlers only while a write is pending', async () => {
    const dir = tempDir();
    await settle(); // handlers of earlier writes in this file are gone
    const before = { int: process.listenerCount('SIGINT'), term: process.listenerCount('SIGTERM') };
    const pending = writeFileAtomic(join(dir, 'f.bin'), new Uint8Array(1 << 20));
    expect(process.listenerCount('SIGINT')).toBe(before.int + 1);
    expect(process.listenerCount('SIGTERM')).toBe(before.term + 1);
    await pending;
    writeFileAtomicSync(join(dir, 'g.bin'), 'x');
    await settle();
    expect(process.listenerCount('SIGINT')).toBe(before.int);
    expect(process.listenerCount('SIGTERM')).toBe(before.term);
  });
});

// A real child process: a large save, SIGTERM as soon as its temporary file appears.
const CHILD = `
import { writeFileAtomic, writeFileAtomicSync } from ${JSON.stringify(join(__dirname, 'atomic-write.ts'))};
const [mode, path] = process.argv.slice(2);
const data = new Uint8Array(384 << 20).fill(7);
if (mode === 'sync') writeFileAtomicSync(path, data);
else await writeFileAtomic(path, data);
setTimeout(() => {}, 5000); // the signal must end the process, not the end of the work
`;

interface Interrupted {
  signal: NodeJS.Signals | null;
  /** the temporary file seen during the save */
  temp: string;
  pid: number;
  /** the folder's files afterwards */
  files: string[];
  targetSize: number;
}

async function saveAndTerminate(mode: 'sync' | 'async'): Promise<Interrupted> {
  const dir = tempDir();
  const script = join(dir, 'child.mts');
  writeFileSync(script, CHILD);
  const work = join(dir, 'work');
  mkdirSync(work);
  const target = join(work, 'big.bin');
  writeFileSync(target, 'old');
  const child = spawn(process.execPath, ['--conditions=qtk-source', '--import', 'tsx', script, mode, target], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  const deadline = Date.now() + 30_000;
  let temp: string | undefined;
  for (;;) {
    temp = readdirSync(work).find((n) => n.endsWith('.tmp'));
    if (temp) break;
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`the child never started its save: ${stderr}`);
    await new Promise((r) => setTimeout(r, 1));
  }
  child.kill('SIGTERM');
  const signal = await exited;
  return { signal, temp, pid: child.pid!, files: readdirSync(work), targetSize: statSync(target).size };
}

describe('atomic writes: interrupted by SIGTERM in a child process', () => {
  it('an asynchronous save removes its temporary file, leaves the target as it was and dies of the signal', async () => {
    const r = await saveAndTerminate('async');
    expect(r.temp).toMatch(new RegExp(`^\\.big\\.bin\\.qtk-${r.pid}-[0-9a-z]+\\.tmp$`));
    expect(r.files).toEqual(['big.bin']);
    expect(r.targetSize).toBe(3);
    expect(r.signal).toBe('SIGTERM');
  });
  it('a synchronous save finishes its rename before the signal ends the process, leaving no temporary file', async () => {
    const r = await saveAndTerminate('sync');
    expect(r.files).toEqual(['big.bin']);
    expect(r.targetSize).toBe(384 << 20);
    expect(r.signal).toBe('SIGTERM');
  });
});
