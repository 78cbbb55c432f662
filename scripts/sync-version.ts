// After `changeset version`: writes the new version of the QTK packages (one fixed group) into @qtk/spec's
// QTK_VERSION, which the model file records and plugins are checked against. Part of `pnpm version-packages`.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './workspace.js';

const { version } = JSON.parse(readFileSync(join(ROOT, 'packages/spec/package.json'), 'utf8')) as { version: string };
const file = join(ROOT, 'packages/spec/src/version.ts');
const source = readFileSync(file, 'utf8');
const next = source.replace(/export const QTK_VERSION = '[^']*';/, `export const QTK_VERSION = '${version}';`);
if (!next.includes(`'${version}'`)) throw new Error(`sync-version: no QTK_VERSION line in ${file}`);
writeFileSync(file, next);
console.log(`sync-version: QTK_VERSION = '${version}'`);
