import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPlugin, importFromCwd } from './plugins.js';
import { resolveFromDir } from './resolve-from-dir.js';
import { tempDir } from './testing/fixtures.js';

/** A project with node_modules/<name> holding `manifest` and an index.mjs. */
function project(name: string, manifest: object): string {
  const dir = tempDir();
  const pkg = join(dir, 'node_modules', name);
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name, ...manifest }));
  writeFileSync(join(pkg, 'index.mjs'), `export const loadedFrom = ${JSON.stringify(name)};\n`);
  mkdirSync(join(dir, 'src'));
  return dir;
}

describe('resolveFromDir', () => {
  it('finds a package that exports for import only (require cannot), from a folder below the project', () => {
    const dir = project('@acme/qtk-plugin', { type: 'module', exports: { '.': { import: './index.mjs' } } });
    expect(resolveFromDir('@acme/qtk-plugin', join(dir, 'src'))).toBe(
      join(dir, 'node_modules/@acme/qtk-plugin/index.mjs'),
    );
  });

  it('reads nested conditions, sugar exports and main; a subpath the package does not export is not found', () => {
    const nested = project('p1', { exports: { node: { import: './index.mjs' }, types: './x.d.ts' } });
    expect(resolveFromDir('p1', nested)).toBe(join(nested, 'node_modules/p1/index.mjs'));
    const main = project('p2', { main: 'index.mjs' });
    expect(resolveFromDir('p2', main)).toBe(join(main, 'node_modules/p2/index.mjs'));
    const keyed = project('p3', { exports: { '.': { import: './index.mjs' } } });
    expect(resolveFromDir('p3/secret', keyed)).toBeUndefined();
    expect(resolveFromDir('not-installed-anywhere', keyed)).toBeUndefined();
  });

  it('importFromCwd imports an import-only plugin installed in the current directory, not beside qtk', async () => {
    const dir = project('qtk-import-only', { type: 'module', exports: { import: './index.mjs' } });
    await expect(importFromCwd('qtk-import-only', dir)).resolves.toMatchObject({ loadedFrom: 'qtk-import-only' });
    // It was imported (registering nothing), not reported as missing.
    await expect(loadPlugin('qtk-import-only', (s) => importFromCwd(s, dir))).rejects.toThrow(
      '--plugin qtk-import-only: the module registered nothing new',
    );
  });
});
