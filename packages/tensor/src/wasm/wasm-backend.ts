import { cpuGemm, type GemmArgs, type GemmKernel } from '../gemm/gemm.js';
import { registerBackend, registerKernel, type Backend } from '../registry.js';
import { wasmApi, type WasmBytes, type WasmMemory } from './wasm-api.js';
import { align64, createArena, type Arena } from './wasm-arena.js';
import { createWasmConv, type ConvExports, type WasmConv } from './wasm-conv.js';
import { orCpu } from './cpu-fallback.js';
import { registerWasmConvKernels } from './wasm-conv-kernels.js';
import { createWasmIntConv, registerWasmIntConvKernel, type WasmIntConv } from './wasm-int-conv.js';
import { createWasmGemm, MAX_WASM_BYTES, runOnThisThread, wasmGemmBytes, type GemmExports } from './wasm-gemm.js';
import { relaxedSimdSupport } from './wasm-features.js';
import type { WasmImports } from './wasm-api.js';
import { fetchWasm, instantiate, loadWasmSync, type WasmLoadResult } from './wasm-loader.js';
import { createWasmPointwise, type PointwiseExports, type WasmPointwise } from './wasm-pointwise.js';
import {
  createWasmFakeQuant,
  registerWasmFakeQuantKernels,
  type FakeQuantExports,
  type WasmFakeQuant,
} from './wasm-fake-quant.js';
import {
  createWasmActivation,
  registerWasmActivationKernels,
  type ActivationExports,
  type WasmActivation,
} from './wasm-activation.js';
import { createWasmMinMax, registerWasmMinMaxKernel, type MinMaxExports, type WasmMinMax } from './wasm-min-max.js';
import {
  createWasmHistogram,
  registerWasmHistogramKernel,
  type HistogramExports,
  type WasmHistogram,
} from './wasm-histogram.js';
import {
  createWasmMaxPool,
  registerWasmMaxPoolKernel,
  type MaxPoolExports,
  type WasmMaxPool,
} from './wasm-max-pool.js';
import {
  createWasmRequantize,
  registerWasmRequantizeKernel,
  type RequantizeExports,
  type WasmRequantize,
} from './wasm-requantize.js';
import { registerWasmPointwiseKernels } from './wasm-pointwise-kernels.js';
import { createThreadedRunner, type SharedGemmExports, type ThreadedRunner } from './wasm-threads.js';
import { canBlockOnAtomics, nodeWorkerSpawner, webWorkerSpawner, type WorkerSpawner } from './wasm-workers.js';
import { wasmBuildUrl, type WasmBuild } from '../wasm-urls.js';

/** Whether the wasm backend is serving kernels, and if not, why. */
export interface WasmStatus {
  loaded: boolean;
  /** Where the binary came from (a file path, or 'bytes' when passed to loadWasmBackend). */
  source?: string;
  /** Why the backend is not loaded (missing file, QTK_BACKEND=cpu, no WebAssembly, ...). */
  reason?: string;
  /** Whether the float kernels use relaxed SIMD's fused multiply-add (the `-relaxed` build), and why or why not. */
  relaxedSimd?: boolean;
  relaxedSimdReason?: string;
  /** 2 when large GEMMs and conv batches are split between this thread and a worker sharing the memory, else 1. */
  threads?: 1 | 2;
  /** Why work runs on one thread (no SharedArrayBuffer, QTK_WASM_THREADS=0, worker not started yet, ...). */
  threadsReason?: string;
  /** Chunks (of a GEMM's C or of a conv batch) the worker thread has computed so far. */
  workerChunks?: number;
  /** Set when a call fell back to the cpu kernel at run time (for example memory could not grow). */
  lastFallback?: string;
}

/** The loaded kernels over one wasm memory. */
interface Engine {
  gemm: GemmKernel;
  conv: WasmConv;
  /** Null on a binary built before ConvInteger (it lacks the intConvImage export). */
  intConv: WasmIntConv | null;
  pointwise: WasmPointwise;
  /** Null on a binary built before RequantizeInt32. */
  requant: WasmRequantize | null;
  /** Null on a binary built before FakeQuantizeSymmetric. */
  fakeQuant: WasmFakeQuant | null;
  /** Null on a binary built before MaxPool. */
  maxPool: WasmMaxPool | null;
  /** Null on a binary built before the Clip / Relu6 / HardSwish / HardSigmoid kernels. */
  activation: WasmActivation | null;
  /** Null on a binary built before ChannelMinMax. */
  minMax: WasmMinMax | null;
  /** Null on a binary built before HistogramCounts. */
  histogram: WasmHistogram | null;
  runner: ThreadedRunner | null;
  source: string;
}

const WASM_MAX_PAGES = 49152; // 3 GiB, the shared memory's declared maximum
const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;

