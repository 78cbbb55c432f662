// Bad data files and bad calibration data (issue 12, items 2 and 5): every case is a clear error
// naming the file (exit code 1, no model written) or, for data that can be used but says little,
// a warning in the summary.
import '@qtk/march-bayes';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { npyBytes, run, runQuantize, tempDir, TinyNet, writeOnnx } from './testing/fixtures.js';

let root: string;
let tiny: string;
let labels: string;
const g = new Generator(11);
const randomSamples = (n: number) => rand([n, 1, 28, 28], { low: -1, high: 1, generator: g }).values() as Float32Array;
const filled = (n: number, v: number) => new Float32Array(n * 784).fill(v);
const withValue = (n: number, at: number, v: number) => {
  const d = randomSamples(n);
  d[at] = v;
  return d;
};

let serial = 0;
/** A fresh folder holding one good .npy (2 samples) and whatever `add` puts beside it. */
function folder(add: (dir: string) => void, good = true): string {
  const dir = join(root, `case${serial++}`);
  mkdirSync(dir);
  if (good) writeFileSync(join(dir, 'a-good.npy'), npyBytes([2, 1, 28, 28], randomSamples(2)));
  add(dir);
  return dir;
}

beforeAll(() => {
  root = tempDir();
  tiny = writeOnnx(join(root, 'tiny.onnx'), new TinyNet(new Generator(3)));
  labels = join(root, 'labels-4.txt');
  writeFileSync(labels, '1\n2\n3\n4\n');
});

describe('bad calibration files: an error naming the file (exit 1), nothing written', () => {
  const cases: [string, (dir: string) => void, (dir: string) => string][] = [
    [
      'a .npy with zero samples',
      (d) => writeFileSync(join(d, 'z.npy'), npyBytes([0, 1, 28, 28], new Float32Array(0))),
      (d) => `${join(d, 'z.npy')} holds no samples: its array of shape [0, 1, 28, 28] is empty`,
    ],
    [
      'a .npy with a zero-size dimension',
      (d) => writeFileSync(join(d, 'z.npy'), npyBytes([1, 0, 28], new Float32Array(0))),
      (d) => `${join(d, 'z.npy')} holds no samples`,
    ],
    [
      'a directory named *.npy',
      (d) => mkdirSync(join(d, 'dir.npy')),
      (d) => `calibration sample '${join(d, 'dir.npy')}' is a directory, not a file`,
    ],
    [
      'a broken symbolic link named *.npy',
      (d) => symlinkSync(join(d, 'missing-target.npy'), join(d, 'link.npy')),
      (d) => `calibration sample '${join(d, 'link.npy')}' is a broken symbolic link`,
    ],
    [
      'a directory named *.png',
      (d) => mkdirSync(join(d, 'img.png')),
      (d) => `calibration sample '${join(d, 'img.png')}' is a directory, not a file`,
    ],
    [
      'a NaN in one row of a batch',
      (d) => writeFileSync(join(d, 'n.npy'), npyBytes([3, 1, 28, 28], withValue(3, 784 + 5, NaN))),
      (d) =>
        `${join(d, 'n.npy')}: sample 1 (row 1 of axis 0) holds 1 non-finite value(s) (NaN or ±Infinity) of 784; fix the data or pass --skip-nonfinite`,
    ],
    [
      '+Infinity in a single sample',
      (d) => writeFileSync(join(d, 'i.npy'), npyBytes([1, 28, 28], withValue(1, 7, Infinity))),
      (d) => `${join(d, 'i.npy')}: its sample holds 1 non-finite value(s)`,
    ],
    [
      'all-NaN samples',
      (d) => writeFileSync(join(d, 'nan.npy'), npyBytes([4, 1, 28, 28], filled(4, NaN))),
      (d) => `${join(d, 'nan.npy')}: sample 0 (row 0 of axis 0) holds 784 non-finite value(s)`,
    ],
  ];
  it.each(cases)('%s', async (_what, add, message) => {
    const dir = folder(add);
    const out = join(dir, 'out.qtk');
    const r = await runQuantize(tiny, dir, out);
    expect(r.stderr).toContain(message(dir));
    expect(r.stderr).not.toContain('unexpected error');
    expect(r.code).toBe(1);
    expect(existsSync(out)).toBe(false);
  });

  it('--skip-nonfinite with nothing else left: an error, not an empty calibration', async () => {
    const dir = folder((d) => writeFileSync(join(d, 'nan.npy'), npyBytes([4, 1, 28, 28], filled(4, NaN))), false);
    const r = await runQuantize(tiny, dir, join(dir, 'out.qtk'), { 'skip-nonfinite': true });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'qtk: error: no sample is left: all 4 sample(s) read hold non-finite values (NaN or ±Infinity)\n',
    );
  });
});

