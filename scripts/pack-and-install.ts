import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAll } from './build-packages.js';
import { type PublishablePackage, publishablePackages, readManifest, ROOT, run } from './workspace.js';

/** `pnpm pack`s each package into `dest`; returns the tarball paths by package name. */
export function packAll(packages: readonly PublishablePackage[], dest: string): Map<string, string> {
  mkdirSync(dest, { recursive: true });
  const tarballs = new Map<string, string>();
  // One recursive pnpm for all of them: a pnpm process per package spent about 3 s each starting up.
  const filters = packages.map((p) => `--filter=${p.manifest.name}`);
  run('pnpm', ['-r', ...filters, 'pack', '--pack-destination', dest], ROOT);
  for (const p of packages) {
    const file = join(dest, `${p.manifest.name.replace(/^@/, '').replace('/', '-')}-${p.manifest.version}.tgz`);
    if (!existsSync(file)) throw new Error(`pnpm pack of ${p.manifest.name} did not write ${file}`);
    tarballs.set(p.manifest.name, file);
  }
  return tarballs;
}

/** The installed directory of `name` as Node would find it from `fromDir` (walking up node_modules). */
function findInstalled(name: string, fromDir: string): string {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(dir) === dir) throw new Error(`${name} is not installed above ${fromDir}; run pnpm install first`);
  }
}

/** Every third-party package the QTK packages need at run time, with its installed directory. */
export function thirdPartyClosure(packages: readonly PublishablePackage[]): Map<string, string> {
  const found = new Map<string, string>();
  const visit = (deps: Record<string, string> | undefined, fromDir: string): void => {
    for (const name of Object.keys(deps ?? {})) {
      if (name.startsWith('@qtk/')) continue;
      const dir = findInstalled(name, fromDir);
      const seen = found.get(name);
      if (seen === dir) continue;
      if (seen) throw new Error(`two copies of ${name} (${seen}, ${dir}): pin one version in the workspace`);
      found.set(name, dir);
      visit(readManifest(dir).dependencies, dir);
    }
  };
  for (const p of packages) visit(p.manifest.dependencies, p.dir);
  return found;
}

/**
 * Every publishable package an application installs: all but the test-time tools whose peer is vitest
 * (@qtk/testkit, with vite, rollup, esbuild, ... behind it), which check:packages packs and lints all the same.
 */
export function runtimePackages(packages: readonly PublishablePackage[]): PublishablePackage[] {
  return packages.filter((p) => !p.manifest.peerDependencies?.vitest);
}

export interface ProjectManifest {
  readonly dependencies?: Record<string, string>;
  readonly pnpm?: { readonly overrides?: Record<string, string>; readonly [key: string]: unknown };
  readonly [key: string]: unknown;
}

/**
 * `manifest` with each QTK package (`specs`: name → `file:` spec of its tarball) as a dependency and as a pnpm
 * override, so the QTK packages' dependencies on each other resolve to the tarballs too, not to a registry.
 * Other fields, dependencies and overrides stay.
 */
export function withQtkTarballs(manifest: ProjectManifest, specs: ReadonlyMap<string, string>): ProjectManifest {
  const ours = Object.fromEntries(specs);
  return {
    ...manifest,
    dependencies: { ...manifest.dependencies, ...ours },
    pnpm: { ...manifest.pnpm, overrides: { ...manifest.pnpm?.overrides, ...ours } },
  };
}

/** Writes a fresh project in `dir` depending on every tarball, and installs it offline with pnpm. */
export function installFresh(dir: string, tarballs: Map<string, string>, thirdParty: Map<string, string>): void {
  const theirs = Object.fromEntries([...thirdParty].map(([name, d]) => [name, `file:${d}`]));
  const manifest = withQtkTarballs(
    { name: 'qtk-pick-and-mix', private: true, type: 'module', pnpm: { overrides: theirs } },
    new Map([...tarballs].map(([name, file]) => [name, `file:${file}`])),
  );
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // A store of its own, so the result does not depend on what this machine's pnpm store holds.
  const store = join(dir, '..', 'store');
  run('pnpm', ['install', '--offline', '--no-frozen-lockfile', `--store-dir=${store}`, '--reporter=append-only'], dir);
}

