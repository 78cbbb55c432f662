import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART_JS_UMD, CHART_JS_VERSION } from './chart-js-umd.js';

describe('the inlined Chart.js', () => {
  it('is the installed chart.js UMD build without its source map line (else run pnpm install, or pnpm --filter @qtk/profiler generate:chart)', () => {
    const dir = dirname(dirname(createRequire(import.meta.url).resolve('chart.js')));
    const installed = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
    expect(CHART_JS_VERSION, 'chart.js was updated: regenerate src/report/chart-js-umd.ts').toBe(installed.version);
    const umd = readFileSync(join(dir, 'dist/chart.umd.js'), 'utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
    expect(CHART_JS_UMD === umd, 'src/report/chart-js-umd.ts differs from the installed chart.js: regenerate it').toBe(
      true,
    );
  });

  it('starts with its MIT licence header and defines the global Chart', () => {
    expect(CHART_JS_UMD).toMatch(/^\/\*![\s\S]*?MIT License[\s\S]*?\*\//);
    expect(CHART_JS_UMD).toContain('.Chart=');
    expect(CHART_JS_UMD).not.toContain('sourceMappingURL');
  });
});
