// The workspace's publishable packages and their manifests.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly exports?: Record<string, unknown>;
  readonly sideEffects?: boolean | readonly string[];
}

export interface PublishablePackage {
  readonly dir: string;
  readonly manifest: Manifest;
}

export function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** Every non-private workspace package under packages/ and apps/. */
export function publishablePackages(): PublishablePackage[] {
  const out: PublishablePackage[] = [];
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(ROOT, group)).sort()) {
      const dir = join(ROOT, group, name);
      if (!existsSync(join(dir, 'package.json'))) continue;
      const manifest = readManifest(dir);
      if (!manifest.private) out.push({ dir, manifest });
    }
  }
  return out;
}

export function run(cmd: string, args: readonly string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
