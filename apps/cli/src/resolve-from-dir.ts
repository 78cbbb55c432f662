import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const CONDITIONS = ['import', 'node', 'default'];

/** The file an `exports` target names for an ESM import (conditions import, node, default), or undefined. */
function exportTarget(target: unknown): string | undefined {
  if (typeof target === 'string') return target;
  if (Array.isArray(target)) {
    for (const t of target) {
      const found = exportTarget(t);
      if (found) return found;
    }
    return undefined;
  }
  if (target && typeof target === 'object') {
    for (const [condition, value] of Object.entries(target)) {
      if (CONDITIONS.includes(condition)) {
        const found = exportTarget(value);
        if (found) return found;
      }
    }
  }
  return undefined;
}

/** What a package's manifest exports as `subpath` ('.' or './x') to an ESM import. */
function manifestTarget(manifest: { exports?: unknown; main?: string }, subpath: string): string | undefined {
  const { exports } = manifest;
  if (exports === undefined) return subpath === '.' ? (manifest.main ?? 'index.js') : subpath;
  const keyed =
    exports && typeof exports === 'object' && !Array.isArray(exports) && Object.keys(exports)[0]?.startsWith('.');
  if (!keyed) return subpath === '.' ? exportTarget(exports) : undefined;
  return exportTarget((exports as Record<string, unknown>)[subpath]);
}

/**
 * Resolves a bare specifier ('pkg', '@scope/pkg/sub') as an import from a file in `dir` would: through
 * require's resolution first, then, for packages that export for `import` only, by finding the package
 * in the node_modules folders above `dir` and reading its `exports`. Undefined when it is not there.
 */
export function resolveFromDir(specifier: string, dir: string): string | undefined {
  try {
    return createRequire(join(dir, 'package.json')).resolve(specifier);
  } catch {
    // not installed above dir, or exported for import only: look for the package itself
  }
  const parts = specifier.split('/');
  const nameLength = specifier.startsWith('@') ? 2 : 1;
  const name = parts.slice(0, nameLength).join('/');
  const subpath = parts.length > nameLength ? `./${parts.slice(nameLength).join('/')}` : '.';
  for (let d = dir; ; d = dirname(d)) {
    const root = join(d, 'node_modules', name);
    if (existsSync(join(root, 'package.json'))) {
      const target = manifestTarget(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')), subpath);
      return target ? join(root, target) : undefined;
    }
    if (dirname(d) === d) return undefined;
  }
}
