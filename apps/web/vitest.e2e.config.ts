import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `pnpm test:e2e`: the web app in a real browser (e2e/*.e2e.ts), apart from the unit suite.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: { conditions: ['qtk-source'] },
  ssr: { resolve: { conditions: ['qtk-source'] } },
  test: {
    include: ['apps/web/e2e/**/*.e2e.ts'],
    testTimeout: 240_000,
    hookTimeout: 240_000,
    pool: 'forks',
    reporters: ['default', './scripts/skip-reporter.ts'],
  },
});
