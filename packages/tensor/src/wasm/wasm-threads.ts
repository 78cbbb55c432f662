import type { WasmMemory, WasmModule } from './wasm-api.js';
import { runOnThisThread, type GemmExports, type StagedGemm, type StagedRunner } from './wasm-gemm.js';
import { WORKER_SLOTS, type WorkerSpawner } from './wasm-workers.js';

// Two threads over one wasm memory: the main thread and one worker take chunks of a job (column or
// row blocks of a GEMM's C, or groups of images of a convolution) from an atomic counter inside
// the job descriptor (assembly/gemm-shared.ts), so a core busy with something else simply takes
// fewer chunks. The caller stays synchronous: it computes chunks itself, then waits
// (Atomics.wait) for the worker's last one.

/** What assembly/gemm-shared.ts exports on top of the plain kernel. */
export interface SharedGemmExports extends GemmExports {
  jobBytes(): number;
  gemmChunks(job: number, work: number): number;
  /** The worker's entry: its share of the job at `job`, whatever its kind; thread 1 picks the worker's conv scratch. */
  runJob(job: number, work: number, thread: number): number;
  convRun(job: number, work: number): void;
}

/** Slots of the Int32Array control block shared with the worker (the worker's loop reads the same numbers). */
const SEQ = WORKER_SLOTS.SEQ;
const STATE = WORKER_SLOTS.STATE;
const DONE = WORKER_SLOTS.DONE;
const READY = WORKER_SLOTS.READY;
const FAILED = WORKER_SLOTS.FAILED;
const CHUNKS = WORKER_SLOTS.CHUNKS;
const SLOTS = WORKER_SLOTS.COUNT;

/** Below this many flops a job stays on one thread: waking the worker costs tens of µs. */
export const THREAD_MIN_FLOPS = 1 << 22;

export interface ThreadedRunner {
  run: StagedRunner;
  /**
   * Runs the conv job the caller wrote at the job address (its chunk counter at 0): shared with the
   * worker when it is serving and the job is large enough, else on this thread alone. `prepare`
   * stages the inputs on this thread before any chunk runs (prepare(true) when the job is shared).
   */
  runConv(flops: number, chunks: number, prepare: (shared: boolean) => void): void;
  /** Starts the worker now rather than on the first large job (when enabled); it serves once state().ready. */
  start(): void;
  /** Off: every GEMM runs on the calling thread (the worker, if started, stays idle). */
  setEnabled(enabled: boolean): void;
  /** Whether the worker is serving, and if not, why; how many chunks it computed so far. */
  state(): { ready: boolean; reason?: string; workerChunks: number };
}

/** Splits the larger side of C into chunks: columns in multiples of 8 (the panel width), rows in multiples of 4. */
export function planChunks(m: number, n: number): { splitM: boolean; chunk: number; chunks: number } {
  const splitM = m > 4 * n;
  const extent = splitM ? m : n;
  const unit = splitM ? 4 : 8;
  const target = Math.min(16, Math.max(2, Math.floor(extent / 512)));
  const chunk = Math.ceil(extent / target / unit) * unit;
  return { splitM, chunk, chunks: Math.ceil(extent / chunk) };
}

/**
 * Builds the two-thread runner over a shared memory. The worker is spawned on the first GEMM big
 * enough to share and is unref'ed, so it never keeps the process alive; until it reports ready
 * (and after any failure) calls run on this thread alone.
 */
