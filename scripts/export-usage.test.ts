import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportUsage, formatTable, importsOf } from './export-usage.js';

const root = mkdtempSync(join(tmpdir(), 'qtk-export-usage-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function write(path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

const entry = (file: string) => ({ 'qtk-source': file, types: file.replace('src', 'dist').replace('.ts', '.d.ts') });

// @qtk/a exports A, B, C (C re-exported from a second file) and `helper` from its ./testing entry.
write(
  'packages/a/package.json',
  JSON.stringify({ name: '@qtk/a', exports: { '.': entry('./src/index.ts'), './testing': entry('./src/testing.ts') } }),
);
write(
  'packages/a/src/index.ts',
  "export const A = 1;\nexport function B() {}\nexport const D = 3;\nexport * from './c.js';\n",
);
write('packages/a/src/c.ts', 'export interface C { x: number }\n');
write('packages/a/src/testing.ts', 'export const helper = 2;\n');
// Its own test imports B: inside the package, so B stays unused outside.
write('packages/a/src/a.test.ts', "import { B } from '@qtk/a';\nB();\n");
// A fixture package inside packages/a is a package of its own: its import of C counts.
write('packages/a/fixtures/plugin/package.json', JSON.stringify({ name: 'plugin' }));
write('packages/a/fixtures/plugin/index.ts', "import type { C } from '@qtk/a';\nexport const c: C = { x: 1 };\n");
// A bench script imports D from the entry's source by its path.
write('bench/run.ts', "import { D } from '../packages/a/src/index.js';\nconsole.log(D);\n");
// @qtk/b uses A by name and helper through a namespace of the testing subpath.
write('packages/b/package.json', JSON.stringify({ name: '@qtk/b', exports: { '.': entry('./src/index.ts') } }));
write(
  'packages/b/src/index.ts',
  "import { A as renamed } from '@qtk/a';\nimport * as t from '@qtk/a/testing';\nexport const b = renamed + t.helper;\n",
);

describe('exportUsage', () => {
  const usage = exportUsage(root);
  const a = usage.find((u) => u.name === '@qtk/a')!;

  it('collects every entry of the exports map, re-exports included', () => {
    expect(a.exported).toEqual(['A', 'B', 'C', 'D', 'helper']);
  });

  it('counts imports from other packages (any subpath, renamed, namespace members, an entry by path), not from the package itself', () => {
    expect(a.usedOutside).toEqual(['A', 'C', 'D', 'helper']);
    expect(a.unusedOutside).toEqual(['B']);
    expect(usage.find((u) => u.name === '@qtk/b')!).toMatchObject({ exported: ['b'], unusedOutside: ['b'] });
  });

  it('prints one row per package and the total unused', () => {
    const table = formatTable(usage).split('\n');
    expect(table[1]).toMatch(/^@qtk\/a\s+5\s+4\s+1$/);
    expect(table[3]).toBe('2 exported names are used nowhere outside their package');
  });
});

describe('importsOf', () => {
  it('reads re-exports, import types, destructured dynamic imports and namespaces used whole', () => {
    const text = [
      "export { x as y } from '@qtk/p';",
      "type T = import('@qtk/q/node').Thing;",
      "const { run } = await import('@qtk/r');",
      "import * as s from '@qtk/s';",
      'for (const v of Object.values(s)) console.log(v);',
    ].join('\n');
    const { names, wholeNamespace } = importsOf('f.ts', text);
    expect(Object.fromEntries([...names].map(([k, v]) => [k, [...v]]))).toEqual({
      '@qtk/p': ['x'],
      '@qtk/q': ['Thing'],
      '@qtk/r': ['run'],
    });
    expect([...wholeNamespace]).toEqual(['@qtk/s']);
  });
});
