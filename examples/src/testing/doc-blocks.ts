// Shared steps of the tests that run code blocks from the documentation (README tour, QAT guide).
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The first ```ts block of `markdown` after `heading` (or from the start). */
export function firstTsBlock(markdown: string, source: string, heading?: string): string {
  const at = heading === undefined ? 0 : markdown.indexOf(heading);
  if (at < 0) throw new Error(`${source} has no "${heading}" section`);
  const m = /```ts\n([\s\S]*?)```/.exec(markdown.slice(at));
  if (!m) throw new Error(`${source}${heading ? `'s ${heading}` : ''} has no \`\`\`ts block`);
  return m[1]!;
}

/**
 * A temporary folder beside the tests (so a block's package imports resolve like user code) and
 * its removal, for afterAll.
 */
export function blockDir(here: string, prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(here, prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
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
