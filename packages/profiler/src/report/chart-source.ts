// Chart.js, read from its npm package as the text of its UMD build, to be inlined in profiler.html so
// the page opens offline. Node-only (reads a file); a browser build of the report replaces this module.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { InvalidArgumentError } from '@qtk/tensor';

let cached: string | undefined;

/**
 * The Chart.js UMD bundle (defines the global `Chart`), starting with its MIT licence header. The
 * package's exports map does not list the UMD file, so it is found beside the CommonJS entry point.
 */
export function chartJsSource(): string {
  if (cached !== undefined) return cached;
  const entry = createRequire(import.meta.url).resolve('chart.js');
  const path = join(dirname(entry), 'chart.umd.js');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(
      `profiler report: cannot read Chart.js's UMD build at '${path}'; reinstall the dependency chart.js (pnpm install)`,
      { cause: err },
    );
  }
  if (!/^\/\*![\s\S]*?MIT License[\s\S]*?\*\//.test(text)) {
    throw new InvalidArgumentError(
      `profiler report: '${path}' does not start with Chart.js's MIT licence header; install chart.js 4 from npm`,
    );
  }
  // the source map is not shipped with the report
  cached = text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
  return cached;
}
