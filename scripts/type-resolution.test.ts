import { Package } from '@arethetypeswrong/core';
import { describe, expect, it } from 'vitest';
import { typeResolutionProblems } from './type-resolution.js';

const manifest = (exports: object) => JSON.stringify({ name: 'pkg', version: '1.0.0', type: 'module', exports });

const files = (exports: object, extra: Record<string, string> = {}) =>
  new Package(
    {
      '/node_modules/pkg/package.json': manifest(exports),
      '/node_modules/pkg/dist/index.js': 'export const x = 1;\n',
      ...extra,
    },
    'pkg',
    '1.0.0',
  );

describe('typeResolutionProblems (esm-only profile)', () => {
  it('passes an ESM-only package whose types resolve', async () => {
    const pkg = files(
      { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      { '/node_modules/pkg/dist/index.d.ts': 'export declare const x: number;\n' },
    );
    expect(await typeResolutionProblems(pkg)).toEqual([]);
  });

  it('names the entry whose declared types file is missing', async () => {
    const pkg = files(
      { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      { '/node_modules/pkg/dist/other.d.ts': 'export declare const x: number;\n' },
    );
    const problems = await typeResolutionProblems(pkg);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.join('\n')).toMatch(/\(\., (node16-esm|bundler)\)/);
  });

  it('reports a package with no types at all', async () => {
    expect(await typeResolutionProblems(files({ '.': { import: './dist/index.js' } }))).toEqual([
      'pkg: ships no types',
    ]);
  });
});