let engine: Engine | null = null;
// The shared-memory engine is built once: reloading reuses it rather than starting another worker.
let sharedEngine: Engine | null = null;
let threadsEnabled = env?.QTK_WASM_THREADS !== '0';
let status: WasmStatus = { loaded: false, reason: 'not loaded yet' };

/** WebAssembly SIMD backend for the hot kernels; preferred over `cpu` whenever its binary loaded. */
export const wasmBackend: Backend = { name: 'wasm', priority: 10, isReady: () => engine !== null };
registerBackend(wasmBackend);

function noteFallback(what: string, error: Error): void {
  status = { ...status, lastFallback: `${what} ran on cpu: ${error.message}` };
}

function runGemm(g: GemmArgs): void {
  orCpu(
    noteFallback,
    'gemm',
    `${g.m}×${g.n}×${g.k}`,
    () => engine!.gemm(g),
    () => cpuGemm(g),
  );
}

registerKernel<GemmKernel>({
  op: 'Gemm',
  backend: 'wasm',
  fn: runGemm,
  accepts: (g: GemmArgs) => wasmGemmBytes(g) <= MAX_WASM_BYTES,
});

registerWasmConvKernels(
  () => engine?.conv ?? null,
  () => (engine?.runner ? 2 : 1),
  noteFallback,
);
registerWasmPointwiseKernels(() => engine?.pointwise ?? null, noteFallback);
registerWasmIntConvKernel(
  () => engine?.intConv ?? null,
  () => (engine?.runner ? 2 : 1),
  noteFallback,
);
registerWasmRequantizeKernel(() => engine?.requant ?? null, noteFallback);
registerWasmFakeQuantKernels(() => engine?.fakeQuant ?? null, noteFallback);
registerWasmMaxPoolKernel(() => engine?.maxPool ?? null, noteFallback);
registerWasmActivationKernels(() => engine?.activation ?? null, noteFallback);
registerWasmMinMaxKernel(() => engine?.minMax ?? null, noteFallback);
registerWasmHistogramKernel(() => engine?.histogram ?? null, noteFallback);

const hasIntConv = (exports: object): boolean =>
  typeof (exports as { intConvImage?: unknown }).intConvImage === 'function';
/** Whether a binary exports `name` (binaries built before a kernel lack it; that kernel then stays on cpu). */
const exportsFn = (exports: object, name: string): boolean =>
  typeof (exports as Record<string, unknown>)[name] === 'function';

/** The kernels every build may or may not export, each null when its export is missing. */
function optionalKernels(
  exports: object,
  arena: Arena,
): Pick<Engine, 'requant' | 'fakeQuant' | 'maxPool' | 'activation' | 'minMax' | 'histogram'> {
  return {
    requant: exportsFn(exports, 'requantizeInt32') ? createWasmRequantize(exports as RequantizeExports, arena) : null,
    fakeQuant: exportsFn(exports, 'fakeQuantizeSymmetric')
      ? createWasmFakeQuant(exports as FakeQuantExports, arena)
      : null,
    maxPool: exportsFn(exports, 'maxPool2d') ? createWasmMaxPool(exports as MaxPoolExports, arena) : null,
    activation: exportsFn(exports, 'activation') ? createWasmActivation(exports as ActivationExports, arena) : null,
    minMax: exportsFn(exports, 'channelMinMax') ? createWasmMinMax(exports as MinMaxExports, arena) : null,
    histogram: exportsFn(exports, 'histogramCounts') ? createWasmHistogram(exports as HistogramExports, arena) : null,
  };
}

/** The way to start the worker thread here, or why there is none. */
function workerSpawner(): WorkerSpawner | { reason: string } {
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') {
    const browser = typeof (globalThis as { window?: unknown; self?: unknown }).self !== 'undefined';
    return {
      reason: browser
        ? 'no SharedArrayBuffer: the page is not cross-origin isolated (serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)'
        : 'no SharedArrayBuffer in this runtime',
    };
  }
  const spawn = nodeWorkerSpawner() ?? webWorkerSpawner();
  if (spawn) return spawn;
  if (typeof (globalThis as { Worker?: unknown }).Worker === 'function' && !canBlockOnAtomics()) {
    return { reason: "a browser's main thread cannot wait for a worker: run QTK inside a Web Worker for two threads" };
  }
  return { reason: 'worker threads need Node >= 20.16 or Web Workers' };
}

function sharedMemory(): WasmMemory | { reason: string } {
  try {
    return new wasmApi!.Memory({ initial: 64, maximum: WASM_MAX_PAGES, shared: true });
  } catch (error) {
    return { reason: `cannot create a shared wasm memory: ${(error as Error).message}` };
  }
}

