import type { WasmMemory, WasmModule } from './wasm-api.js';

// The worker half of the two-thread runner (wasm-threads.ts), for Node's worker_threads and for
// browsers' Web Workers. Both run the same loop over the shared control block; only how the worker
// starts and receives the module, the memory and the block differs.

/** Slots of the Int32Array control block shared between the runner and its worker. */
export const WORKER_SLOTS = {
  /** Job number, bumped by the main thread to wake the worker. */
  SEQ: 0,
  /** seq while job seq is open, -seq once the worker joined it, 0 once main closed it. */
  STATE: 1,
  /** Last job number the worker finished. */
  DONE: 2,
  /** 1 once the worker has instantiated the module. */
  READY: 3,
  /** 1 when the worker's job threw. */
  FAILED: 4,
  /** Chunks the worker computed in total, for wasmStatus(). */
  CHUNKS: 5,
  COUNT: 6,
} as const;

/** What a worker needs: the compiled module, the shared memory, the control block and its addresses. */
export interface WorkerInit {
  module: WasmModule;
  memory: WasmMemory;
  ctrl: SharedArrayBuffer;
  /** Byte address of the job descriptor. */
  job: number;
  /** Byte address of the worker's scratch area. */
  work: number;
}

/** Starts a worker serving jobs; `onFailure` is told why if it errors or exits. Throws if it cannot start. */
export type WorkerSpawner = (init: WorkerInit, onFailure: (reason: string) => void) => void;

const S = WORKER_SLOTS;
// Expects module, memory, job, work and ctrl (an Int32Array over the control block) in scope.
const SERVE_LOOP = `
const { runJob } = new WebAssembly.Instance(module, { env: { memory } }).exports;
Atomics.store(ctrl, ${S.READY}, 1);
let seen = Atomics.load(ctrl, ${S.SEQ});
for (;;) {
  Atomics.wait(ctrl, ${S.SEQ}, seen);
  const seq = Atomics.load(ctrl, ${S.SEQ});
  if (seq === seen) continue;
  seen = seq;
  if (Atomics.compareExchange(ctrl, ${S.STATE}, seq, -seq) !== seq) continue;
  try {
    Atomics.add(ctrl, ${S.CHUNKS}, runJob(job, work, 1));
  } catch (error) {
    Atomics.store(ctrl, ${S.FAILED}, 1);
  }
  Atomics.store(ctrl, ${S.DONE}, seq);
  Atomics.notify(ctrl, ${S.DONE});
}
`;

// getBuiltinModule rather than require or import: eval'd code is CommonJS or ESM depending on the
// flags the process was started with (--input-type is inherited).
const NODE_WORKER_SOURCE = `
const { workerData } = process.getBuiltinModule('node:worker_threads');
const { module, memory, job, work } = workerData;
const ctrl = new Int32Array(workerData.ctrl);
${SERVE_LOOP}`;

// A Web Worker receives the module and the shared memory in its first message; the loop then owns
// the worker's thread (it never returns to the event loop, so no second message is read).
const WEB_WORKER_SOURCE = `
self.onmessage = (event) => {
  const { module, memory, job, work } = event.data;
  const ctrl = new Int32Array(event.data.ctrl);
  ${SERVE_LOOP}
};`;

interface NodeWorker {
  unref(): void;
  on(event: 'error' | 'exit', listener: (value: unknown) => void): void;
}
type NodeWorkerCtor = new (source: string, options: { eval: true; workerData: unknown }) => NodeWorker;

interface WebWorker {
  postMessage(message: unknown): void;
  addEventListener(type: 'error' | 'messageerror', listener: (event: { message?: string }) => void): void;
}
type WebWorkerCtor = new (url: string, options?: { name?: string }) => WebWorker;

interface BlobHost {
  Blob: new (parts: string[], options: { type: string }) => object;
  URL: { createObjectURL(blob: object): string };
}

/** Node's worker_threads (Node >= 20.16 has process.getBuiltinModule), or null elsewhere. */
export function nodeWorkerSpawner(): WorkerSpawner | null {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const threads = proc?.getBuiltinModule?.('node:worker_threads') as { Worker?: NodeWorkerCtor } | undefined;
  const Worker = threads?.Worker;
  if (!Worker) return null;
  return (init, onFailure) => {
    const worker = new Worker(NODE_WORKER_SOURCE, { eval: true, workerData: init });
    worker.unref(); // never keeps the process alive
    worker.on('error', (error) => onFailure(`the wasm worker failed: ${(error as Error).message}`));
    worker.on('exit', () => onFailure('the wasm worker exited'));
  };
}

/**
 * Whether this thread may block in Atomics.wait: the runner waits for the worker's last chunk, which
 * a browser's main (window) thread is not allowed to do; a Web Worker and Node's threads are.
 */
export function canBlockOnAtomics(): boolean {
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') return false;
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
}

/** Web Workers started from a Blob URL, or null where there are none (or this thread cannot wait for one). */
export function webWorkerSpawner(): WorkerSpawner | null {
  const host = globalThis as unknown as Partial<BlobHost> & { Worker?: WebWorkerCtor };
  const Worker = host.Worker;
  if (!Worker || !host.Blob || !host.URL?.createObjectURL || !canBlockOnAtomics()) return null;
  const { Blob, URL } = host as BlobHost;
  return (init, onFailure) => {
    const url = URL.createObjectURL(new Blob([WEB_WORKER_SOURCE], { type: 'text/javascript' }));
    const worker = new Worker(url, { name: 'qtk-wasm-worker' });
    worker.addEventListener('error', (event) => onFailure(`the wasm worker failed: ${event.message ?? 'error'}`));
    worker.addEventListener('messageerror', () => onFailure('the wasm worker could not receive the shared memory'));
    worker.postMessage(init);
  };
}
