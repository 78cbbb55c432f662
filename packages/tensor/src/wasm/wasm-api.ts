// The slice of the WebAssembly JS API this package uses. The project compiles against ES2022
// without the DOM library, which is where TypeScript declares WebAssembly.

export type WasmBytes = ArrayBuffer | ArrayBufferView;

export interface WasmMemory {
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
  grow(deltaPages: number): number;
}

export interface WasmModule {
  readonly __wasmModule?: never;
}

export interface WasmInstance {
  readonly exports: Record<string, unknown>;
}

export type WasmImports = Record<string, Record<string, unknown>>;

export interface WasmApi {
  Module: new (bytes: WasmBytes) => WasmModule;
  Instance: new (module: WasmModule, imports: WasmImports) => WasmInstance;
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
}

/** The host's WebAssembly object, or undefined on a runtime without one. */
export const wasmApi: WasmApi | undefined = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