/** The two-thread engine over an instantiated shared-memory build, or why it cannot be used. */
function threadedEngine(loaded: WasmLoadResult, memory: WasmMemory, spawn: WorkerSpawner): Engine | { reason: string } {
  if (!loaded.ok) return { reason: loaded.reason };
  const exports = loaded.instance.exports as unknown as SharedGemmExports & ConvExports & PointwiseExports;
  if (
    typeof exports.runJob !== 'function' ||
    typeof exports.convRun !== 'function' ||
    typeof exports.jobBytes !== 'function' ||
    typeof exports.bnForward !== 'function'
  ) {
    return { reason: `${loaded.source} does not export runJob, convRun, bnForward and jobBytes; rebuild it` };
  }
  const job = align64(exports.dataStart());
  const mainWork = align64(job + exports.jobBytes());
  const workerWork = align64(mainWork + exports.workBytes());
  const runner = createThreadedRunner({
    module: loaded.module,
    memory,
    exports,
    job,
    mainWork,
    workerWork,
    spawn,
    enabled: threadsEnabled,
  });
  const arena = createArena(memory, align64(workerWork + exports.workBytes()));
  return {
    gemm: createWasmGemm(arena, runner.run),
    conv: createWasmConv({ exports, arena, job, threads: 2, run: runner.runConv }),
    intConv: hasIntConv(exports) ? createWasmIntConv({ arena, job, threads: 2, run: runner.runConv }) : null,
    pointwise: createWasmPointwise(exports, arena),
    ...optionalKernels(exports, arena),
    runner,
    source: loaded.source,
  };
}

/** The shared-memory build with a worker (read synchronously: Node), or why it cannot be used here. */
function loadThreaded(): Engine | { reason: string } {
  const spawn = workerSpawner();
  if (typeof spawn !== 'function') return spawn;
  const memory = sharedMemory();
  if ('reason' in memory) return memory;
  return threadedEngine(loadBuild('gemm-shared', { env: { memory } }), memory, spawn);
}

let relaxed: { ok: boolean; reason: string } | null = null;
/** Why the last load fell back from the relaxed build although the runtime supports it. */
let relaxedFailure: string | undefined;
/** Sources of the relaxed builds loaded (a bundler may rename the files, so the name does not tell). */
const relaxedSources = new Set<string>();

/** wasm/<name>-relaxed.wasm where the runtime compiles relaxed SIMD (and the file exists), else wasm/<name>.wasm. */
function loadBuild(name: string, imports: WasmImports = {}): WasmLoadResult {
  relaxed ??= relaxedSimdSupport(env);
  relaxedFailure = undefined;
  if (relaxed.ok) {
    const fused = loadWasmSync(`${name}-relaxed`, imports);
    if (fused.ok) {
      relaxedSources.add(fused.source);
      return fused;
    }
    relaxedFailure = fused.reason;
  }
  return loadWasmSync(name, imports);
}

const relaxedStatus = (source: string): Pick<WasmStatus, 'relaxedSimd' | 'relaxedSimdReason'> => ({
  relaxedSimd: relaxedSources.has(source),
  ...(relaxedFailure ? { relaxedSimdReason: relaxedFailure } : relaxed ? { relaxedSimdReason: relaxed.reason } : {}),
});

function adopt(result: WasmLoadResult, threadsReason: string): WasmStatus {
  engine = null;
  if (!result.ok) {
    status = { loaded: false, reason: result.reason };
    return status;
  }
  const exports = result.instance.exports as unknown as GemmExports & ConvExports & PointwiseExports;
  if (
    typeof exports.gemm !== 'function' ||
    typeof exports.convRun !== 'function' ||
    typeof exports.bnForward !== 'function' ||
    typeof exports.workBytes !== 'function' ||
    !(exports.memory instanceof wasmApi!.Memory)
  ) {
    status = {
      loaded: false,
      reason: `${result.source} does not export gemm, convRun, bnForward, workBytes and memory; rebuild it`,
    };
    return status;
  }
  const job = align64(exports.dataStart());
  const work = align64(job + exports.jobBytes());
  const arena = createArena(exports.memory, align64(work + exports.workBytes()));
  const runSingle = (_flops: number, _chunks: number, prepare: (shared: boolean) => void): void => {
    prepare(false);
    exports.convRun(job, work);
  };
  engine = {
    gemm: createWasmGemm(arena, runOnThisThread(exports, work)),
    conv: createWasmConv({ exports, arena, job, threads: 1, run: runSingle }),
    intConv: hasIntConv(exports) ? createWasmIntConv({ arena, job, threads: 1, run: runSingle }) : null,
    pointwise: createWasmPointwise(exports, arena),
    ...optionalKernels(exports, arena),
    runner: null,
    source: result.source,
  };
  status = { loaded: true, source: result.source, threads: 1, threadsReason, ...relaxedStatus(result.source) };
  return status;
}

