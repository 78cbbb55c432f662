// Builds every publishable package, packs it with `pnpm pack` (the tarball npm would publish, with
// `workspace:` ranges turned into versions) and lints the tarball with publint (--strict: warnings fail
// too) and @arethetypeswrong/cli. QTK is ESM only, so attw runs with `--profile esm-only`: it still
// checks the types for Node 16+ ESM and bundlers, and skips node10 and require() resolution, which an
// ESM-only package fails by design (see docs/decisions.md). Subpaths exporting a binary asset
// (@qtk/tensor's wasm/gemm.wasm, fetched by browsers) are not modules and are left out of attw.
// Exits non-zero when any check fails.
// Usage: node --import tsx scripts/check-packages.ts
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildAll, packAll, publishablePackages, ROOT } from './pack-and-install.js';

interface Check {
  readonly label: string;
  readonly tool: string;
  readonly args: readonly string[];
}

/** Runs a tool from node_modules/.bin; resolves to its output when it fails, undefined when it passes. */
function runCheck(c: Check): Promise<string | undefined> {
  return new Promise((done) => {
    execFile(join(ROOT, 'node_modules/.bin', c.tool), c.args, { cwd: ROOT, encoding: 'utf8' }, (error, out, err) => {
      done(error ? `${out}${err}`.trim() || String(error) : undefined);
    });
  });
}

/** Runs the checks, as many at once as there are cores; returns the failures' reports. */
async function runAll(checks: readonly Check[]): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let c = checks[next++]; c; c = checks[next++]) {
      const report = await runCheck(c);
      if (report) failures.push(`${c.label}:\n${report}`);
    }
  };
  await Promise.all(Array.from({ length: availableParallelism() }, worker));
  return failures;
}

const started = performance.now();
const packages = publishablePackages();
buildAll();
const built = performance.now();
const work = mkdtempSync(join(tmpdir(), 'qtk-check-'));
try {
  const tarballs = packAll(packages, work);
  const checks = packages.flatMap((p): Check[] => {
    const name = p.manifest.name;
    const tarball = tarballs.get(name)!;
    const assets = Object.keys(p.manifest.exports ?? {}).filter((k) => /\.(wasm|json)$/.test(k));
    const exclude = assets.length ? ['--exclude-entrypoints', ...assets] : [];
    return [
      { label: `publint ${name}`, tool: 'publint', args: ['run', tarball, '--strict'] },
      {
        label: `attw ${name}`,
        tool: 'attw',
        args: [tarball, '--profile', 'esm-only', '--format', 'ascii', '--no-color', ...exclude],
      },
    ];
  });
  const failures = await runAll(checks);
  const timing = `build ${((built - started) / 1000).toFixed(1)} s, pack and lint ${((performance.now() - built) / 1000).toFixed(1)} s`;
  if (failures.length) {
    console.error(failures.join('\n\n'));
    console.error(`\ncheck:packages: ${failures.length} failure(s) in ${tarballs.size} packages (${timing})`);
    process.exitCode = 1;
  } else {
    console.log(`check:packages: ${tarballs.size} packages built, packed, publint and attw clean (${timing})`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