export function createThreadedRunner(opts: {
  module: WasmModule;
  memory: WasmMemory;
  exports: SharedGemmExports;
  /** Byte address of the job descriptor (jobBytes() long), shared by gemm and conv jobs. */
  job: number;
  mainWork: number;
  workerWork: number;
  /** Starts the worker thread (a Node worker_threads Worker, or a Web Worker in browsers). */
  spawn: WorkerSpawner;
  enabled: boolean;
}): ThreadedRunner {
  const { exports, job } = opts;
  const single = runOnThisThread(exports, opts.mainWork);
  const ctrl = new Int32Array(new SharedArrayBuffer(SLOTS * 4));
  // A shared memory never detaches its buffer, so this view of the low job area stays valid.
  const desc = new Int32Array(opts.memory.buffer, job, 17);
  let enabled = opts.enabled;
  let spawned = false;
  let broken: string | undefined;
  let seq = 0;

  function spawn(): void {
    spawned = true;
    try {
      opts.spawn(
        {
          module: opts.module,
          memory: opts.memory,
          ctrl: ctrl.buffer as SharedArrayBuffer,
          job,
          work: opts.workerWork,
        },
        (reason) => {
          broken ??= reason;
        },
      );
    } catch (error) {
      broken = `cannot start a worker thread: ${(error as Error).message}`;
    }
  }

  /** Whether a job of this size goes to both threads; starts the worker on the first one that would. */
  function canShare(flops: number): boolean {
    if (!enabled || broken || flops < THREAD_MIN_FLOPS) return false;
    if (!spawned) spawn();
    return !broken && Atomics.load(ctrl, READY) === 1;
  }

  /** Runs the job written in the descriptor on both threads. */
  function share(what: string): void {
    ctrl[FAILED] = 0;
    seq = seq >= 0x3fffffff ? 1 : seq + 1;
    Atomics.store(ctrl, STATE, seq);
    Atomics.store(ctrl, SEQ, seq);
    Atomics.notify(ctrl, SEQ);
    exports.runJob(job, opts.mainWork, 0);

    // A worker that has not woken yet is shut out of this job; one that joined is waited for.
    if (Atomics.compareExchange(ctrl, STATE, seq, 0) !== seq) {
      for (let done = Atomics.load(ctrl, DONE); done !== seq; done = Atomics.load(ctrl, DONE)) {
        Atomics.wait(ctrl, DONE, done);
      }
    }
    if (ctrl[FAILED]) {
      broken = 'the wasm worker threw; jobs run on one thread from now on';
      throw new Error(`wasm ${what} failed in the worker thread`);
    }
  }

  function run(g: StagedGemm): void {
    if ((g.m < 8 && g.n < 16) || !canShare(2 * g.m * g.n * g.k)) {
      single(g);
      return;
    }
    const plan = planChunks(g.m, g.n);
    desc.set([
      0,
      0,
      g.transA ? 1 : 0,
      g.transB ? 1 : 0,
      g.m,
      g.n,
      g.k,
      g.a,
      g.lda,
      g.b,
      g.ldb,
      g.c,
      g.ldc,
      g.beta,
      plan.splitM ? 1 : 0,
      plan.chunk,
      plan.chunks,
    ]);
    share(`gemm ${g.m}×${g.n}×${g.k}`);
  }

  function runConv(flops: number, chunks: number, prepare: (shared: boolean) => void): void {
    if (chunks < 2 || !canShare(flops)) {
      prepare(false);
      exports.convRun(job, opts.mainWork);
      return;
    }
    // Stage every image before waking the worker. Overlapping the copy with the worker's chunks
    // (the worker waits on the staged count) gave wrong convolution gradients when the machine was
    // busy: under load, chunks the worker computed while images were still being copied came out
    // wrong (bench/conv-threads-stress.ts reproduces it). Until that race is understood, no overlap.
    prepare(true);
    share('conv');
  }

  return {
    run,
    runConv,
    start: () => {
      if (enabled && !spawned) spawn();
    },
    setEnabled: (on) => {
      enabled = on;
    },
    state: () => {
      const ready = enabled && !broken && Atomics.load(ctrl, READY) === 1;
      const reason = !enabled
        ? 'disabled (QTK_WASM_THREADS=0 or setWasmThreads(false))'
        : (broken ??
          (!spawned
            ? 'worker not started yet (starts on the first large gemm)'
            : ready
              ? undefined
              : 'worker starting'));
      return { ready, ...(reason ? { reason } : {}), workerChunks: Atomics.load(ctrl, CHUNKS) };
    },
  };
}
