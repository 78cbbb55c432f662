// QTK_VERSION is the version of every public QTK package: `pnpm version-packages` writes it after `changeset version`.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { QTK_VERSION } from './version.js';

const ROOT = join(__dirname, '../../..');

describe('QTK_VERSION', () => {
  it('equals the version of every public package (one fixed group in the changesets config)', () => {
    const dirs = ['packages', 'apps'].flatMap((d) => readdirSync(join(ROOT, d)).map((p) => join(ROOT, d, p)));
    const manifests = dirs.flatMap((d) => {
      try {
        return [
          JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')) as {
            name: string;
            version: string;
            private?: boolean;
          },
        ];
      } catch {
        return [];
      }
    });
    const published = manifests.filter((m) => !m.private);
    expect(published.length).toBeGreaterThan(10);
    for (const m of published) expect(`${m.name}@${m.version}`).toBe(`${m.name}@${QTK_VERSION}`);
    const config = JSON.parse(readFileSync(join(ROOT, '.changeset/config.json'), 'utf8')) as { fixed: string[][] };
    expect(config.fixed.length).toBe(1);
    expect([...config.fixed[0]!].sort()).toEqual(published.map((m) => m.name).sort());
  });
});
