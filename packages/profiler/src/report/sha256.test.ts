import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base64, sha256 } from './sha256.js';

const nodeSha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('base64');

describe('sha256 (pure JavaScript, for the report in any runtime)', () => {
  it('agrees with node:crypto at the padding boundaries, on non-ASCII text and on a long text', () => {
    const texts = [
      '',
      'abc',
      ...[55, 56, 57, 63, 64, 65, 119, 120, 128].map((n) => 'x'.repeat(n)),
      'Größe → 层 😀 </script>',
      Array.from({ length: 50_000 }, (_, i) => String.fromCharCode(32 + ((i * 7919) % 95))).join(''),
    ];
    for (const t of texts) expect(base64(sha256(t)), `length ${t.length}`).toBe(nodeSha256(t));
  });

  it('matches the FIPS 180-4 example digest of "abc"', () => {
    const hex = [...sha256('abc')].map((b) => b.toString(16).padStart(2, '0')).join('');
    expect(hex).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('base64 pads like Buffer', () => {
    for (const n of [0, 1, 2, 3, 4, 5]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => 250 - i);
      expect(base64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
    }
  });
});
