import { gzipSync } from 'node:zlib';
import { arange, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { CompressedDataError, DataFormatError } from '../errors.js';
import { rawToTensor } from './convert.js';
import { DataLoader } from './data-loader.js';
import { fashionMnistFromIdx } from './fashion-mnist.js';
import { parseIdx } from './idx.js';
import { idxBytes, npyBytes } from '../testing/data-bytes.js';
import { parseNpy } from './npy.js';
import { formatDuration, ProgressBar } from './progress.js';

describe('IDX reader', () => {
  it('reads uint8 with dims parsed big-endian', () => {
    const a = parseIdx(idxBytes(0x08, [2, 3], [1, 2, 3, 250, 251, 252]));
    expect(a.dtype).toBe('uint8');
    expect(a.shape).toEqual([2, 3]);
    expect([...a.data]).toEqual([1, 2, 3, 250, 251, 252]);
  });

  it('decodes big-endian int16, int32, float32 and float64', () => {
    expect([...parseIdx(idxBytes(0x0b, [2], [0xff, 0xfe, 0x01, 0x00])).data]).toEqual([-2, 256]);
    expect([...parseIdx(idxBytes(0x0c, [1], [0x80, 0, 0, 1])).data]).toEqual([-2147483647]);
    expect([...parseIdx(idxBytes(0x0d, [1], [0x3f, 0xc0, 0, 0])).data]).toEqual([1.5]);
    expect([...parseIdx(idxBytes(0x0e, [1], [0xc0, 0x04, 0, 0, 0, 0, 0, 0])).data]).toEqual([-2.5]);
    expect([...parseIdx(idxBytes(0x09, [2], [0xff, 0x7f])).data]).toEqual([-1, 127]);
  });

  it('explains bad files', () => {
    expect(() => parseIdx(Uint8Array.from([0, 0]), 'f')).toThrow(/f: truncated IDX header: 2 bytes/);
    expect(() => parseIdx(Uint8Array.from([1, 2, 8, 1, 0, 0, 0, 0]))).toThrow(/bad IDX magic 0x01020801/);
    expect(() => parseIdx(Uint8Array.from([0, 0, 7, 1, 0, 0, 0, 0]))).toThrow(/unknown IDX dtype code 0x7/);
    expect(() => parseIdx(Uint8Array.from([0, 0, 8, 2, 0, 0, 0, 1]))).toThrow(/2 dims need 12 bytes, file has 8/);
    expect(() => parseIdx(idxBytes(0x08, [2, 2], [1, 2, 3]))).toThrow(DataFormatError);
    expect(() => parseIdx(idxBytes(0x08, [2, 2], [1, 2, 3]))).toThrow(/needs 4 bytes, file has 3/);
    expect(() => parseIdx(idxBytes(0x08, [1], [1, 2]))).toThrow(/1 trailing bytes/);
  });

  it('refuses gzipped bytes with a CompressedDataError saying to inflate them first', () => {
    const e = (() => {
      try {
        parseIdx(gzipSync(idxBytes(0x08, [4], [1, 2, 3, 4])), 'a.idx.gz');
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(CompressedDataError);
    expect(DataFormatError.isInstance(e)).toBe(true);
    expect(e).toMatchObject({ code: 'E_COMPRESSED_DATA', compression: 'gzip', path: 'a.idx.gz' });
    expect((e as Error).message).toBe(
      "a.idx.gz: the IDX bytes are gzip-compressed; inflate them first (readIdx or inflateIdx from @qtk/nn/node, DecompressionStream('gzip') in a browser)",
    );
  });
});

describe('NPY reader', () => {
  it('reads v1 float32 in C order', () => {
    const body = new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6.5]).buffer);
    const a = parseNpy(npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", body));
    expect(a.dtype).toBe('float32');
    expect(a.shape).toEqual([2, 3]);
    expect([...a.data]).toEqual([1, 2, 3, 4, 5, 6.5]);
    const t = rawToTensor(a);
    expect(t.shape).toEqual([2, 3]);
    expect(t.at(1, 2)).toBe(6.5);
  });

  it('reads v2 int16, v3 uint8, int8, int32, float64, 1-d and 0-d shapes', () => {
    const i2 = parseNpy(
      npyBytes(
        2,
        "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }",
        new Uint8Array(new Int16Array([-5, 0, 300]).buffer),
      ),
    );
    expect([i2.dtype, i2.shape, [...i2.data]]).toEqual(['int16', [3], [-5, 0, 300]]);
    const u1 = parseNpy(
      npyBytes(3, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1), }", Uint8Array.from([7, 255])),
    );
    expect([u1.dtype, u1.shape, [...u1.data]]).toEqual(['uint8', [2, 1], [7, 255]]);
    expect(rawToTensor(u1).dtype).toBe('int32');
    const i1 = parseNpy(
      npyBytes(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", Uint8Array.from([0xff, 5])),
    );
    expect([...i1.data]).toEqual([-1, 5]);
    const i4 = parseNpy(
      npyBytes(
        1,
        "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }",
        new Uint8Array(new Int32Array([-70000]).buffer),
      ),
    );
    expect([...i4.data]).toEqual([-70000]);
    const f8 = parseNpy(
      npyBytes(
        1,
        "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
        new Uint8Array(new Float64Array([0.1]).buffer),
      ),
    );
    expect([f8.shape, [...f8.data]]).toEqual([[], [0.1]]);
  });

  it('rejects Fortran order, big-endian, truncation and bad magic clearly', () => {
    const f4 = new Uint8Array(16);
    expect(() =>
      parseNpy(npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f4), 'm.npy'),
    ).toThrow(/m\.npy: array is stored in Fortran \(column-major\) order/);
    expect(() => parseNpy(npyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", f4))).toThrow(
      /big-endian dtype '>f4'/,
    );
    expect(() => parseNpy(npyBytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", f4))).toThrow(
      /unsupported dtype '<c8'/,
    );
    expect(() => parseNpy(npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", f4))).toThrow(
      /needs 20 bytes, file has 16/,
    );
    expect(() => parseNpy(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))).toThrow(/not a \.npy file/);
    expect(() => parseNpy(npyBytes(4, "{'descr': '<f4'}", f4))).toThrow(/unsupported \.npy format version 4/);
  });
});

describe('DataLoader', () => {
  const x = arange(0, 10).reshape([10, 1]);
  const y = tensor(Int32Array.from({ length: 10 }, (_, i) => i * 10));

  it('covers every sample once per epoch, keeps pairs aligned, batches in order without shuffle', () => {
    const dl = new DataLoader([x, y], { batchSize: 4 });
    const batches = [...dl];
    expect(dl.length).toBe(3);
    expect(batches.map(([b]) => b!.shape)).toEqual([
      [4, 1],
      [4, 1],
      [2, 1],
    ]);
    expect(batches.flatMap(([b]) => b!.toArray())).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(batches[2]![1]!.dtype).toBe('int32');
  });

  it('shuffles deterministically per (seed, epoch), new order each epoch, dropLast', () => {
    const a = new DataLoader([x, y], { batchSize: 3, shuffle: true, seed: 7, dropLast: true });
    const b = new DataLoader([x, y], { batchSize: 3, shuffle: true, seed: 7, dropLast: true });
    const epochs = (dl: DataLoader) => [0, 1, 2].map(() => [...dl].map(([xb, yb]) => [xb!.toArray(), yb!.toArray()]));
    const ea = epochs(a);
    expect(ea).toEqual(epochs(b));
    for (const e of ea) {
      expect(e.length).toBe(3);
      for (const [xs, ys] of e) expect(ys).toEqual(xs!.map((v) => v * 10));
      const seen = e.flatMap(([xs]) => xs!);
      expect(new Set(seen).size).toBe(9);
    }
    expect(ea[0]).not.toEqual(ea[1]);
    const full = new DataLoader(x, { batchSize: 4, shuffle: true, seed: 7 });
    for (let e = 0; e < 3; e++)
      expect([...full].flatMap(([xb]) => xb!.toArray()).sort((p, q) => p - q)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const other = new DataLoader(x, { batchSize: 10, shuffle: true, seed: 8 });
    expect(other.order(0)).not.toEqual(full.order(0));
  });

  it('validates inputs', () => {
    expect(() => new DataLoader([x, tensor([1, 2])], { batchSize: 2 })).toThrow(
      /tensor 1 has 2 samples, tensor 0 has 10/,
    );
    expect(() => new DataLoader(x, { batchSize: 0 })).toThrow(/DataLoader: invalid options: batchSize/);
  });
});

describe('fashionMnistFromIdx', () => {
  it('normalises pixels to [-1, 1] as [N,1,28,28] float32 and labels as int32, honouring limit', () => {
    const n = 3;
    const px = Array.from({ length: n * 784 }, (_, i) => (i * 7) % 256);
    const images = parseIdx(idxBytes(0x08, [n, 28, 28], px));
    const { images: x, labels } = fashionMnistFromIdx(images, parseIdx(idxBytes(0x08, [n], [9, 0, 4])), { limit: 2 });
    expect(x.shape).toEqual([2, 1, 28, 28]);
    expect(x.dtype).toBe('float32');
    expect(labels.dtype).toBe('int32');
    expect(labels.toArray()).toEqual([9, 0]);
    const v = x.toArray();
    for (const i of [0, 1, 37, 783, 1000]) expect(v[i]).toBeCloseTo((px[i]! / 255 - 0.5) / 0.5, 6);
    expect(Math.min(...v)).toBe(-1);
    expect(Math.max(...v)).toBe(1);
  });

  it('names the files in errors: wrong shapes, a label past 9', () => {
    const images = parseIdx(idxBytes(0x08, [1, 28, 28], new Array(784).fill(0)));
    const sources = { images: 'img.idx', labels: 'lbl.idx' };
    expect(() => fashionMnistFromIdx(images, parseIdx(idxBytes(0x08, [1], [10])), { sources })).toThrow(
      'lbl.idx: label 0 is 10; Fashion-MNIST has classes 0..9',
    );
    expect(() => fashionMnistFromIdx(images, parseIdx(idxBytes(0x08, [2], [1, 2])))).toThrow(
      'labels: expected 1 uint8 labels, got uint8 [2]',
    );
    expect(() => fashionMnistFromIdx(parseIdx(idxBytes(0x08, [1], [0])), images, { sources })).toThrow(
      'img.idx: expected uint8 images of shape [N, 28, 28], got uint8 [1]',
    );
  });
});

describe('ProgressBar', () => {
  it('renders rate and ETA from the clock, silent on non-TTY unless forced', () => {
    let t = 0;
    const out: string[] = [];
    const stream = { write: (s: string) => out.push(s), isTTY: false };
    const silent = new ProgressBar({ total: 10, stream, now: () => t });
    silent.tick(5);
    silent.done();
    expect(out).toEqual([]);
    const bar = new ProgressBar({ total: 10, label: 'epoch 1', stream, force: true, intervalMs: 0, now: () => t });
    t = 2000;
    bar.tick(4, { loss: 0.123456 });
    expect(out[0]).toBe('epoch 1 [##########..............]  40% 4/10 2.0 it/s ETA 0:03 loss=0.1235\n');
    t = 5000;
    bar.tick(6);
    bar.done();
    expect(out.at(-1)).toMatch(/\[#{24}\] 100% 10\/10 2\.0 it\/s 0:05 total loss=0\.1235\n$/);
    const tty: string[] = [];
    const tbar = new ProgressBar({
      total: 2,
      stream: { write: (s: string) => tty.push(s), isTTY: true },
      now: () => t,
    });
    tbar.tick();
    expect(tty[0]!.startsWith('\r\x1b[2K')).toBe(true);
    const off = new ProgressBar({
      total: 2,
      enabled: false,
      force: true,
      stream: { write: (s: string) => tty.push(s), isTTY: true },
    });
    off.tick();
    off.finish();
    expect(tty.length).toBe(1);
    expect(formatDuration(3725)).toBe('1:02:05');
  });
});
