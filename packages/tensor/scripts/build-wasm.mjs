// Compiles the AssemblyScript kernels in assembly/ to wasm/<name>.wasm with asc from npm (no
// system compiler); files starting with `_` are only imported by others. Run by `prepare` on
// install, by `build`, and by the test setup when a binary is missing or older than its source.
import { readdirSync, statSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const srcDir = join(root, 'assembly');
const outDir = join(root, 'wasm');

export async function buildWasm({ force = false } = {}) {
  const entries = readdirSync(srcDir).filter((f) => f.endsWith('.ts') && !f.startsWith('_'));
  const sources = readdirSync(srcDir).filter((f) => f.endsWith('.ts'));
  const newestSource = Math.max(...sources.map((f) => statSync(join(srcDir, f)).mtimeMs));
  mkdirSync(outDir, { recursive: true });
  const asc = await import('assemblyscript/asc');
  // Each entry is built twice: plain 128-bit SIMD, and `-relaxed` with relaxed SIMD (fused multiply-add),
  // which the loader picks where the runtime validates it.
  const builds = entries.flatMap((entry) => [
    { entry, suffix: '', features: [] },
    { entry, suffix: '-relaxed', features: ['--enable', 'relaxed-simd'] },
  ]);
  for (const { entry, suffix, features } of builds) {
    const name = entry.replace(/\.ts$/, `${suffix}.wasm`);
    const out = join(outDir, name);
    if (!force && existsSync(out) && statSync(out).mtimeMs >= newestSource) continue;
    const tmp = `${out}.${process.pid}.tmp`;
    // Entries named *-shared import a shared memory (threads) instead of defining their own.
    const shared = entry.endsWith('-shared.ts')
      ? ['--importMemory', '--sharedMemory', '--maximumMemory', '65536', '--enable', 'threads']
      : [];
    const { error, stderr } = await asc.main([
      join(srcDir, entry),
      ...shared,
      '--outFile',
      tmp,
      '--optimizeLevel',
      '3',
      '--shrinkLevel',
      '0',
      '--converge',
      '--noAssert',
      '--enable',
      'simd',
      ...features,
      '--runtime',
      'stub',
      '--initialMemory',
      '16',
      '--use',
      'abort=',
    ]);
    if (error) {
      throw new Error(`asc failed on assembly/${entry}: ${error.message}\n${stderr.toString()}`);
    }
    renameSync(tmp, out);
    console.log(`built wasm/${name}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildWasm({ force: process.argv.includes('--force') });
}