/**
 * (Re)loads the kernels. Without arguments: wasm/gemm-shared.wasm with a worker thread when the
 * runtime allows it, else wasm/gemm.wasm on one thread. With bytes (browsers, bundlers): that
 * binary, on one thread.
 */
export function loadWasmBackend(bytes?: WasmBytes): WasmStatus {
  if (bytes) return adopt(instantiate(bytes, 'bytes'), 'loaded from bytes (one thread)');
  const mt = sharedEngine ?? loadThreaded();
  if ('gemm' in mt) {
    sharedEngine = mt;
    engine = mt;
    mt.runner?.setEnabled(threadsEnabled);
    status = { loaded: true, source: mt.source, ...relaxedStatus(mt.source) };
    return wasmStatus();
  }
  return adopt(loadBuild('gemm'), mt.reason);
}

/** Where initWasmBackend() fetches the binaries from. */
export interface WasmInitOptions {
  /**
   * The URL of each build (wasm/<build>.wasm in the package) when it is not served next to the
   * package's module, for example a bundler that does not copy `new URL(..., import.meta.url)` assets.
   */
  urls?: Partial<Record<WasmBuild, string | URL>>;
}

/** The build fetched: `<name>-relaxed` where relaxed SIMD compiles, else `<name>`. */
async function fetchBuild(
  name: 'gemm' | 'gemm-shared',
  options: WasmInitOptions,
  imports: WasmImports,
): Promise<WasmLoadResult> {
  const url = (build: WasmBuild) => String(options.urls?.[build] ?? wasmBuildUrl(build));
  relaxed ??= relaxedSimdSupport(env);
  relaxedFailure = undefined;
  if (relaxed.ok) {
    const fused = await fetchWasm(url(`${name}-relaxed`), imports);
    if (fused.ok) {
      relaxedSources.add(fused.source);
      return fused;
    }
    relaxedFailure = fused.reason;
  }
  return fetchWasm(url(name), imports);
}

/** How long initWasmBackend() waits for the worker to start; later, it joins when it is ready. */
const WORKER_START_MS = 5000;

/** Starts the worker and waits (without blocking) until it serves, so the first jobs already use two threads. */
async function workerReady(runner: ThreadedRunner): Promise<void> {
  runner.start();
  const deadline = performance.now() + WORKER_START_MS;
  while (!runner.state().ready && runner.state().reason === 'worker starting' && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Loads the kernels where the binaries cannot be read synchronously: in a browser, await this once
 * before the first tensor op (until then ops run on the cpu backend). It fetches the shared-memory
 * build and starts a Web Worker when the page is cross-origin isolated and this code runs in a
 * worker (a window's main thread may not block on Atomics.wait), else the single-thread build.
 * In Node the binaries load at import, and this returns their status.
 */
export async function initWasmBackend(options: WasmInitOptions = {}): Promise<WasmStatus> {
  if (engine || env?.QTK_BACKEND === 'cpu') return wasmStatus();
  const spawn = workerSpawner();
  let threadsReason = typeof spawn === 'function' ? '' : spawn.reason;
  if (typeof spawn === 'function') {
    const memory = sharedMemory();
    if ('reason' in memory) threadsReason = memory.reason;
    else {
      const mt = threadedEngine(await fetchBuild('gemm-shared', options, { env: { memory } }), memory, spawn);
      if ('gemm' in mt) {
        sharedEngine = mt;
        engine = mt;
        status = { loaded: true, source: mt.source, ...relaxedStatus(mt.source) };
        await workerReady(mt.runner!);
        return wasmStatus();
      }
      threadsReason = mt.reason;
    }
  }
  return adopt(await fetchBuild('gemm', options, {}), threadsReason);
}

/** Lets large GEMMs and conv batches use the worker thread, or keeps all work on the calling thread (the default comes from QTK_WASM_THREADS). */
export function setWasmThreads(enabled: boolean): WasmStatus {
  threadsEnabled = enabled;
  engine?.runner?.setEnabled(enabled);
  return wasmStatus();
}

/** Whether the wasm backend loaded, where from, on how many threads, or why not. */
export function wasmStatus(): WasmStatus {
  const runner = engine?.runner;
  if (!runner) return { ...status };
  const t = runner.state();
  return {
    ...status,
    threads: t.ready ? 2 : 1,
    ...(t.reason ? { threadsReason: t.reason } : {}),
    workerChunks: t.workerChunks,
  };
}

if (env?.QTK_BACKEND === 'cpu') {
  status = { loaded: false, reason: 'disabled by QTK_BACKEND=cpu' };
} else {
  loadWasmBackend();
}
