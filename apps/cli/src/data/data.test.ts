import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import jpeg from 'jpeg-js';
import { describe, expect, it } from 'vitest';
import { parseArgs, parseNumber, type CommandSpec } from '../args.js';
import { CliError } from '../io.js';
import { npyBytes, pngBytes, tempDir } from '../testing/fixtures.js';
import { decodeImage, imageToChw, resizeBilinear } from './image-decode.js';
import { listSampleFiles, loadSamples, readLabels } from './samples.js';

const rgba = (px: number[][]) => Uint8Array.from(px.flatMap(([r, g, b]) => [r!, g!, b!, 255]));

describe('images', () => {
  it('decodes PNG to RGBA and converts to greyscale (luma) or RGB, normalised', () => {
    const img = decodeImage(
      pngBytes(
        2,
        1,
        rgba([
          [255, 0, 0],
          [10, 10, 10],
        ]),
      ),
      'a.png',
    );
    expect([img.width, img.height]).toEqual([2, 1]);
    expect([...img.data]).toEqual([255, 0, 0, 255, 10, 10, 10, 255]);
    const grey = imageToChw(img, { channels: 1, width: 2, height: 1, mean: [0], std: [1] }, 'a.png');
    expect(grey[0]).toBeCloseTo((0.299 * 255) / 255, 6);
    expect(grey[1]).toBeCloseTo(10 / 255, 6); // a grey pixel keeps its value
    const rgb = imageToChw(img, { channels: 3, width: 2, height: 1, mean: [0.5, 0, 0], std: [0.5, 1, 2] }, 'a.png');
    // CHW: R plane, G plane, B plane
    expect([...rgb].map((v) => +v.toFixed(5))).toEqual([
      1,
      +((10 / 255 - 0.5) / 0.5).toFixed(5),
      0,
      +(10 / 255).toFixed(5),
      0,
      +(10 / 255 / 2).toFixed(5),
    ]);
  });

  it('decodes JPEG (lossy: within a few levels)', () => {
    const data = new Uint8Array(8 * 8 * 4).fill(200);
    const bytes = jpeg.encode({ data, width: 8, height: 8 }, 95).data;
    const img = decodeImage(new Uint8Array(bytes), 'a.jpg');
    expect([img.width, img.height]).toEqual([8, 8]);
    for (let i = 0; i < 64; i++) expect(Math.abs(img.data[4 * i]! - 200)).toBeLessThanOrEqual(3);
  });

  it('resizes bilinearly with half-pixel centres', () => {
    // 2×1 → 4×1: PyTorch's interpolate(align_corners=False) gives [0, 2.5, 7.5, 10]
    expect([...resizeBilinear(Float32Array.of(0, 10), 2, 1, 4, 1)]).toEqual([0, 2.5, 7.5, 10]);
    // 4×4 → 2×2 averages 2×2 blocks' centres
    const src = Float32Array.from({ length: 16 }, (_, i) => i);
    expect([...resizeBilinear(src, 4, 4, 2, 2)]).toEqual([2.5, 4.5, 10.5, 12.5]);
  });

  it('refuses files that are not images', () => {
    expect(() => decodeImage(new Uint8Array([1, 2, 3, 4]), 'x.png')).toThrow(/x.png: not a PNG or JPEG image/);
    expect(() => decodeImage(Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0, 0), 'y.png')).toThrow(
      /y.png: cannot decode the PNG image/,
    );
  });
});

describe('sample folders', () => {
  it('reads .npy samples and batches and images in sorted file-name order', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'b.npy'), npyBytes([2, 1, 2, 2], Float32Array.of(1, 1, 1, 1, 2, 2, 2, 2)));
    writeFileSync(join(dir, 'a.npy'), npyBytes([1, 2, 2], Float32Array.of(0, 0, 0, 0)));
    writeFileSync(
      join(dir, 'c.png'),
      pngBytes(
        2,
        2,
        rgba([
          [255, 255, 255],
          [255, 255, 255],
          [0, 0, 0],
          [0, 0, 0],
        ]),
      ),
    );
    writeFileSync(join(dir, 'notes.txt'), 'ignored');
    const files = listSampleFiles(dir, 'calibration');
    expect(files.map((f) => f.slice(dir.length + 1))).toEqual(['a.npy', 'b.npy', 'c.png']);
    const s = loadSamples(files, [1, 2, 2], { mean: [0.5], std: [0.5] });
    expect(s.tensor.shape).toEqual([4, 1, 2, 2]);
    expect([...s.tensor.values()]).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1, -1, -1]);
    expect(loadSamples(files, [1, 2, 2], { mean: [0], std: [1] }, 2).tensor.shape).toEqual([2, 1, 2, 2]);
  });

  it('explains shape mismatches and empty folders', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.npy'), npyBytes([3, 4], new Float32Array(12)));
    expect(() => loadSamples(listSampleFiles(dir, 'data'), [1, 2, 2], { mean: [0], std: [1] })).toThrow(
      /wrong input shape: .*a.npy has shape \[3, 4\], but the model takes samples of shape \[1, 2, 2\]/,
    );
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(() => listSampleFiles(empty, 'calibration')).toThrow(/holds no .npy, .png or .jpg\/.jpeg files/);
  });

  it('reads labels files: one integer per line, count checked', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'l.txt'), '3\n1\n\n4\n');
    expect([...readLabels(join(dir, 'l.txt'), 3)]).toEqual([3, 1, 4]);
    expect(() => readLabels(join(dir, 'l.txt'), 4)).toThrow(/holds 3 labels, but the data has 4 samples/);
    writeFileSync(join(dir, 'bad.txt'), '1\ncat\n');
    expect(() => readLabels(join(dir, 'bad.txt'), 2)).toThrow(/label 2: 'cat' is not a class index/);
  });
});

describe('argument parsing', () => {
  const spec: CommandSpec = {
    name: 'demo',
    summary: '',
    positionals: [{ name: 'MODEL', description: '' }],
    options: {
      n: { type: 'number', description: '', default: 4 },
      s: { type: 'string', description: '' },
      f: { type: 'boolean', description: '' },
    },
  };
  it('parses values, =values, flags, fractions and defaults', () => {
    const a = parseArgs(spec, ['m.onnx', '--s=x', '--f', '--n', '1/4', '--verbose']);
    expect(a).toEqual({
      positionals: ['m.onnx'],
      options: { n: 0.25, s: 'x', f: true },
      help: false,
      verbose: true,
      deprecated: [],
    });
    expect(parseArgs(spec, ['m']).options.n).toBe(4);
    expect(parseNumber('1/128')).toBe(1 / 128);
  });
  it('gives usage errors (exit code 2) naming the problem', () => {
    const err = (argv: string[]) => {
      try {
        parseArgs(spec, argv);
      } catch (e) {
        expect(e).toBeInstanceOf(CliError);
        expect((e as CliError).exitCode).toBe(2);
        return (e as Error).message;
      }
      throw new Error('no error');
    };
    expect(err([])).toMatch(/^missing argument MODEL/);
    expect(err(['m', 'extra'])).toMatch(/^unexpected argument 'extra'/);
    expect(err(['m', '--n', 'abc'])).toMatch(/^option '--n' must be a number, got 'abc'/);
    expect(err(['m', '--s'])).toMatch(/^option '--s' needs a value/);
    expect(err(['m', '--f=1'])).toMatch(/^option '--f' is a flag/);
    expect(err(['m', '-x'])).toMatch(/^unknown option '-x'/);
  });
});
