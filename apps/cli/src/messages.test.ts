// Issue 27's messages: deprecated --limit, resolved relative paths, sample layouts, output paths checked up front,
// labels outside the model's classes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { npyBytes, run, runQuantize, tempDir, TinyNet, writeOnnx } from './testing/fixtures.js';

let dir: string;
let tiny: string;
let calib: string;
/** A regular file: a path under it can never be written, not even by root. */
let aFile: string;

const sample = (shape: number[], seed: number) =>
  npyBytes(shape, rand(shape, { low: -1, high: 1, generator: new Generator(seed) }).values() as Float32Array);

beforeAll(() => {
  dir = tempDir();
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(3)));
  calib = join(dir, 'calib');
  mkdirSync(calib);
  writeFileSync(join(calib, 'a.npy'), sample([6, 1, 28, 28], 1));
  aFile = join(dir, 'a-file');
  writeFileSync(aFile, 'not a directory');
});

describe('--calib-limit, and --limit kept as its deprecated spelling where it counted calibration samples', () => {
  it('--calib-limit N calibrates on N samples', async () => {
    const r = await runQuantize(tiny, calib, join(dir, 'l.qtk'), { 'calib-limit': '2' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('calibration: 2 samples of shape [1, 28, 28]');
  });

  it('--limit N still works, with a warning naming --calib-limit', async () => {
    const r = await runQuantize(tiny, calib, join(dir, 'l.qtk'), { limit: '3' });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      "qtk: warning: --limit is deprecated for 'qtk quantize': use --calib-limit N (calibrate on at most N samples)\n",
    );
    expect(r.stdout).toContain('calibration: 3 samples of shape [1, 28, 28]');
  });

  it('--help lists --calib-limit for the calibrating commands and --limit for the evaluating ones', async () => {
    for (const c of ['quantize', 'profile', 'sensitivity'])
      expect((await run(c, '--help')).stdout).toMatch(/^ {2}--calib-limit N {11}calibrate on at most N samples/m);
    expect((await run('eval', '--help')).stdout).toMatch(/^ {2}--limit N {17}evaluate only the first N samples/m);
    expect((await run('eval', '--help')).stdout).not.toContain('--calib-limit');
  });
});

describe('paths in errors', () => {
  it('a relative path is shown resolved too', async () => {
    const rel = relative(process.cwd(), join(dir, 'no-such-dir'));
    const r = await runQuantize(tiny, rel, join(dir, 'x.qtk'));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`qtk: error: calibration directory '${rel}' (${resolve(rel)}) does not exist\n`);
    const m = await run('inspect', 'no-such-model.onnx');
    expect(m.stderr).toBe(`qtk: error: model 'no-such-model.onnx' (${resolve('no-such-model.onnx')}) does not exist\n`);
  });
});

describe('a .npy in another layout says how to fix it', () => {
  it.each([
    [[28, 28], 'it looks like one sample without the channel axis: save it as [1, 28, 28] (numpy: x[None])'],
    [
      [3, 28, 28],
      'it looks like a batch of 3 samples without the channel axis: save it as [3, 1, 28, 28] (numpy: x[:, None])',
    ],
    [
      [28, 28, 1],
      'it looks like channels-last data (H, W, C): move the channel axis first (numpy: x.transpose(2, 0, 1))',
    ],
  ])('%j', async (shape, hint) => {
    const d = join(dir, `layout-${shape.join('x')}`);
    mkdirSync(d);
    writeFileSync(join(d, 's.npy'), sample(shape, 2));
    const r = await runQuantize(tiny, d, join(dir, 'x.qtk'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`but the model takes samples of shape [1, 28, 28]`);
    expect(r.stderr).toContain(hint);
  });
});

describe('output paths are checked before any work', () => {
  // Tests run as root, for whom a read-only directory is writable: a path under a regular file is unwritable for
  // everyone (ENOTDIR), so it stands in for an unwritable directory.
  it.each([
    ['sensitivity', (out: string) => ['sensitivity', tiny, '--calib', calib, '--out', out]],
    ['quantize', (out: string) => ['quantize', tiny, '--calib', calib, '--out', out]],
    ['export', (out: string) => ['export', tiny, '--out', out]],
  ])('qtk %s --out under a regular file fails at once, naming the path', async (_c, argv) => {
    const out = join(aFile, 'table.json');
    const r = await run(...argv(out));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `qtk: error: --out '${out}' cannot be written: '${aFile}' is a file, not a directory; choose a path in a directory\n`,
    );
    expect(r.stdout).toBe(''); // no import, no calibration line: nothing ran
  });

  it('a missing directory is refused up front too; profile checks the folder it would create', async () => {
    const out = join(dir, 'missing', 'table.json');
    const r = await run('sensitivity', tiny, '--calib', calib, '--out', out);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `--out '${out}' cannot be written: the directory '${join(dir, 'missing')}' does not exist`,
    );
    const p = await run('profile', tiny, '--calib', calib, '--out', join(aFile, 'report'));
    expect(p.code).toBe(2);
    expect(p.stderr).toContain(`is a file, not a directory`);
    expect(p.stdout).toBe('');
  });
});

describe('qtk eval: labels the model has no class for', () => {
  it.each([
    ['57', 57],
    ['4000000000', 4000000000],
  ])(
    'label %s on a 10-class model is an error naming the labels file, the label and the class count',
    async (_t, bad) => {
      const d = join(dir, `labels-${bad}`);
      mkdirSync(d);
      writeFileSync(join(d, 'x.npy'), sample([3, 1, 28, 28], 4));
      writeFileSync(join(d, 'labels.txt'), `1\n${bad}\n2\n`);
      const r = await run('eval', tiny, '--data', d);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `qtk: error: ${join(d, 'labels.txt')}, label 2: class ${bad} is not a class of the model, which has 10 classes (0 to 9); fix the labels, or evaluate the model these labels belong to\n`,
      );
      expect(r.stdout).toBe('');
    },
  );
});
