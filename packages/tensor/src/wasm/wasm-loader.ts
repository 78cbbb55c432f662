import { wasmApi, type WasmBytes, type WasmImports, type WasmInstance, type WasmModule } from './wasm-api.js';

/** Outcome of trying to instantiate one of the package's wasm binaries. */
export type WasmLoadResult =
  | { ok: true; module: WasmModule; instance: WasmInstance; source: string }
  | { ok: false; reason: string };

interface NodeFs {
  existsSync(path: URL): boolean;
  readFileSync(path: URL): Uint8Array;
}

// Candidate locations of wasm/<name>.wasm relative to this module: from src/wasm/ when running
// the sources, from dist/ when running the tsup bundle.
const CANDIDATES = ['../../wasm/', '../wasm/'];

/** Node's fs when this runs in Node (found without a static import so bundles for browsers still load). */
function nodeFs(): NodeFs | null {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const fs = proc?.getBuiltinModule?.('node:fs') as NodeFs | undefined;
  return fs ?? null;
}

/** Compiles and instantiates wasm bytes; never throws. */
export function instantiate(bytes: WasmBytes, source: string, imports: WasmImports = {}): WasmLoadResult {
  if (!wasmApi) return { ok: false, reason: 'this JavaScript runtime has no WebAssembly' };
  try {
    const module = new wasmApi.Module(bytes);
    return { ok: true, module, instance: new wasmApi.Instance(module, imports), source };
  } catch (error) {
    return { ok: false, reason: `${source} did not instantiate: ${(error as Error).message}` };
  }
}

/**
 * Reads and instantiates wasm/<name>.wasm synchronously (Node only). Never throws: a missing
 * file, a runtime without WebAssembly SIMD or a non-Node host yields `{ ok: false, reason }`.
 */
export function loadWasmSync(name: string, imports: WasmImports = {}): WasmLoadResult {
  if (!wasmApi) return { ok: false, reason: 'this JavaScript runtime has no WebAssembly' };
  const fs = nodeFs();
  if (!fs) {
    return {
      ok: false,
      reason: `wasm/${name}.wasm cannot be read synchronously outside Node >= 20.16; await initWasmBackend() (it fetches the binaries) or pass the bytes to loadWasmBackend()`,
    };
  }
  const tried: string[] = [];
  for (const dir of CANDIDATES) {
    const url = new URL(`${dir}${name}.wasm`, import.meta.url);
    tried.push(url.pathname);
    if (!fs.existsSync(url)) continue;
    let bytes: Uint8Array;
    try {
      bytes = fs.readFileSync(url);
    } catch (error) {
      return { ok: false, reason: `cannot read ${url.pathname}: ${(error as Error).message}` };
    }
    return instantiate(bytes, url.pathname, imports);
  }
  return {
    ok: false,
    reason: `wasm/${name}.wasm not found (looked at ${tried.join(', ')}); build it with \`pnpm --filter @qtk/tensor build:wasm\``,
  };
}

interface AsyncWasmApi {
  compile(bytes: ArrayBuffer): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: WasmImports): Promise<WasmInstance>;
}
type Fetch = (url: string) => Promise<{ ok: boolean; status: number; arrayBuffer(): Promise<ArrayBuffer> }>;

/**
 * Fetches, compiles and instantiates a wasm binary asynchronously (browsers refuse to compile large
 * modules synchronously on their main thread). Never throws.
 */
export async function fetchWasm(url: string, imports: WasmImports = {}): Promise<WasmLoadResult> {
  const api = wasmApi as unknown as Partial<AsyncWasmApi> | undefined;
  if (!api?.compile || !api.instantiate) return { ok: false, reason: 'this JavaScript runtime has no WebAssembly' };
  const fetchFn = (globalThis as { fetch?: Fetch }).fetch;
  if (!fetchFn) return { ok: false, reason: `cannot fetch ${url}: this runtime has no fetch()` };
  let bytes: ArrayBuffer;
  try {
    const response = await fetchFn(url);
    if (!response.ok) return { ok: false, reason: `fetching ${url} failed with HTTP ${response.status}` };
    bytes = await response.arrayBuffer();
  } catch (error) {
    return { ok: false, reason: `cannot fetch ${url}: ${(error as Error).message}` };
  }
  try {
    const module = await api.compile(bytes);
    return { ok: true, module, instance: await api.instantiate(module, imports), source: url };
  } catch (error) {
    return { ok: false, reason: `${url} did not instantiate: ${(error as Error).message}` };
  }
}
