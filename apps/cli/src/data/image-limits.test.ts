import { crc32, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CliError } from '../io.js';
import { decodeImage, MAX_IMAGE_PIXELS } from './image-decode.js';

function chunk(type: string, data: Uint8Array): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), Buffer.from(data)]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([len, body, crc]);
}

/** A PNG whose IHDR declares width × height (RGBA, 8 bit) and whose IDAT holds `idat` inflated bytes of zeros. */
function png(width: number, height: number, idat: number): Uint8Array {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    sig,
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(new Uint8Array(idat))),
    chunk('IEND', new Uint8Array(0)),
  ]);
}

describe('image size is checked before decoding', () => {
  it.each([
    [9000, 8000],
    [20000, 20000],
    [65536, 65536],
  ])('a %i×%i PNG header (a few hundred bytes) is refused before any allocation', (w, h) => {
    const bytes = png(w, h, 1000);
    expect(bytes.length).toBeLessThan(200);
    const rss = process.memoryUsage().rss;
    let err: unknown;
    try {
      decodeImage(bytes, 'big.png');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect((err as Error).message).toBe(
      `big.png: the image is ${w}×${h} pixels, more than the ${MAX_IMAGE_PIXELS} (8192×8192) qtk decodes; resize it first`,
    );
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 2 ** 20);
  });

  it('a small image still decodes', () => {
    expect(decodeImage(png(2, 2, 2 * (1 + 8)), 'small.png')).toMatchObject({ width: 2, height: 2 });
  });
});
