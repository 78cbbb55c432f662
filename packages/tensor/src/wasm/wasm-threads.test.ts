import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuGemm, type GemmArgs, type GemmKernel } from '../gemm/gemm.js';
import { kernels } from '../registry.js';
import { setWasmThreads, wasmStatus } from './wasm-backend.js';
import { planChunks, THREAD_MIN_FLOPS } from './wasm-threads.js';

const wasmGemm = kernels.kernelOn<GemmKernel>('Gemm', 'wasm')!.fn;

function ints(len: number, seed: number): Float32Array {
  const x = new Float32Array(len);
  let s = seed >>> 0;
  for (let i = 0; i < len; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    x[i] = (s >>> 29) - 4;
  }
  return x;
}

/** A GEMM on small integers (exact in f32) with padded leading dimensions and offsets. */
function problem(
  transA: boolean,
  transB: boolean,
  m: number,
  n: number,
  k: number,
  beta: 0 | 1,
  seed: number,
): GemmArgs {
  const lda = (transA ? m : k) + 3;
  const ldb = (transB ? k : n) + 5;
  const ldc = n + 2;
  return {
    transA,
    transB,
    m,
    n,
    k,
    a: ints(7 + (transA ? k : m) * lda, seed),
    aOffset: 7,
    lda,
    b: ints(2 + (transB ? n : k) * ldb, seed + 1),
    bOffset: 2,
    ldb,
    c: ints(9 + m * ldc, seed + 2),
    cOffset: 9,
    ldc,
    beta,
  };
}

function agreesWithCpu(g: GemmArgs): boolean {
  const ref = { ...g, c: g.c.slice() };
  cpuGemm(ref);
  wasmGemm(g);
  for (let i = 0; i < g.c.length; i++) if (g.c[i] !== ref.c[i]) return false;
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  setWasmThreads(true);
  wasmGemm(problem(false, false, 64, 1024, 64, 0, 1)); // starts the worker
  for (let i = 0; i < 250 && wasmStatus().threads !== 2; i++) await sleep(20);
});

afterAll(() => {
  setWasmThreads(true);
});

describe('planChunks', () => {
  it('covers C with whole panels: columns in multiples of 8, rows in multiples of 4', () => {
    for (const [m, n] of [
      [16, 50176],
      [64, 3136],
      [32, 144],
      [64, 128],
      [5000, 40],
      [1200, 7],
      [9, 17],
    ]) {
      const p = planChunks(m!, n!);
      const extent = p.splitM ? m! : n!;
      expect(p.chunk % (p.splitM ? 4 : 8)).toBe(0);
      expect(p.chunks).toBeGreaterThanOrEqual(2);
      expect(p.chunks).toBeLessThanOrEqual(16);
      expect((p.chunks - 1) * p.chunk).toBeLessThan(extent);
      expect(p.chunks * p.chunk).toBeGreaterThanOrEqual(extent);
    }
    expect(planChunks(5000, 40).splitM).toBe(true);
    expect(planChunks(64, 3136)).toEqual({ splitM: false, chunk: 528, chunks: 6 });
  });
});

describe('wasm gemm on two threads', () => {
  it('started the worker', () => {
    expect(wasmStatus()).toMatchObject({ loaded: true, threads: 2 });
  });

  it('gives exactly the cpu result for every transpose, split by columns and by rows, with offsets and beta', () => {
    let seed = 10;
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        const byCols = problem(transA, transB, 37, 1500, 45, 1, seed++);
        const byRows = problem(transA, transB, 1203, 41, 50, 0, seed++);
        expect(2 * 37 * 1500 * 45).toBeGreaterThan(THREAD_MIN_FLOPS);
        expect(planChunks(1203, 41).splitM).toBe(true);
        expect(agreesWithCpu(byCols)).toBe(true);
        expect(agreesWithCpu(byRows)).toBe(true);
      }
    }
  });

  it('the worker computes chunks of large GEMMs, and none once threads are switched off', () => {
    const g = problem(false, false, 64, 3136, 288, 0, 3);
    const before = wasmStatus().workerChunks!;
    for (let i = 0; i < 40 && wasmStatus().workerChunks === before; i++) wasmGemm(g);
    expect(wasmStatus().workerChunks).toBeGreaterThan(before);

    expect(setWasmThreads(false)).toMatchObject({ threads: 1, threadsReason: expect.stringMatching(/disabled/) });
    const off = wasmStatus().workerChunks;
    for (let i = 0; i < 3; i++) expect(agreesWithCpu(problem(true, false, 64, 3136, 40, 1, 20 + i))).toBe(true);
    expect(wasmStatus().workerChunks).toBe(off);
    setWasmThreads(true);
    expect(wasmStatus().threads).toBe(2);
  });

  it('does not keep a process alive once its work is done', () => {
    const dir = mkdtempSync(join(tmpdir(), 'qtk-wasm-exit-'));
    const index = fileURLToPath(new URL('../index.ts', import.meta.url));
    const script = join(dir, 'run.mts');
    writeFileSync(
      script,
      `import { gemm, gemmArgs, wasmStatus } from ${JSON.stringify(index)};
const m = 64, n = 3136, k = 288;
const g = gemmArgs(false, false, m, n, k, new Float32Array(m * k).fill(1), new Float32Array(k * n).fill(1), new Float32Array(m * n));
gemm(g);
await new Promise((r) => setTimeout(r, 300));
for (let i = 0; i < 5; i++) gemm(g);
console.log(JSON.stringify({ threads: wasmStatus().threads, c: g.c[n + 5] }));
`,
    );
    try {
      const t0 = Date.now();
      const out = execFileSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 30_000 });
      expect(JSON.parse(out.trim())).toEqual({ threads: 2, c: 288 });
      expect(Date.now() - t0).toBeLessThan(30_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
