import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic, writeFileAtomicSync } from './atomic-write.js';

describe('atomic writes', () => {
  it('replace the file and leave no temporary file behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'qtk-atomic-'));
    const path = join(dir, 'f.bin');
    writeFileAtomicSync(path, Uint8Array.of(1, 2, 3));
    expect([...readFileSync(path)]).toEqual([1, 2, 3]);
    await writeFileAtomic(path, 'text');
    expect(readFileSync(path, 'utf8')).toBe('text');
    expect(readdirSync(dir)).toEqual(['f.bin']);
  });
  it('leave an existing file untouched when the write fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'qtk-atomic-'));
    const path = join(dir, 'f.bin');
    writeFileSync(path, 'old');
    const missingDir = join(dir, 'no-such-dir', 'f.bin');
    expect(() => writeFileAtomicSync(missingDir, 'new')).toThrow(/ENOENT/);
    await expect(writeFileAtomic(missingDir, 'new')).rejects.toThrow(/ENOENT/);
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
    expect(readdirSync(dir)).toEqual(['f.bin']);
  });
});
