import { tensor } from '@qtk/tensor';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crc32 } from './crc32.js';
import { DataFormatError } from './errors.js';
import { loadStateDictFileSync, saveStateDictSync } from './node/state-dict-files.js';
import { deserializeStateDict, serializeStateDict, STATE_DICT_FILE_VERSION } from './state-dict-file.js';
import type { StateDict } from './state-dict.js';

const tmp = mkdtempSync(join(tmpdir(), 'qtk-sdfile-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const dict = (): StateDict => ({
  version: 1,
  tensors: {
    'fc.weight': tensor([
      [1, 2],
      [3, 4],
    ]),
    'fc.bias': tensor([0.5, -1]),
  },
  metadata: { epoch: 3 },
});
const utf8 = (s: string) => new TextEncoder().encode(s);

/** A version-3 file whose header JSON is `edit(header)`, with a valid CRC: only the header checks can refuse it. */
function withHeader(edit: (h: { tensors: Record<string, unknown>[] }) => unknown): Uint8Array {
  const bytes = serializeStateDict(dict());
  const dv = new DataView(bytes.buffer);
  const h = dv.getUint32(12, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(24, 24 + h)));
  const text = utf8(JSON.stringify(edit(header) ?? header).replace('"$inf"', '1e999'));
  const oldStart = (24 + h + 7) & ~7;
  const newStart = (24 + text.byteLength + 7) & ~7;
  const out = new Uint8Array(newStart + bytes.byteLength - oldStart);
  out.set(bytes.subarray(0, 24));
  out.set(text, 24);
  out.set(bytes.subarray(oldStart), newStart);
  const odv = new DataView(out.buffer);
  odv.setUint32(12, text.byteLength, true);
  odv.setUint32(16, crc32(out.subarray(24)), true);
  return out;
}

/** The same dict in the version-2 layout (a 16-byte prefix, no CRC), as written before version 3. */
function asVersion2(bytes: Uint8Array): Uint8Array {
  const h = new DataView(bytes.buffer, bytes.byteOffset).getUint32(12, true);
  const header = utf8(
    JSON.stringify({ ...JSON.parse(new TextDecoder().decode(bytes.subarray(24, 24 + h))), version: 2 }),
  );
  const oldStart = (24 + h + 7) & ~7;
  const newStart = (16 + header.byteLength + 7) & ~7;
  const out = new Uint8Array(newStart + bytes.byteLength - oldStart);
  out.set(utf8('QTKSTATE'));
  const dv = new DataView(out.buffer);
  dv.setUint32(8, 2, true);
  dv.setUint32(12, header.byteLength, true);
  out.set(header, 16);
  out.set(bytes.subarray(oldStart), newStart);
  return out;
}

