import { crc32 as zlibCrc32 } from 'node:zlib';
import { Generator } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { crc32 } from './crc32.js';

describe('crc32', () => {
  it('the check value, and zlib’s CRC of random buffers of every length mod 8 and of an unaligned view', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    const g = new Generator(2);
    for (let len = 0; len < 70; len++) {
      const b = Uint8Array.from({ length: len }, () => g.nextUint32() & 0xff);
      expect(crc32(b)).toBe(zlibCrc32(b));
    }
    const big = Uint8Array.from({ length: 100003 }, () => g.nextUint32() & 0xff);
    expect(crc32(big.subarray(3))).toBe(zlibCrc32(big.subarray(3)));
  });
});
