import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { Generator } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { run, tempDir, TinyNet, writeCalibBatch, writeOnnx } from './testing/fixtures.js';

let dir: string;
let model: string;
let modelBytes: Buffer;
let calib: string;

beforeAll(() => {
  dir = tempDir();
  const g = new Generator(5);
  model = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(g));
  modelBytes = fs.readFileSync(model);
  calib = writeCalibBatch(dir, [4, 1, 28, 28], g);
});

const quantize = (out: string) => run('quantize', model, '--calib', calib, '--out', out);

async function expectUsageError(out: string, message: RegExp): Promise<void> {
  const r = await quantize(out);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(`'${out}'`);
  expect(r.stderr).toMatch(message);
  expect(r.stdout).toBe(''); // refused before any work
  expect(fs.readFileSync(model).equals(modelBytes)).toBe(true);
}

describe('qtk quantize --out', () => {
  it('refuses the input model itself, and a symbolic or hard link to it', async () => {
    await expectUsageError(model, /is the input model/);
    const sym = join(dir, 'sym.qtk');
    fs.symlinkSync(model, sym);
    await expectUsageError(sym, /is the input model/);
    const hard = join(dir, 'hard.qtk');
    fs.linkSync(model, hard);
    await expectUsageError(hard, /is the input model/);
  });
  it('refuses a FIFO, a symbolic link to /dev/null and a directory, and leaves them as they were', async () => {
    const sub = tempDir();
    const fifo = join(sub, 'pipe.qtk');
    execFileSync('mkfifo', [fifo]);
    await expectUsageError(fifo, /FIFO/);
    expect(fs.lstatSync(fifo).isFIFO()).toBe(true);
    const devnull = join(sub, 'null.qtk');
    fs.symlinkSync('/dev/null', devnull);
    await expectUsageError(devnull, /symbolic link to a character device/);
    expect(fs.readlinkSync(devnull)).toBe('/dev/null');
    const folder = join(sub, 'folder.qtk');
    fs.mkdirSync(folder);
    await expectUsageError(folder, /a directory/);
    expect(fs.readdirSync(sub).sort()).toEqual(['folder.qtk', 'null.qtk', 'pipe.qtk']);
  });
  it('writes through a symbolic link to a regular file and removes temporary files a killed run left', async () => {
    const sub = tempDir();
    fs.mkdirSync(join(sub, 'models'));
    const real = join(sub, 'models', 'fixed.qtk');
    fs.writeFileSync(real, 'an older model');
    const link = join(sub, 'fixed.qtk');
    fs.symlinkSync(real, link);
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const stale = join(sub, 'models', `.fixed.qtk.qtk-${dead}-k2x9a.tmp`);
    fs.writeFileSync(stale, 'half a model');
    const r = await quantize(link);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(loadModelFileSync(real).kind).toBe('fixed-point');
    expect(r.stdout).toContain(`written:      ${link} (${fs.statSync(real).size} bytes, fixed-point)`);
    expect(fs.readdirSync(join(sub, 'models'))).toEqual(['fixed.qtk']);
  });
});
