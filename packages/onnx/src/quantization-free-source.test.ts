// @qtk/onnx is the format, the importer and the float export: its source never imports the quantization packages
// (@qtk/core, @qtk/fixed-point, @qtk/fake-quant, @qtk/fusion), so a browser app or script that only imports a model
// does not load them. The quantized exports live in @qtk/onnx-deploy and plug into the walk through
// registerModuleExport / registerExportValue / registerModelKindExport.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const QUANTIZATION_PACKAGES = ['@qtk/core', '@qtk/fixed-point', '@qtk/fake-quant', '@qtk/fusion'];
const IMPORT_OF = new RegExp(`(?:from|import)\\s*\\(?\\s*['"](${QUANTIZATION_PACKAGES.join('|')})(?:/[^'"]*)?['"]`);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** `file:line: text` for every line of `files` importing a quantization package. */
function quantizationImports(files: string[]): string[] {
  return files.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .flatMap((line, i) => (IMPORT_OF.test(line) ? [`${relative(ROOT, f)}:${i + 1}: ${line.trim()}`] : [])),
  );
}

describe('@qtk/onnx imports no quantization package', () => {
  it('no source file of packages/onnx/src imports @qtk/core, fixed-point, fake-quant or fusion', () => {
    const files = sourceFiles(join(ROOT, 'packages/onnx/src'));
    expect(files.map((f) => relative(ROOT, f))).toEqual(
      expect.arrayContaining(['packages/onnx/src/export-onnx.ts', 'packages/onnx/src/import/import-onnx.ts']),
    );
    expect(quantizationImports(files)).toEqual([]);
  });

  it('its package.json depends on none of them', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages/onnx/package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };
    const declared = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies });
    expect(declared).toContain('@qtk/ir');
    expect(declared.filter((d) => QUANTIZATION_PACKAGES.includes(d))).toEqual([]);
  });

  it('the scan finds the imports where they belong (@qtk/onnx-deploy)', () => {
    const hits = quantizationImports(sourceFiles(join(ROOT, 'packages/onnx-deploy/src')));
    expect(
      hits.some((h) => h.startsWith('packages/onnx-deploy/src/quantized-input.ts:') && /@qtk\/fixed-point/.test(h)),
    ).toBe(true);
    expect(hits.some((h) => /from '@qtk\/core'/.test(h))).toBe(true);
  });
});
