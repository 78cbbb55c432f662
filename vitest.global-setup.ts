// Builds the AssemblyScript kernels once before the suite if they are missing or stale.
export default async function setup(): Promise<void> {
  // @ts-expect-error plain ESM build script without type declarations
  const { buildWasm } = await import('./packages/tensor/scripts/build-wasm.mjs');
  await buildWasm();
}
