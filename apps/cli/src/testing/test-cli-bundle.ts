// The qtk bin the real-process tests run: one ES module bundled from the TypeScript sources by vitest's global
// set-up. Starting the bin through tsx transformed and resolved every source module again in each process
// (about 3 s of CPU per run, over a hundred runs per suite); the bundle starts in about 0.6 s, like the
// published bin. onnxruntime-node (native) stays external and resolves from apps/cli's node_modules; the wasm
// binaries are copied beside the bundle, where @qtk/tensor's `new URL('../wasm/...', import.meta.url)` looks.
// Runs that load a plugin module use the sources (runSourceProcess): a plugin imports @qtk/* itself and must
// share the CLI's registries.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI_DIR = fileURLToPath(new URL('../..', import.meta.url));
const ROOT = join(CLI_DIR, '../..');
const OUT = join(CLI_DIR, 'node_modules/.cache/qtk-test-cli');

/** The bundled bin (written by buildTestCli). */
export const TEST_CLI_BIN = join(OUT, 'bin/qtk.mjs');

/** Bundles apps/cli/src/bin.ts from the sources into TEST_CLI_BIN and copies the wasm binaries beside it. */
export async function buildTestCli(): Promise<void> {
  const { build } = await import('esbuild');
  await build({
    entryPoints: [join(CLI_DIR, 'src/bin.ts')],
    outfile: TEST_CLI_BIN,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    conditions: ['qtk-source'],
    keepNames: true,
    external: ['onnxruntime-node'],
    // bundled CommonJS dependencies call require(); an ES module has none of its own
    banner: {
      js: "import { createRequire as qtkCreateRequire } from 'node:module'; const require = qtkCreateRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  const wasmFrom = join(ROOT, 'packages/tensor/wasm');
  const wasmTo = join(OUT, 'wasm');
  mkdirSync(wasmTo, { recursive: true });
  for (const f of readdirSync(wasmFrom).filter((name) => name.endsWith('.wasm'))) {
    copyFileSync(join(wasmFrom, f), join(wasmTo, f));
  }
}
