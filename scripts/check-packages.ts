// Builds every publishable package, packs it with `pnpm pack` (the tarball npm would publish, with
// `workspace:` ranges turned into versions) and lints the tarball with publint (--strict: warnings fail
// too) and @arethetypeswrong/cli. QTK is ESM only, so attw runs with `--profile esm-only`: it still
// checks the types for Node 16+ ESM and bundlers, and skips node10 and require() resolution, which an
// ESM-only package fails by design (see docs/decisions.md). Subpaths exporting a binary asset
// (@qtk/tensor's wasm/gemm.wasm, fetched by browsers) are not modules and are left out of attw.
// Exits non-zero when any check fails.
// Usage: node --import tsx scripts/check-packages.ts
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildAll, packAll, publishablePackages, ROOT } from './pack-and-install.js';

function check(tool: string, args: readonly string[]): string | undefined {
  try {
    execFileSync('pnpm', ['exec', tool, ...args], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    return undefined;
  } catch (e) {
    const { stdout, stderr } = e as { stdout?: string; stderr?: string };
    return `${stdout ?? ''}${stderr ?? ''}`.trim() || String(e);
  }
}

const started = performance.now();
const packages = publishablePackages();
buildAll();
const work = mkdtempSync(join(tmpdir(), 'qtk-check-'));
const failures: string[] = [];
try {
  const tarballs = packAll(packages, work);
  for (const p of packages) {
    const name = p.manifest.name;
    const tarball = tarballs.get(name)!;
    const lint = check('publint', ['run', tarball, '--strict']);
    if (lint) failures.push(`publint ${name}:\n${lint}`);
    const assets = Object.keys(p.manifest.exports ?? {}).filter((k) => /\.(wasm|json)$/.test(k));
    const exclude = assets.length ? ['--exclude-entrypoints', ...assets] : [];
    const types = check('attw', [tarball, '--profile', 'esm-only', '--format', 'ascii', '--no-color', ...exclude]);
    if (types) failures.push(`attw ${name}:\n${types}`);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (failures.length) {
    console.error(failures.join('\n\n'));
    console.error(`\ncheck:packages: ${failures.length} failure(s) in ${tarballs.size} packages (${seconds} s)`);
    process.exitCode = 1;
  } else {
    console.log(`check:packages: ${tarballs.size} packages built, packed, publint and attw clean (${seconds} s)`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
