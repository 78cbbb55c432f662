// Every library package's main entry bundles for the browser: no Node built-in and no onnxruntime-node is
// reachable from it (the file helpers live in each package's ./node entry).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { describeNodeOnlyImports, nodeOnlyImports } from './browser-bundle.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

interface Manifest {
  readonly name: string;
  readonly exports?: Record<string, Record<string, string> | string>;
}

/** [package name, the source file of its "." export] for every package under packages/. */
function libraryEntries(): [string, string][] {
  const out: [string, string][] = [];
  for (const dir of readdirSync(join(ROOT, 'packages')).sort()) {
    let manifest: Manifest;
    try {
      manifest = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as Manifest;
    } catch {
      continue;
    }
    const main = manifest.exports?.['.'];
    const source = typeof main === 'object' ? main['qtk-source'] : undefined;
    if (source) out.push([manifest.name, join(ROOT, 'packages', dir, source)]);
  }
  return out;
}

describe('library main entries bundle for the browser', () => {
  const entries = libraryEntries();

  it('finds the packages', () => {
    expect(entries.map(([name]) => name)).toEqual(expect.arrayContaining(['@qtk/tensor', '@qtk/nn', '@qtk/profiler']));
  });

  it.each(entries)('%s reaches no Node built-in and no onnxruntime-node', async (name, entry) => {
    const found = await nodeOnlyImports(entry, { root: ROOT, conditions: ['qtk-source'] });
    expect(found, describeNodeOnlyImports(`${name} (${relative(ROOT, entry)})`, found)).toEqual([]);
  });
});

describe('the Node-only import check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qtk-browser-bundle-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('names each Node-only module, the file importing it and the way there', async () => {
    writeFileSync(join(dir, 'entry.ts'), "import { read } from './files.js';\nexport const x = read;\n");
    writeFileSync(
      join(dir, 'files.ts'),
      "import { readFileSync } from 'node:fs';\nimport { gunzipSync } from 'zlib';\nexport const read = (p: string) => gunzipSync(readFileSync(p));\nexport const ort = () => import('onnxruntime-node');\n",
    );
    const found = await nodeOnlyImports(join(dir, 'entry.ts'), { root: dir });
    const via = ['entry.ts', 'files.ts'];
    expect(found).toEqual([
      { specifier: 'node:fs', importer: 'files.ts', chain: via },
      { specifier: 'onnxruntime-node', importer: 'files.ts', chain: via },
      { specifier: 'zlib', importer: 'files.ts', chain: via },
    ]);
    expect(describeNodeOnlyImports('entry.ts', found)).toContain(
      "'node:fs' imported by files.ts\n    via entry.ts → files.ts",
    );
  });

  it("accepts a built-in that a package's browser field maps away (protobufjs's fs)", async () => {
    const protobufjs = createRequire(join(ROOT, 'packages/onnx/package.json')).resolve('protobufjs');
    writeFileSync(join(dir, 'protobuf-entry.ts'), `export { default } from ${JSON.stringify(protobufjs)};\n`);
    expect(await nodeOnlyImports(join(dir, 'protobuf-entry.ts'), { root: dir })).toEqual([]);
  });
});
