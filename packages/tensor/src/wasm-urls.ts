// Where the package's wasm binaries are, as URLs next to this module. It sits directly in src/ so the
// same relative path holds from the sources (src/) and from the bundle (dist/), and each URL is a
// literal `new URL(..., import.meta.url)`, the form bundlers (Vite, webpack, esbuild's loaders) copy
// as an asset.

/** The four builds: single-thread or shared memory, each plain SIMD or relaxed SIMD. */
export type WasmBuild = 'gemm' | 'gemm-relaxed' | 'gemm-shared' | 'gemm-shared-relaxed';

/** The URL of one build, resolved against this module. */
export function wasmBuildUrl(build: WasmBuild): URL {
  switch (build) {
    case 'gemm':
      return new URL('../wasm/gemm.wasm', import.meta.url);
    case 'gemm-relaxed':
      return new URL('../wasm/gemm-relaxed.wasm', import.meta.url);
    case 'gemm-shared':
      return new URL('../wasm/gemm-shared.wasm', import.meta.url);
    case 'gemm-shared-relaxed':
      return new URL('../wasm/gemm-shared-relaxed.wasm', import.meta.url);
  }
}
