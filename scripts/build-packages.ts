// Builds the publishable packages: their JavaScript with tsup through turbo, and their type declarations
// from one TypeScript program over every package's sources
// (tsconfig.declarations.json) instead of one per package: a package built alone type-checks the sources of
// every sibling it imports again, which made declarations most of the build's time. Each package then gets the
// .d.ts files its exported entries reach, under dist/ as its src/ holds them (dist/index.d.ts for
// src/index.ts). Run after the packages' JavaScript builds (tsup cleans dist/ first).
// Usage: node --import tsx scripts/build-packages.ts
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type PublishablePackage, publishablePackages, ROOT, run } from './workspace.js';

const OUT = join(ROOT, 'node_modules/.cache/qtk-declarations');

/** The `types` file of every export of the package, relative to its directory (e.g. ./dist/index.d.ts). */
function exportedTypes(p: PublishablePackage): string[] {
  const types: string[] = [];
  for (const target of Object.values(p.manifest.exports ?? {})) {
    const t = (target as { types?: string }).types;
    if (typeof target === 'object' && t) types.push(t);
  }
  return types;
}

const RELATIVE_IMPORT = /(?:from\s+|import\s*\(\s*|^import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The emitted .d.ts files reachable from `entries` (paths under the package's emitted src/). */
function reachable(entries: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const stack = [...entries];
  while (stack.length) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    if (!existsSync(file)) throw new Error(`build-packages: ${relative(ROOT, file)} was not emitted`);
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)) {
      stack.push(join(dirname(file), m[1]!.replace(/\.js$/, '.d.ts')));
    }
  }
  return seen;
}

/** Copies each package's reachable declarations from the shared emit into its dist/. */
export function distributeDeclarations(packages: readonly PublishablePackage[]): number {
  let files = 0;
  for (const p of packages) {
    const emittedSrc = join(OUT, relative(ROOT, p.dir), 'src');
    const entries = exportedTypes(p).map((t) => join(emittedSrc, relative('dist', t)));
    for (const file of reachable(entries)) {
      const rel = relative(emittedSrc, file);
      if (rel.startsWith('..')) throw new Error(`build-packages: ${p.manifest.name} reaches ${file}, outside src/`);
      const dest = join(p.dir, 'dist', rel);
      mkdirSync(dirname(dest), { recursive: true });
      copyFileSync(file, dest);
      files++;
    }
  }
  return files;
}

/** Emits every package's declarations in one program, then places them. */
export function buildDeclarations(packages: readonly PublishablePackage[] = publishablePackages()): number {
  execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(ROOT, 'tsconfig.declarations.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  return distributeDeclarations(packages);
}

/**
 * Builds every publishable package: their JavaScript with turbo (which replays its cache when nothing changed)
 * and their declarations in one TypeScript program. `declarationsEmitted`: the caller has just run that program
 * or a wider one with the same output directory (`pnpm test`'s type check, tsconfig.check.json), so only the
 * copying is left.
 */
export function buildAll(
  packages: readonly PublishablePackage[] = publishablePackages(),
  options: { declarationsEmitted?: boolean } = {},
): void {
  const filters = packages.map((p) => `--filter=${p.manifest.name}`);
  run('pnpm', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only', ...filters], ROOT);
  if (options.declarationsEmitted) distributeDeclarations(packages);
  else buildDeclarations(packages);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  buildAll();
  console.log(`build-packages: built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
