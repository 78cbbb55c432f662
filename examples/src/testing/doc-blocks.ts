// Shared steps of the tests that run code blocks from the documentation (README tour, QAT guide).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resetMarch } from '@qtk/core';
import { afterAll } from 'vitest';

/** examples/src: where the blocks' folders go, so their package imports resolve like user code. */
const TESTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The text of a file of the repository, by its path from the root ('docs/qat-guide.md', 'README.md'). */
export function readRepoFile(path: string): string {
  return readFileSync(join(TESTS_DIR, '..', '..', path), 'utf8');
}

/** The first ```ts block of `markdown` after `heading` (or from the start). */
export function firstTsBlock(markdown: string, source: string, heading?: string): string {
  const at = heading === undefined ? 0 : markdown.indexOf(heading);
  if (at < 0) throw new Error(`${source} has no "${heading}" section`);
  const m = /```ts\n([\s\S]*?)```/.exec(markdown.slice(at));
  if (!m) throw new Error(`${source}${heading ? `'s ${heading}` : ''} has no \`\`\`ts block`);
  return m[1]!;
}

/**
 * A temporary folder beside the tests for one test file's blocks, removed after all its tests (which also put the
 * default march back), and `importBlock`, which writes a block's source there as `fileName` and imports it.
 */
export function blockSuite(prefix: string): {
  dir: string;
  importBlock<T>(fileName: string, source: string): Promise<T>;
} {
  const dir = mkdtempSync(join(TESTS_DIR, prefix));
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    resetMarch();
  });
  return {
    dir,
    async importBlock<T>(fileName: string, source: string): Promise<T> {
      const file = join(dir, fileName);
      writeFileSync(file, source);
      return (await import(file)) as T;
    },
  };
}

/** The largest |a| and the largest |a - b| over the elements. */
export function maxAbsAndDiff(a: ArrayLike<number>, b: ArrayLike<number>): { maxAbs: number; maxDiff: number } {
  let maxAbs = 0;
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs(a[i]!));
    maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!));
  }
  return { maxAbs, maxDiff };
}
