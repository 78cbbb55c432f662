import { InvalidArgumentError } from '../errors.js';
import type { GemmArgs, GemmKernel } from '../gemm/gemm.js';
import type { WasmMemory } from './wasm-api.js';
import { align64, type Arena } from './wasm-arena.js';

/** What assembly/gemm.ts exports (gemm-shared.ts too, with an imported shared memory). */
export interface GemmExports {
  memory: WasmMemory;
  dataStart(): number;
  workBytes(): number;
  gemm(
    transA: number,
    transB: number,
    m: number,
    n: number,
    k: number,
    a: number,
    lda: number,
    b: number,
    ldb: number,
    c: number,
    ldc: number,
    beta: number,
    work: number,
  ): void;
}

/** A GEMM whose operands are already in linear memory: byte addresses, leading dimensions in elements. */
export interface StagedGemm {
  transA: boolean;
  transB: boolean;
  m: number;
  n: number;
  k: number;
  a: number;
  lda: number;
  b: number;
  ldb: number;
  c: number;
  ldc: number;
  beta: 0 | 1;
}

/** Runs a staged GEMM (on this thread, or split across threads). */
export type StagedRunner = (g: StagedGemm) => void;

/** Runs a staged GEMM on this thread with the scratch area at `work`. */
export function runOnThisThread(exports: GemmExports, work: number): StagedRunner {
  return (g) =>
    exports.gemm(g.transA ? 1 : 0, g.transB ? 1 : 0, g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, g.c, g.ldc, g.beta, work);
}

/** wasm32 memory stops at 4 GiB; stay well inside it. */
export const MAX_WASM_BYTES = 3 * 1024 ** 3;

/** How a stored rows×cols matrix is laid out in wasm memory: its leading dimension and element count. */
interface Staging {
  ld: number;
  len: number;
  compact: boolean;
}

/** Copy the strided span as is when the gaps between rows are small, otherwise row by row. */
function staging(rows: number, cols: number, ld: number): Staging {
  if (rows === 0 || cols === 0) return { ld: Math.max(ld, 1), len: 0, compact: false };
  const dense = rows * cols;
  const span = (rows - 1) * ld + cols;
  if (ld === cols || span <= dense * 1.25) return { ld, len: span, compact: false };
  return { ld: cols, len: dense, compact: true };
}

function checkOperand(name: string, arr: Float32Array, offset: number, rows: number, cols: number, ld: number): void {
  if (rows === 0 || cols === 0) return;
  if (ld < cols) {
    throw new InvalidArgumentError(
      `gemm: ld${name} = ${ld} is less than the ${cols} columns ${name} stores; pass ld${name} >= ${cols}`,
    );
  }
  const end = offset + (rows - 1) * ld + cols;
  if (offset < 0 || end > arr.length) {
    throw new InvalidArgumentError(
      `gemm: operand ${name} needs elements ${offset}..${end - 1} (${rows}×${cols}, ld ${ld}) but has length ${arr.length}`,
    );
  }
}

/** Bytes of wasm memory one call needs (for `accepts` to turn away what cannot fit). */
export function wasmGemmBytes(g: GemmArgs): number {
  const a = staging(g.transA ? g.k : g.m, g.transA ? g.m : g.k, g.lda);
  const b = staging(g.transB ? g.n : g.k, g.transB ? g.k : g.n, g.ldb);
  return (a.len + b.len + g.m * g.n) * 4 + 256;
}

/**
 * A GemmKernel over wasm memory. Operands are copied into the arena, `run` computes, and the m×n
 * result is copied back into c.
 */
export function createWasmGemm(arena: Arena, run: StagedRunner): GemmKernel {
  const base = arena.base;
  let heap = arena.heap();

  function reserve(bytes: number): void {
    heap = arena.reserve(bytes);
  }

  function copyIn(
    src: Float32Array,
    offset: number,
    rows: number,
    cols: number,
    ld: number,
    s: Staging,
    ptr: number,
  ): void {
    const at = ptr >>> 2;
    if (!s.compact) {
      heap.set(src.subarray(offset, offset + s.len), at);
      return;
    }
    for (let r = 0; r < rows; r++) heap.set(src.subarray(offset + r * ld, offset + r * ld + cols), at + r * cols);
  }

  return (g: GemmArgs): void => {
    const { m, n, k, transA, transB } = g;
    const aRows = transA ? k : m;
    const aCols = transA ? m : k;
    const bRows = transB ? n : k;
    const bCols = transB ? k : n;
    checkOperand('a', g.a, g.aOffset, aRows, aCols, g.lda);
    checkOperand('b', g.b, g.bOffset, bRows, bCols, g.ldb);
    checkOperand('c', g.c, g.cOffset, m, n, g.ldc);
    if (m === 0 || n === 0) return;

    const sa = staging(aRows, aCols, g.lda);
    const sb = staging(bRows, bCols, g.ldb);
    const cDense = g.ldc === n;
    const aPtr = base;
    const bPtr = align64(aPtr + sa.len * 4);
    const cPtr = align64(bPtr + sb.len * 4);
    reserve(cPtr + m * n * 4 - base);

    copyIn(g.a, g.aOffset, aRows, aCols, g.lda, sa, aPtr);
    copyIn(g.b, g.bOffset, bRows, bCols, g.ldb, sb, bPtr);
    const c0 = cPtr >>> 2;
    if (g.beta === 1) {
      if (cDense) heap.set(g.c.subarray(g.cOffset, g.cOffset + m * n), c0);
      else
        for (let i = 0; i < m; i++)
          heap.set(g.c.subarray(g.cOffset + i * g.ldc, g.cOffset + i * g.ldc + n), c0 + i * n);
    }

    run({ transA, transB, m, n, k, a: aPtr, lda: sa.ld, b: bPtr, ldb: sb.ld, c: cPtr, ldc: n, beta: g.beta });

    if (cDense) g.c.set(heap.subarray(c0, c0 + m * n), g.cOffset);
    else for (let i = 0; i < m; i++) g.c.set(heap.subarray(c0 + i * n, c0 + (i + 1) * n), g.cOffset + i * g.ldc);
  };
}
