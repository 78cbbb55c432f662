// Builds every publishable package, packs it with `pnpm pack` (the tarball npm would publish, with
// `workspace:` ranges turned into versions) and lints the tarball with publint (--strict: warnings fail
// too) and arethetypeswrong (scripts/type-resolution.ts, the esm-only profile, in this process). Subpaths
// exporting a binary asset (@qtk/tensor's wasm/gemm.wasm, fetched by browsers) are not modules: attw skips them.
// It also holds `sideEffects` to the bundles: a package whose dist/*.js runs a call at top level (a
// registration), declares `var x = register...(...)` / `traceable(...)`, or imports a module for its
// effects must say `true`; one whose bundle does none of these must say `false`.
// And it bundles each library package's built main entry (dist) for the browser with esbuild: the published
// files must reach no Node built-in and no onnxruntime-node (their file helpers are in ./node).
// Exits non-zero when any check fails.
// With --install it then runs check:install (scripts/pack-and-install.ts) on the same build and tarballs.
// --declarations-emitted: the declarations are already in their cache (pnpm test's type check emits them).
// Usage: node --import tsx scripts/check-packages.ts [--install] [--declarations-emitted]
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeNodeOnlyImports, nodeOnlyImports } from './browser-bundle.js';
import { checkInstall, packAll } from './pack-and-install.js';
import { buildAll } from './build-packages.js';
import { tarballTypeProblems } from './type-resolution.js';
import { type PublishablePackage, publishablePackages, ROOT } from './workspace.js';

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

const EFFECT = /^(?:[A-Za-z$][\w$.]*\(|(?:var|let|const) [\w$]+ = (?:register\w*|traceable)\(|import "[^"]+";)/m;

/** A failure message when the package's `sideEffects` disagrees with what its built bundles do at import. */
function checkSideEffects(p: PublishablePackage): string | undefined {
  const dist = join(p.dir, 'dist');
  const files = readdirSync(dist).filter((f) => f.endsWith('.js'));
  const effectful = files.filter((f) => EFFECT.test(readFileSync(join(dist, f), 'utf8')));
  const declared = p.manifest.sideEffects;
  if (declared === false && effectful.length) {
    return `sideEffects ${p.manifest.name}: declares false, but ${effectful.join(', ')} register or import for effects`;
  }
  if (declared !== false && !effectful.length) {
    return `sideEffects ${p.manifest.name}: its bundles run nothing at import; declare "sideEffects": false`;
  }
  return undefined;
}

/** A failure message per package whose published types do not resolve (arethetypeswrong, esm-only profile). */
async function checkTypes(packages: readonly PublishablePackage[], tarballs: Map<string, string>): Promise<string[]> {
  const reports: string[] = [];
  for (const p of packages) {
    const assets = Object.keys(p.manifest.exports ?? {}).filter((k) => /\.(wasm|json)$/.test(k));
    const problems = await tarballTypeProblems(readFileSync(tarballs.get(p.manifest.name)!), assets);
    if (problems.length) reports.push(`attw ${p.manifest.name}:\n${problems.join('\n')}`);
  }
  return reports;
}

/** A failure message per library package (under packages/) whose built main entry reaches a Node-only module. */
async function checkBrowserBundles(packages: readonly PublishablePackage[]): Promise<string[]> {
  const libraries = packages.filter((p) => p.dir.startsWith(join(ROOT, 'packages')));
  const reports = await Promise.all(
    libraries.map(async (p) => {
      const main = (p.manifest.exports?.['.'] as { import?: string } | undefined)?.import;
      if (!main) return `browser bundle ${p.manifest.name}: no "import" condition on its "." export`;
      const found = await nodeOnlyImports(join(p.dir, main), { root: ROOT });
      return found.length ? `browser bundle ${p.manifest.name}:\n${describeNodeOnlyImports(main, found)}` : undefined;
    }),
  );
  return reports.filter((r): r is string => r !== undefined);
}

const started = performance.now();
const packages = publishablePackages();
buildAll(packages, { declarationsEmitted: process.argv.includes('--declarations-emitted') });
const built = performance.now();
const work = mkdtempSync(join(tmpdir(), 'qtk-check-'));
try {
  const tarballs = packAll(packages, work);
  const publint = packages.map(
    (p): Check => ({
      label: `publint ${p.manifest.name}`,
      tool: 'publint',
      args: ['run', tarballs.get(p.manifest.name)!, '--strict'],
    }),
  );
  const [failures, types, bundles] = await Promise.all([
    runAll(publint),
    checkTypes(packages, tarballs),
    checkBrowserBundles(packages),
  ]);
  failures.push(...types, ...bundles);
  for (const p of packages) {
    const mismatch = checkSideEffects(p);
    if (mismatch) failures.push(mismatch);
  }
  const linted = performance.now();
  const seconds = (from: number, to: number) => `${((to - from) / 1000).toFixed(1)} s`;
  let timing = `build ${seconds(started, built)}, pack and lint ${seconds(built, linted)}`;
  if (process.argv.includes('--install') && !failures.length) {
    const count = checkInstall(packages, tarballs, work);
    timing += `, ${count} tarballs installed offline, pick-and-mix and qtk inspect as from the sources ${seconds(linted, performance.now())}`;
  }
  if (failures.length) {
    console.error(failures.join('\n\n'));
    console.error(`\ncheck:packages: ${failures.length} failure(s) in ${tarballs.size} packages (${timing})`);
    process.exitCode = 1;
  } else {
    console.log(
      `check:packages: ${tarballs.size} packages built, packed, publint and attw clean, main entries bundle for the browser (${timing})`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
