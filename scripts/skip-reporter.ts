// A vitest reporter that ends the run with every skipped test and every check left out inside a test, one line
// each with its note (what is missing and the command that installs it), so nothing passes silently. With
// QTK_SKIP_LIST=FILE it also writes the lines there as JSON, for `pnpm test`'s closing summary.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { SKIPPED_CHECK } from './system-requirements.js';

export interface SkipLine {
  readonly test: string;
  readonly note: string;
}

export default class SkipReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const lines: SkipLine[] = [];
    for (const m of modules) {
      const file = relative(process.cwd(), m.moduleId);
      for (const t of m.children.allTests()) {
        const r = t.result();
        const test = `${file} > ${t.fullName}`;
        if (r.state === 'skipped') lines.push({ test, note: r.note ?? 'skipped without a reason (give it one)' });
        const left = new Set(t.annotations().flatMap((a) => (a.type === SKIPPED_CHECK ? [a.message] : [])));
        for (const note of left) lines.push({ test, note: `partly: ${note}` });
      }
    }
    if (lines.length) {
      const out = [`\n${lines.length} skipped test(s) or check(s):`, ...lines.map((l) => `  - ${l.test}: ${l.note}`)];
      process.stdout.write(`${out.join('\n')}\n`);
    }
    const file = process.env.QTK_SKIP_LIST;
    if (file) writeFileSync(file, JSON.stringify(lines, null, 2));
  }
}
