// The guides' code blocks run as written: docs/writing-an-observer.md's observer and
// docs/writing-a-march.md's march run their conformance suites here, so the guides cannot drift from the API.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { marches, observers, type ObserverV1 } from '@qtk/spec';
import { afterAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const docs = join(here, '..', '..', '..', 'docs');

/** Every ```ts block of a guide, in order, joined into one module. */
function guideModule(name: string): string {
  const blocks = [...readFileSync(join(docs, name), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  if (blocks.length === 0) throw new Error(`docs/${name} has no ts code block`);
  return blocks.join('\n');
}

// beside the tests, so the blocks' package imports resolve as a user's code would
const dir = mkdtempSync(join(here, '.guides-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function load<T>(guide: string): Promise<T> {
  const file = join(dir, guide.replace('.md', '.ts'));
  writeFileSync(file, guideModule(guide));
  return (await import(file)) as T;
}

// importing a guide's module calls its describe…Conformance at the top level: the suites run with this file
const observerGuide = await load<{ maxAbsObserver: unknown; observer: ObserverV1 }>('writing-an-observer.md');

describe('docs/writing-an-observer.md', () => {
  it('registers the guide observer, and createObserver builds it with its own options', () => {
    expect(observers.get('max_abs')).toBe(observerGuide.maxAbsObserver);
    expect(observerGuide.observer.name).toBe('max_abs');
    expect(observerGuide.observer.options).toMatchObject({ margin: 1.25, dtype: 'qint16' });
  });
});

const marchGuide = await load<{ relu8March: unknown; registered: unknown }>('writing-a-march.md');

describe('docs/writing-a-march.md', () => {
  it('registers the guide march under its id', () => {
    expect(marchGuide.registered).toBe(marchGuide.relu8March);
    expect(marches.get('relu8')).toBe(marchGuide.relu8March);
  });
});