describe('state dict files: CRC and header validation', () => {
  it('crc32 is the IEEE CRC-32 (the check value of "123456789")', () => {
    expect(crc32(utf8('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it('writes version 3 with the CRC of everything after the 24-byte prefix, and reads it back', () => {
    const bytes = serializeStateDict(dict());
    const dv = new DataView(bytes.buffer);
    expect(STATE_DICT_FILE_VERSION).toBe(3);
    expect(dv.getUint32(8, true)).toBe(3);
    expect(dv.getUint32(16, true)).toBe(crc32(bytes.subarray(24)));
    const path = join(tmp, 'ok.qtk');
    saveStateDictSync(dict(), path);
    const back = loadStateDictFileSync(path);
    expect(Array.from(back.tensors['fc.weight']!.values())).toEqual([1, 2, 3, 4]);
    expect(back.tensors['fc.weight']!.shape).toEqual([2, 2]);
    expect(back.metadata).toEqual({ epoch: 3 });
  });

  it('a file with any one flipped byte after the prefix fails its CRC with a DataFormatError naming the file', () => {
    const path = join(tmp, 'flip.qtk');
    saveStateDictSync(dict(), path);
    const good = readFileSync(path);
    // a byte of the tensor data (which parses fine without the CRC), one of the header, the last byte
    for (const at of [good.byteLength - 5, 30, good.byteLength - 1]) {
      const bad = Uint8Array.from(good);
      bad[at] = bad[at]! ^ 0x10;
      writeFileSync(path, bad);
      expect(() => loadStateDictFileSync(path)).toThrow(DataFormatError);
      expect(() => loadStateDictFileSync(path)).toThrow(
        /flip\.qtk: corrupted or truncated: the checksum does not match/,
      );
    }
  });

  it('still reads version-2 files (no CRC)', () => {
    const v2 = asVersion2(serializeStateDict(dict()));
    const back = deserializeStateDict(v2, 'old.qtk');
    expect(back.tensors['fc.bias']!.toArray()).toEqual([0.5, -1]);
    expect(back.metadata).toEqual({ epoch: 3 });
  });

  it('a header entry without a shape fails with the entry name, not a TypeError', () => {
    const bytes = withHeader((h) => {
      delete h.tensors[1]!.shape;
    });
    expect(() => deserializeStateDict(bytes, 'x.qtk')).toThrow(DataFormatError);
    expect(() => deserializeStateDict(bytes, 'x.qtk')).toThrow(/x\.qtk: tensor 'fc\.bias': field 'shape': Required/);
    // the same in a version-2 file, which has no CRC to catch anything
    expect(() => deserializeStateDict(asVersion2(bytes), 'x.qtk')).toThrow(
      /tensor 'fc\.bias': field 'shape': Required/,
    );
  });

  it.each([
    [
      'a negative dim',
      (e: Record<string, unknown>) => (e.shape = [-2]),
      /tensor 'fc\.bias': field 'shape\.0': Number must be greater than or equal to 0/,
    ],
    [
      'a fractional dim',
      (e: Record<string, unknown>) => (e.shape = [1.5]),
      /tensor 'fc\.bias': field 'shape\.0': Expected integer/,
    ],
    [
      'a shape that is not an array',
      (e: Record<string, unknown>) => (e.shape = 2),
      /tensor 'fc\.bias': field 'shape': Expected array/,
    ],
    ['a negative offset', (e: Record<string, unknown>) => (e.offset = -8), /tensor 'fc\.bias': field 'offset'/],
    [
      'an unaligned offset',
      (e: Record<string, unknown>) => (e.offset = 3),
      /tensor 'fc\.bias': field 'offset': must be a multiple of 8/,
    ],
    [
      'an offset past the end',
      (e: Record<string, unknown>) => (e.offset = 1 << 20),
      /truncated: tensor 'fc\.bias' needs bytes up to/,
    ],
    [
      'a non-finite byte length',
      (e: Record<string, unknown>) => (e.byteLength = '$inf'),
      /tensor 'fc\.bias': field 'byteLength'/,
    ],
    [
      'a huge shape',
      (e: Record<string, unknown>) => (e.shape = [2 ** 40, 2 ** 40]),
      /tensor 'fc\.bias': 8 bytes do not fit shape/,
    ],
    ['an unknown dtype', (e: Record<string, unknown>) => (e.dtype = 'float64'), /tensor 'fc\.bias': field 'dtype'/],
    ['no name', (e: Record<string, unknown>) => delete e.name, /tensor entry 1: field 'name': Required/],
  ])('a header entry with %s is a DataFormatError naming the entry', (_, edit, message) => {
    const bytes = withHeader((h) => {
      edit(h.tensors[1]!);
      return h;
    });
    expect(() => deserializeStateDict(bytes, 'x.qtk')).toThrow(DataFormatError);
    expect(() => deserializeStateDict(bytes, 'x.qtk')).toThrow(message);
  });

  it('a tensor name listed twice, a missing table and a tensor named __proto__', () => {
    const dup = withHeader((h) => {
      h.tensors[1]!.name = 'fc.weight';
      h.tensors[1]!.shape = [2, 2];
      h.tensors[1]!.byteLength = 16;
      h.tensors[1]!.offset = 0;
    });
    expect(() => deserializeStateDict(dup, 'x.qtk')).toThrow(
      /x\.qtk: tensor 'fc\.weight' appears twice in the tensor table/,
    );
    const none = withHeader(() => ({ version: 3 }));
    expect(() => deserializeStateDict(none, 'x.qtk')).toThrow(/header has no tensor table/);
    const proto = withHeader((h) => {
      h.tensors[1]!.name = '__proto__';
    });
    const sd = deserializeStateDict(proto);
    expect(Object.keys(sd.tensors)).toEqual(['fc.weight', '__proto__']);
    expect(Object.getPrototypeOf(sd.tensors)).toBe(Object.prototype);
  });
});