/**
 * Installs the runtime packages' tarballs offline in a fresh project under `work`, and checks that
 * pick-and-mix and the installed `qtk` bin print what the sources print; returns the number installed.
 */
export function checkInstall(
  packages: readonly PublishablePackage[],
  tarballs: Map<string, string>,
  work: string,
): number {
  const project = join(work, 'project');
  mkdirSync(project);
  const runtime = runtimePackages(packages);
  const runtimeTarballs = new Map([...tarballs].filter(([name]) => runtime.some((p) => p.manifest.name === name)));
  installFresh(project, runtimeTarballs, thirdPartyClosure(runtime));
  writeFileSync(join(project, 'pick-and-mix.mjs'), readFileSync(join(ROOT, 'scripts/pick-and-mix.mjs')));
  const installed = run(process.execPath, ['pick-and-mix.mjs'], project);
  const source = run(
    process.execPath,
    ['--conditions=qtk-source', '--import', 'tsx', 'scripts/pick-and-mix.mjs'],
    ROOT,
  );
  if (installed !== source) {
    throw new Error(
      `pick-and-mix printed different numbers from the tarballs than from the sources:\n${installed}\n${source}`,
    );
  }
  const onnx = join(ROOT, 'packages/onnx/fixtures/torch-small.onnx');
  const cli = ['inspect', onnx, '--march', 'bayes'];
  const bin = run(join(project, 'node_modules/.bin/qtk'), cli, project);
  const binSource = run(
    process.execPath,
    ['--conditions=qtk-source', '--import', 'tsx', 'apps/cli/src/bin.ts', ...cli],
    ROOT,
  );
  if (bin !== binSource) throw new Error(`the installed qtk printed:\n${bin}\nthe sources printed:\n${binSource}`);
  if (!bin.includes("15 of 15 nodes supported on 'bayes'")) throw new Error(`unexpected qtk inspect output:\n${bin}`);
  checkReleasedPlugins(project);
  return runtimeTarballs.size;
}

/**
 * Plugins as published for other QTK versions (scripts/released-plugins/), placed in the project's node_modules as
 * an installed package would be: the one built against QTK 0.1.0's contract must load and calibrate, the one written
 * for a later contract must be refused naming the version it needs (scripts/check-released-plugins.mjs asserts both).
 */
function checkReleasedPlugins(project: string): void {
  const fixtures = join(ROOT, 'scripts/released-plugins');
  for (const name of readdirSync(fixtures))
    cpSync(join(fixtures, name), join(project, 'node_modules', name), { recursive: true });
  writeFileSync(
    join(project, 'check-released-plugins.mjs'),
    readFileSync(join(ROOT, 'scripts/check-released-plugins.mjs')),
  );
  const out = run(process.execPath, ['check-released-plugins.mjs'], project);
  for (const expected of ['qtk-observer-half-range: loaded on QTK', 'qtk-observer-next-contract: refused: '])
    if (!out.includes(expected)) throw new Error(`check-released-plugins printed:\n${out}`);
  console.log(out.trim());
}

function main(): void {
  const keep = process.argv.includes('--keep');
  const started = performance.now();
  const packages = publishablePackages();
  buildAll(packages);
  const work = mkdtempSync(join(tmpdir(), 'qtk-pack-'));
  try {
    const count = checkInstall(packages, packAll(packages, join(work, 'tarballs')), work);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `pack-and-install: ${count} tarballs installed offline in ${join(work, 'project')}; pick-and-mix and qtk inspect agree with the sources (${seconds} s)`,
    );
  } finally {
    if (!keep) rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
