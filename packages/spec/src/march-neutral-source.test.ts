// March knowledge lives in the march packages: no other package's source names a march (not in
// identifiers, strings or comments), so a third-party march needs nothing edited outside its own
// package. Tests, test support (src/testing/, the private @qtk/test-models), apps, examples and docs may name them.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MARCH_NAME = /bayes|bernoulli2/i;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'testing' ? [] : sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** `file:line: text` for every line of `files` naming a march. */
function marchNames(files: string[]): string[] {
  return files.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .flatMap((line, i) => (MARCH_NAME.test(line) ? [`${relative(ROOT, f)}:${i + 1}: ${line.trim()}`] : [])),
  );
}

const packages = readdirSync(join(ROOT, 'packages')).filter((p) => statSync(join(ROOT, 'packages', p)).isDirectory());

describe('march-neutral source', () => {
  it('no package outside packages/march-* names a march in its source', () => {
    const neutral = packages.filter((p) => !p.startsWith('march-') && p !== 'test-models');
    expect(neutral).toEqual(expect.arrayContaining(['core', 'fixed-point', 'spec']));
    const files = neutral.flatMap((p) => sourceFiles(join(ROOT, 'packages', p, 'src')));
    expect(files.length).toBeGreaterThan(100);
    expect(marchNames(files)).toEqual([]);
  });

  it('the scan finds the names where they belong (the march packages)', () => {
    const files = ['march-bayes', 'march-bernoulli2'].flatMap((p) => sourceFiles(join(ROOT, 'packages', p, 'src')));
    const hits = marchNames(files);
    expect(hits.some((h) => h.startsWith('packages/march-bayes/src/march.ts:') && /'bayes'/.test(h))).toBe(true);
    expect(hits.some((h) => /BERNOULLI2_NUMERICS/.test(h))).toBe(true);
  });
});
