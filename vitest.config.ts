import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './scripts/slow-first-sequencer.js';

// Sibling packages resolve to their TypeScript sources through the `qtk-source` export condition, so the suite
// runs without building anything first. Test files share one module graph per worker thread (isolate: false):
// importing the packages' sources again for each of the ~260 files was most of the suite's time.
export default defineConfig({
  resolve: { conditions: ['qtk-source'] },
  ssr: { resolve: { conditions: ['qtk-source'] } },
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'examples/**/*.test.ts',
      'scripts/*.test.ts',
      'zoo/*.test.ts',
    ],
    globalSetup: ['./vitest.global-setup.ts'],
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 60_000,
    pool: 'threads',
    poolOptions: { threads: { isolate: false }, forks: { isolate: true } },
    // Tests that assert what the packages alone register (the registries, the op catalog, the export rules) run
    // isolated in a process each: other test files register fixtures. (poolMatchGlobs is deprecated in vitest 3,
    // but a project with isolate: false did not take effect here.)
    poolMatchGlobs: [
      ['**/apps/cli/src/registry-names.test.ts', 'forks'],
      ['**/packages/fake-quant/src/observer-factory.test.ts', 'forks'],
      ['**/packages/onnx-deploy/src/integer/export-coverage.test.ts', 'forks'],
      ['**/packages/onnx/src/export-seams.test.ts', 'forks'],
      ['**/packages/tensor/src/op-catalog/op-catalog.test.ts', 'forks'],
    ],
    // every skip and every check left out is listed at the end with its reason (scripts/skip-reporter.ts)
    reporters: ['default', './scripts/skip-reporter.ts'],
  },
});
