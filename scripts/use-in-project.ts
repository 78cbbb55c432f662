// Installs QTK into a project of your own, outside this repository, before the packages are published: builds
// and packs every package an application needs (as check:install does), copies the tarballs into
// DIR/qtk-tarballs, and adds them to DIR/package.json as dependencies and pnpm overrides; then `pnpm install`
// in DIR installs them (third-party dependencies come from the registry as usual).
// Usage: pnpm use-in-project DIR
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packAll, type ProjectManifest, runtimePackages, withQtkTarballs } from './pack-and-install.js';
import { buildAll } from './build-packages.js';
import { publishablePackages, ROOT } from './workspace.js';

/** The `file:` spec of each tarball, relative to the project (so the folder can move with its tarballs). */
export function tarballSpecs(project: string, tarballs: ReadonlyMap<string, string>): Map<string, string> {
  return new Map(
    [...tarballs].map(([name, file]) => [name, `file:./${relative(project, file).split('\\').join('/')}`]),
  );
}

function main(): void {
  const target = process.argv[2];
  if (!target || target.startsWith('-')) {
    console.error('usage: pnpm use-in-project DIR   (DIR: your project folder, outside this repository)');
    process.exit(2);
  }
  const project = resolve(target);
  if (!relative(ROOT, project).startsWith('..')) {
    console.error(`${project} is inside the QTK repository; pass a folder outside it`);
    process.exit(2);
  }
  mkdirSync(project, { recursive: true });
  buildAll();
  const tarballs = packAll(runtimePackages(publishablePackages()), join(project, 'qtk-tarballs'));
  const manifestPath = join(project, 'package.json');
  const manifest: ProjectManifest = existsSync(manifestPath)
    ? (JSON.parse(readFileSync(manifestPath, 'utf8')) as ProjectManifest)
    : { name: basename(project), private: true, type: 'module' };
  writeFileSync(
    manifestPath,
    `${JSON.stringify(withQtkTarballs(manifest, tarballSpecs(project, tarballs)), null, 2)}\n`,
  );
  console.log(
    `${tarballs.size} QTK packages packed into ${join(project, 'qtk-tarballs')} and added to ${manifestPath};`,
  );
  console.log(`now run: cd ${project} && pnpm install`);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
