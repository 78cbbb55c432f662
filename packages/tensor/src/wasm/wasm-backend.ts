import { cpuGemm, type GemmArgs, type GemmKernel } from '../gemm/gemm.js';
import { registerBackend, registerKernel, type Backend } from '../registry.js';
import { createWasmGemm, MAX_WASM_BYTES, wasmGemmBytes, type GemmExports } from './wasm-gemm.js';
import { wasmApi, type WasmBytes } from './wasm-api.js';
import { instantiate, loadWasmSync, type WasmLoadResult } from './wasm-loader.js';

/** Whether the wasm backend is serving kernels, and if not, why. */
export interface WasmStatus {
  loaded: boolean;
  /** Where the binary came from (a file path, or 'bytes' when passed to loadWasmBackend). */
  source?: string;
  /** Why the backend is not loaded (missing file, QTK_BACKEND=cpu, no WebAssembly, ...). */
  reason?: string;
  /** Set when a call fell back to the cpu kernel at run time (for example memory could not grow). */
  lastFallback?: string;
}

let wasmGemm: GemmKernel | null = null;
let status: WasmStatus = { loaded: false, reason: 'not loaded yet' };

/** WebAssembly SIMD backend for the hot kernels; preferred over `cpu` whenever its binary loaded. */
export const wasmBackend: Backend = { name: 'wasm', priority: 10, isReady: () => wasmGemm !== null };
registerBackend(wasmBackend);

function runGemm(g: GemmArgs): void {
  try {
    wasmGemm!(g);
  } catch (error) {
    // Only a failed memory.grow is recoverable here; argument errors propagate.
    if (!(error instanceof RangeError)) throw error;
    status = { ...status, lastFallback: `gemm ${g.m}×${g.n}×${g.k} ran on cpu: ${error.message}` };
    cpuGemm(g);
  }
}

registerKernel<GemmKernel>({
  op: 'Gemm',
  backend: 'wasm',
  fn: runGemm,
  accepts: (g: GemmArgs) => wasmGemmBytes(g) <= MAX_WASM_BYTES,
});

function adopt(result: WasmLoadResult): WasmStatus {
  if (!result.ok) {
    wasmGemm = null;
    status = { loaded: false, reason: result.reason };
    return status;
  }
  const exports = result.instance.exports as unknown as GemmExports;
  if (typeof exports.gemm !== 'function' || !(exports.memory instanceof wasmApi!.Memory)) {
    wasmGemm = null;
    status = { loaded: false, reason: `${result.source} does not export gemm and memory; rebuild it` };
    return status;
  }
  wasmGemm = createWasmGemm(exports);
  status = { loaded: true, source: result.source };
  return status;
}

/** Loads the gemm binary from given bytes (browsers, bundlers) or, without arguments, from wasm/gemm.wasm. */
export function loadWasmBackend(bytes?: WasmBytes): WasmStatus {
  return adopt(bytes ? instantiate(bytes, 'bytes') : loadWasmSync('gemm'));
}

/** Whether the wasm backend loaded, where from, or why not. */
export function wasmStatus(): WasmStatus {
  return { ...status };
}

const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
if (env?.QTK_BACKEND === 'cpu') {
  status = { loaded: false, reason: 'disabled by QTK_BACKEND=cpu' };
} else {
  loadWasmBackend();
}
