import { buildTestCli } from './apps/cli/src/testing/test-cli-bundle.js';

// Builds the AssemblyScript kernels once before the suite if they are missing or stale, then the qtk bin the
// real-process tests run (bundled from the sources, with those kernels beside it).
export default async function setup(): Promise<void> {
  // @ts-expect-error plain ESM build script without type declarations
  const { buildWasm } = await import('./packages/tensor/scripts/build-wasm.mjs');
  await buildWasm();
  await buildTestCli();
}
