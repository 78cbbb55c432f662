import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseIdx } from '../data/idx.js';
import { DataFormatError } from '../errors.js';
import { loadFashionMnist } from './load-fashion-mnist.js';
import { inflateIdx, readIdx } from './read-idx.js';
import { readNpy } from './read-npy.js';

const dir = mkdtempSync(join(tmpdir(), 'qtk-data-file-'));

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('no error');
}

describe('data files that are not regular files: a DataFormatError naming the path', () => {
  const cases: [string, () => string, RegExp][] = [
    [
      'a directory',
      () => {
        mkdirSync(join(dir, 'd.npy'));
        return join(dir, 'd.npy');
      },
      /is a directory, not a file$/,
    ],
    [
      'a broken symbolic link',
      () => {
        symlinkSync(join(dir, 'nowhere'), join(dir, 'l.npy'));
        return join(dir, 'l.npy');
      },
      /does not exist \(or is a broken symbolic link\)$/,
    ],
    ['a missing file', () => join(dir, 'missing.npy'), /does not exist/],
    [
      'a FIFO (reading it would block)',
      () => {
        execFileSync('mkfifo', [join(dir, 'f.npy')]);
        return join(dir, 'f.npy');
      },
      /is not a regular file \(a device, FIFO or socket\)$/,
    ],
    ['a device', () => '/dev/zero', /is not a regular file/],
  ];
  it.each(cases)('%s (readNpy and readIdx)', (_what, make, want) => {
    const path = make();
    for (const read of [readNpy, readIdx]) {
      const e = thrown(() => read(path));
      expect(e).toBeInstanceOf(DataFormatError);
      expect(e.message.startsWith(`${path}: `)).toBe(true);
      expect(e.message).toMatch(want);
    }
  });

  it('loadFashionMnist with a directory where an IDX file should be', () => {
    const d = join(dir, 'fm');
    mkdirSync(join(d, 't10k-images-idx3-ubyte'), { recursive: true });
    writeFileSync(join(d, 't10k-labels-idx1-ubyte'), new Uint8Array(8));
    const e = thrown(() => loadFashionMnist(d, { split: 'test' }));
    expect(e).toBeInstanceOf(DataFormatError);
    expect(e.message).toBe(`${join(d, 't10k-images-idx3-ubyte')}: is a directory, not a file`);
  });
});

describe('gzipped IDX: inflation is capped', () => {
  const idx = (n: number) => {
    const b = new Uint8Array(8 + n);
    b.set([0, 0, 8, 1]);
    new DataView(b.buffer).setUint32(4, n, false);
    return b;
  };
  it('a stream inflating past the cap is a DataFormatError naming the cap', () => {
    const bomb = gzipSync(idx(1 << 20)); // 1 MiB of zeros: about 1 KB compressed
    expect(bomb.length).toBeLessThan(4096);
    const e = thrown(() => inflateIdx(bomb, 'bomb.gz', { maxInflatedBytes: 1 << 16 }));
    expect(e).toBeInstanceOf(DataFormatError);
    expect(e.message).toBe(
      'bomb.gz: gzip stream inflates to more than 65536 bytes (the cap; pass maxInflatedBytes to raise it)',
    );
    expect(parseIdx(inflateIdx(bomb, 'bomb.gz', { maxInflatedBytes: (1 << 20) + 8 })).shape).toEqual([1 << 20]);
    expect(parseIdx(inflateIdx(bomb, 'bomb.gz')).shape).toEqual([1 << 20]); // under the default 1 GiB
  });
});
