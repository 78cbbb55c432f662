import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { DatasetNotFoundError } from '../errors.js';
import { idxBytes, npyBytes } from '../testing/data-bytes.js';
import { itNeeding } from '../../../../scripts/needs-system.js';
import { FASHION_MNIST_DIR } from '../../../../scripts/system-requirements.js';
import { loadFashionMnist } from './load-fashion-mnist.js';
import { inflateIdx, readIdx } from './read-idx.js';
import { readNpy } from './read-npy.js';

const tmp = mkdtempSync(join(tmpdir(), 'qtk-data-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('readIdx, readNpy', () => {
  it('reads an IDX file plain and gzipped', () => {
    const bytes = idxBytes(0x08, [2, 3], [1, 2, 3, 250, 251, 252]);
    const plain = join(tmp, 'a.idx');
    const gz = join(tmp, 'a.idx.gz');
    writeFileSync(plain, bytes);
    writeFileSync(gz, gzipSync(bytes));
    for (const p of [plain, gz]) {
      const a = readIdx(p);
      expect(a.dtype).toBe('uint8');
      expect(a.shape).toEqual([2, 3]);
      expect([...a.data]).toEqual([1, 2, 3, 250, 251, 252]);
    }
  });

  it('a truncated gzip stream is a DataFormatError', () => {
    const gz = gzipSync(idxBytes(0x08, [4], [1, 2, 3, 4]));
    expect(() => inflateIdx(gz.subarray(0, gz.length - 6))).toThrow(/gzip stream is corrupt or truncated/);
  });

  it('reads a .npy file', () => {
    const p = join(tmp, 'a.npy');
    const body = new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6.5]).buffer);
    writeFileSync(p, npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", body));
    const a = readNpy(p);
    expect([a.dtype, a.shape, [...a.data]]).toEqual(['float32', [2, 3], [1, 2, 3, 4, 5, 6.5]]);
  });
});

describe('loadFashionMnist', () => {
  it('reads a split from its IDX files (plain or .gz), honouring limit', () => {
    const dir = join(tmp, 'fm');
    mkdirSync(dir);
    const n = 3;
    const px = Array.from({ length: n * 784 }, (_, i) => (i * 7) % 256);
    writeFileSync(join(dir, 't10k-images-idx3-ubyte.gz'), gzipSync(idxBytes(0x08, [n, 28, 28], px)));
    writeFileSync(join(dir, 't10k-labels-idx1-ubyte'), idxBytes(0x08, [n], [9, 0, 4]));
    const { images, labels } = loadFashionMnist(dir, { split: 'test', limit: 2 });
    expect(images.shape).toEqual([2, 1, 28, 28]);
    expect(labels.toArray()).toEqual([9, 0]);
    expect(images.toArray()[37]).toBeCloseTo((px[37]! / 255 - 0.5) / 0.5, 6);
    expect(() => loadFashionMnist(dir, { split: 'train' })).toThrow(DatasetNotFoundError);
    expect(() => loadFashionMnist(dir, { split: 'train' })).toThrow(
      /train-images-idx3-ubyte\(\.gz\) not found; the directory must hold train-images-idx3-ubyte, train-labels-idx1-ubyte/,
    );
    expect(() => loadFashionMnist(join(tmp, 'nope'))).toThrow(/directory .*nope does not exist/);
  });

  it('names the file whose contents are wrong', () => {
    const dir = join(tmp, 'fm-bad');
    mkdirSync(dir);
    writeFileSync(join(dir, 't10k-images-idx3-ubyte'), idxBytes(0x08, [1, 28, 28], new Array(784).fill(0)));
    writeFileSync(join(dir, 't10k-labels-idx1-ubyte'), idxBytes(0x08, [1], [12]));
    expect(() => loadFashionMnist(dir, { split: 'test' })).toThrow(
      `${join(dir, 't10k-labels-idx1-ubyte')}: label 0 is 12; Fashion-MNIST has classes 0..9`,
    );
  });

  itNeeding('fashion-mnist', 'reads the real test split', () => {
    const { images, labels } = loadFashionMnist(FASHION_MNIST_DIR, { split: 'test', limit: 100 });
    expect(images.shape).toEqual([100, 1, 28, 28]);
    expect(labels.toArray().every((l) => l >= 0 && l <= 9)).toBe(true);
  });
});
