// `pnpm release:dry-run`: what `pnpm release` would publish, without a registry. Builds and packs every public package
// (pnpm pack writes the workspace: ranges as the versions they stand for), then runs `npm publish --dry-run` on each
// tarball and prints, per package, the name, version, file count and sizes npm reports.
// Usage: node --import tsx scripts/publish-dry-run.ts [--verbose]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildAll } from './build-packages.js';
import { packAll } from './pack-and-install.js';
import { publishablePackages } from './workspace.js';

const verbose = process.argv.includes('--verbose');
const packages = publishablePackages();
buildAll(packages);
const work = mkdtempSync(join(tmpdir(), 'qtk-publish-'));
try {
  const tarballs = packAll(packages, work);
  for (const [name, file] of tarballs) {
    // npm writes its report to stderr; a dry run uploads nothing
    const r = spawnSync('npm', ['publish', '--dry-run', '--access', 'public', '--tag', 'latest', file], {
      cwd: work,
      encoding: 'utf8',
      env: { ...process.env, npm_config_loglevel: 'notice' },
    });
    const report = `${r.stdout}${r.stderr}`;
    if (r.status !== 0) throw new Error(`npm publish --dry-run ${file} failed:\n${report}`);
    if (verbose) console.log(report);
    else {
      const field = (label: string) => report.match(new RegExp(`npm notice ${label}:\\s+(.+)`))?.[1]?.trim() ?? '?';
      console.log(
        `${name}@${field('version')}: ${field('total files')} files, ${field('package size')} packed, ${field('unpacked size')} unpacked`,
      );
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
