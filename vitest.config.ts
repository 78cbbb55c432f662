import { defineConfig } from 'vitest/config';

// Tests that assert what the packages alone register (the registries, the op catalog, the export rules): other
// test files register fixtures, so these run in a module graph of their own.
const ISOLATED = [
  'apps/cli/src/registry-names.test.ts',
  'packages/onnx/src/integer/export-coverage.test.ts',
  'packages/tensor/src/op-catalog/op-catalog.test.ts',
];

// Sibling packages resolve to their TypeScript sources through the `qtk-source` export condition, so the suite
// runs without building anything first. Every other test file shares one module graph per worker (isolate:
// false): importing the packages' sources again for each of the ~260 files was most of the suite's time.
export default defineConfig({
  resolve: { conditions: ['qtk-source'] },
  ssr: { resolve: { conditions: ['qtk-source'] } },
  test: {
    globalSetup: ['./vitest.global-setup.ts'],
    testTimeout: 60_000,
    pool: 'threads',
    // every skip and every check left out is listed at the end with its reason (scripts/skip-reporter.ts)
    reporters: ['default', './scripts/skip-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: [
            'packages/*/src/**/*.test.ts',
            'apps/*/src/**/*.test.ts',
            'examples/**/*.test.ts',
            'scripts/*.test.ts',
          ],
          exclude: ['**/node_modules/**', ...ISOLATED],
          isolate: false,
        },
      },
      { extends: true, test: { name: 'isolated', include: ISOLATED } },
    ],
  },
});
