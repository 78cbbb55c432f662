import { defineConfig } from 'vitest/config';

// Sibling packages resolve to their TypeScript sources through the `qtk-source`
// export condition, so the suite runs without building anything first.
export default defineConfig({
  resolve: { conditions: ['qtk-source'] },
  ssr: { resolve: { conditions: ['qtk-source'] } },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'examples/**/*.test.ts', 'scripts/*.test.ts'],
    globalSetup: ['./vitest.global-setup.ts'],
    testTimeout: 60_000,
    pool: 'threads',
    // every skip and every check left out is listed at the end with its reason (scripts/skip-reporter.ts)
    reporters: ['default', './scripts/skip-reporter.ts'],
  },
});