describe('bad evaluation files and labels: an error naming the file (exit 1)', () => {
  const cases: [string, (dir: string) => string[], (dir: string) => string][] = [
    ['--labels is a directory', (d) => ['--labels', d], (d) => `labels file '${d}' is a directory, not a file`],
    [
      'DIR/labels.txt is a directory',
      (d) => {
        mkdirSync(join(d, 'labels.txt'));
        return [];
      },
      (d) => `labels file '${join(d, 'labels.txt')}' is a directory, not a file`,
    ],
    [
      '--labels is a broken symbolic link',
      (d) => {
        symlinkSync(join(d, 'gone.txt'), join(d, 'l.txt'));
        return ['--labels', join(d, 'l.txt')];
      },
      (d) => `labels file '${join(d, 'l.txt')}' is a broken symbolic link`,
    ],
    [
      'a .npy with zero samples',
      (d) => {
        writeFileSync(join(d, 'z.npy'), npyBytes([0, 1, 28, 28], new Float32Array(0)));
        return ['--labels', labels];
      },
      (d) => `${join(d, 'z.npy')} holds no samples`,
    ],
    [
      'a directory named *.npy',
      (d) => {
        mkdirSync(join(d, 'dir.npy'));
        return ['--labels', labels];
      },
      (d) => `data sample '${join(d, 'dir.npy')}' is a directory, not a file`,
    ],
    [
      'a binary --labels file: the bad line is shortened and escaped',
      (d) => {
        writeFileSync(
          join(d, 'bin.txt'),
          Buffer.concat([Buffer.from([0x1b, 0x5b, 0x32, 0x4a, 0, 7, 0xff]), Buffer.alloc(300, 0x41)]),
        );
        return ['--labels', join(d, 'bin.txt')];
      },
      (d) =>
        `${join(d, 'bin.txt')}, label 1: '\\u001b[2J\\u0000\\u0007\\ufffd${'A'.repeat(33)}...' is not a class index`,
    ],
    [
      'a NaN sample',
      (d) => {
        writeFileSync(join(d, 'n.npy'), npyBytes([2, 1, 28, 28], withValue(2, 3, NaN)));
        return ['--labels', labels];
      },
      (d) => `${join(d, 'n.npy')}: sample 0 (row 0 of axis 0) holds 1 non-finite value(s)`,
    ],
  ];
  it.each(cases)('%s', async (_what, add, message) => {
    let extra: string[] = [];
    const dir = folder((d) => (extra = add(d)));
    const r = await run('eval', tiny, '--data', dir, ...extra);
    expect(r.stderr).toContain(message(dir));
    expect(r.stderr).not.toContain('unexpected error');
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain('accuracy');
  });
});

describe('calibration data that says little is never silent', () => {
  const warningsOf = (stdout: string) => Number(/^warnings:\s+(\d+)/m.exec(stdout)?.[1]);

  it('--skip-nonfinite leaves such samples out and counts them in the summary', async () => {
    const dir = folder((d) =>
      writeFileSync(join(d, 'n.npy'), npyBytes([3, 1, 28, 28], withValue(3, 784 + 5, -Infinity))),
    );
    const r = await runQuantize(tiny, dir, join(dir, 'out.qtk'), { 'skip-nonfinite': true });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      `calibration: 4 samples of shape [1, 28, 28] from 2 file(s) in ${dir}; 1 sample(s) holding NaN or ±Infinity left out\n`,
    );
  });

  it('all-zero data with --input-scale auto: warnings naming the constant data and the fake-quants that saw only zeros', async () => {
    const dir = folder((d) => writeFileSync(join(d, 'zero.npy'), npyBytes([4, 1, 28, 28], filled(4, 0))), false);
    const r = await runQuantize(tiny, dir, join(dir, 'out.qtk'), { 'input-scale': 'auto' });
    expect(r.code).toBe(0);
    expect(warningsOf(r.stdout)).toBeGreaterThanOrEqual(2);
    expect(r.stdout).toContain('  - the calibration data is constant (every value is 0)');
    expect(r.stdout).toMatch(
      / {2}- calibration: fake-quant '[^']+' saw only zeros \(or values too close to zero for its dtype\)/,
    );
  });

  it('constant nonzero data: a warning', async () => {
    const dir = folder((d) => writeFileSync(join(d, 'c.npy'), npyBytes([4, 1, 28, 28], filled(4, 0.5))), false);
    const r = await runQuantize(tiny, dir, join(dir, 'out.qtk'));
    expect(r.code).toBe(0);
    expect(warningsOf(r.stdout)).toBeGreaterThanOrEqual(1);
    expect(r.stdout).toContain('  - the calibration data is constant (every value is 0.5)');
  });

  it('unnormalised 0..255 samples against the default --input-scale 1/128: a warning naming the share and what to do', async () => {
    const pixels = Float32Array.from({ length: 4 * 784 }, (_, i) => (i * 7) % 256);
    const dir = folder((d) => writeFileSync(join(d, 'raw.npy'), npyBytes([4, 1, 28, 28], pixels)), false);
    const r = await runQuantize(tiny, dir, join(dir, 'out.qtk'));
    expect(r.code).toBe(0);
    expect(warningsOf(r.stdout)).toBe(1);
    // only the values 0 fit in [-1, 0.9921875]: 13 of 3136
    expect(r.stdout).toContain(
      "  - calibration: fake-quant '_generated_quant_stub_0.activationPostProcess' clamped 99.6 % of the values it saw (3123 of 3136 lie beyond [-1, 0.9921875] (fixed scale 0.0078125))",
    );
    expect(r.stdout).toContain(
      '    the calibration samples do not fit --input-scale 1/128: normalise them (images: --mean/--std; .npy samples: scale them to [-1, 1] yourself) or pass --input-scale auto',
    );
  });

  it('samples in [-1, 1], a third of them exactly -1: no warning', async () => {
    const values = Float32Array.from({ length: 4 * 784 }, (_, i) => (i % 3 === 0 ? -1 : ((i % 255) / 255) * 2 - 1));
    const dir = folder((d) => writeFileSync(join(d, 'unit.npy'), npyBytes([4, 1, 28, 28], values)), false);
    const r = await runQuantize(tiny, dir, join(dir, 'out.qtk'));
    expect(r.code).toBe(0);
    expect(warningsOf(r.stdout)).toBe(0);
  });

  it('representative data: no warning', async () => {
    const dir = folder(() => {});
    const r = await runQuantize(tiny, dir, join(dir, 'out.qtk'));
    expect(r.code).toBe(0);
    expect(warningsOf(r.stdout)).toBe(0);
  });
});
