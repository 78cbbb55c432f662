import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { cpuGemm, gemmArgs, type GemmArgs, type GemmKernel } from '../gemm/gemm.js';
import { kernels } from '../registry.js';
import './wasm-backend.js';
import { wasmStatus } from './wasm-backend.js';

const wasmGemm = kernels.kernelOn<GemmKernel>('Gemm', 'wasm')!.fn;

/** Deterministic values; integers keep every partial sum exact so wasm and cpu must agree bit for bit. */
function values(len: number, seed: number, integer: boolean): Float32Array {
  const x = new Float32Array(len);
  let s = seed >>> 0;
  for (let i = 0; i < len; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    x[i] = integer ? (s >>> 29) - 4 : s / 2 ** 32 - 0.5;
  }
  return x;
}

interface Case {
  transA: boolean;
  transB: boolean;
  m: number;
  n: number;
  k: number;
  /** Extra elements per row beyond the stored width (ld = width + pad). */
  pad?: { a?: number; b?: number; c?: number };
  offset?: { a?: number; b?: number; c?: number };
  beta?: 0 | 1;
  integer?: boolean;
}

/** Builds the same arguments twice (separate C arrays) with sentinels around every operand. */
function build(t: Case, seed: number): { wasm: GemmArgs; cpu: GemmArgs } {
  const { m, n, k, transA, transB } = t;
  const integer = t.integer ?? true;
  const aCols = transA ? m : k;
  const bCols = transB ? k : n;
  const lda = aCols + (t.pad?.a ?? 0);
  const ldb = bCols + (t.pad?.b ?? 0);
  const ldc = n + (t.pad?.c ?? 0);
  const oa = t.offset?.a ?? 0;
  const ob = t.offset?.b ?? 0;
  const oc = t.offset?.c ?? 0;
  const a = values(oa + (transA ? k : m) * lda + 3, seed, integer);
  const b = values(ob + (transB ? n : k) * ldb + 3, seed + 1, integer);
  const c = values(oc + m * ldc + 3, seed + 2, integer);
  const mk = (cArr: Float32Array): GemmArgs => ({
    transA,
    transB,
    m,
    n,
    k,
    a,
    aOffset: oa,
    lda,
    b,
    bOffset: ob,
    ldb,
    c: cArr,
    cOffset: oc,
    ldc,
    beta: t.beta ?? 0,
  });
  return { wasm: mk(c.slice()), cpu: mk(c.slice()) };
}

/** Independent float64 reference of op(A)·op(B) + beta·C over the valid region. */
function reference(g: GemmArgs): Float64Array {
  const out = new Float64Array(g.m * g.n);
  for (let i = 0; i < g.m; i++) {
    for (let j = 0; j < g.n; j++) {
      let s = g.beta === 1 ? g.c[g.cOffset + i * g.ldc + j]! : 0;
      for (let p = 0; p < g.k; p++) {
        const av = g.transA ? g.a[g.aOffset + p * g.lda + i]! : g.a[g.aOffset + i * g.lda + p]!;
        const bv = g.transB ? g.b[g.bOffset + j * g.ldb + p]! : g.b[g.bOffset + p * g.ldb + j]!;
        s += av * bv;
      }
      out[i * g.n + j] = s;
    }
  }
  return out;
}

function firstDifference(x: Float32Array, y: Float32Array): number {
  expect(x.length).toBe(y.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

function checkCase(t: Case, seed = 7): void {
  const { wasm, cpu } = build(t, seed);
  const before = wasm.c.slice();
  wasmGemm(wasm);
  cpuGemm(cpu);
  // Same values everywhere, including the untouched gaps and sentinels outside C's m×n window.
  if (t.integer ?? true) {
    expect(firstDifference(wasm.c, cpu.c)).toBe(-1);
    const ref = reference({ ...wasm, c: before });
    let wrong = 0;
    for (let i = 0; i < t.m; i++) {
      for (let j = 0; j < t.n; j++) if (wasm.c[wasm.cOffset + i * wasm.ldc + j] !== ref[i * t.n + j]) wrong++;
    }
    expect(wrong).toBe(0);
  } else {
    let worst = 0;
    for (let i = 0; i < wasm.c.length; i++) worst = Math.max(worst, Math.abs(wasm.c[i]! - cpu.c[i]!));
    expect(worst).toBeLessThan(2e-6 * Math.sqrt(t.k) + 1e-7);
  }
}

const TRANS: [boolean, boolean][] = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
];
const label = ([ta, tb]: [boolean, boolean]) => `${ta ? 'T' : 'N'}${tb ? 'T' : 'N'}`;

describe('wasm gemm against cpuGemm', () => {
  it('loaded the binary', () => {
    expect(wasmStatus()).toMatchObject({ loaded: true });
  });

  for (const tr of TRANS) {
    const [transA, transB] = tr;
    it(`${label(tr)}: tiny and odd sizes (m, n, k from 1 to 13)`, () => {
      for (const [m, n, k] of [
        [1, 1, 1],
        [1, 9, 1],
        [5, 1, 3],
        [2, 3, 4],
        [4, 8, 4],
        [3, 7, 5],
        [5, 9, 13],
        [13, 6, 11],
        [8, 16, 9],
      ]) {
        checkCase({ transA, transB, m: m!, n: n!, k: k! });
      }
    });

    it(`${label(tr)}: several k blocks, edge panels, beta = 1`, () => {
      checkCase({ transA, transB, m: 19, n: 45, k: 517, beta: 1 });
      checkCase({ transA, transB, m: 37, n: 70, k: 259 });
    });

    it(`${label(tr)}: offsets and leading dimensions (span copy and row-by-row copy)`, () => {
      checkCase({
        transA,
        transB,
        m: 11,
        n: 21,
        k: 14,
        pad: { a: 1, b: 2, c: 1 },
        offset: { a: 5, b: 3, c: 7 },
        beta: 1,
      });
      checkCase({ transA, transB, m: 6, n: 10, k: 9, pad: { a: 40, b: 33, c: 25 }, offset: { a: 2, b: 1, c: 4 } });
      checkCase({ transA, transB, m: 9, n: 12, k: 5, pad: { c: 30 }, offset: { c: 11 }, beta: 1 });
    });

    it(`${label(tr)}: random floats agree within rounding`, () => {
      checkCase({ transA, transB, m: 23, n: 57, k: 300, integer: false, beta: 1 });
    });
  }

  it('crosses the M and N block sizes (m > 128, n > 2048)', () => {
    checkCase({ transA: false, transB: false, m: 133, n: 2053, k: 6 });
    checkCase({ transA: true, transB: true, m: 130, n: 2050, k: 5, beta: 1 });
  });

  it('k = 0 clears C for beta = 0 and keeps it for beta = 1; m = 0 or n = 0 is a no-op', () => {
    const c = new Float32Array([1, 2, 3, 4, 5, 6]);
    wasmGemm(gemmArgs(false, false, 2, 3, 0, new Float32Array(0), new Float32Array(0), c, 1));
    expect(Array.from(c)).toEqual([1, 2, 3, 4, 5, 6]);
    wasmGemm(gemmArgs(false, false, 2, 3, 0, new Float32Array(0), new Float32Array(0), c, 0));
    expect(Array.from(c)).toEqual([0, 0, 0, 0, 0, 0]);
    const d = new Float32Array([9]);
    wasmGemm(gemmArgs(false, false, 0, 1, 4, new Float32Array(0), new Float32Array(4), d));
    wasmGemm(gemmArgs(false, false, 1, 0, 4, new Float32Array(4), new Float32Array(0), d));
    expect(d[0]).toBe(9);
  });

  it('reuses and grows its memory across calls of different sizes', () => {
    checkCase({ transA: false, transB: false, m: 40, n: 2100, k: 150, integer: false }, 1);
    checkCase({ transA: false, transB: true, m: 3, n: 5, k: 7 }, 2);
    checkCase({ transA: true, transB: false, m: 150, n: 2500, k: 40 }, 3);
    checkCase({ transA: true, transB: true, m: 2, n: 2, k: 2 }, 4);
  });

  it('rejects operands too short for their shape', () => {
    const g = gemmArgs(false, false, 2, 2, 2, new Float32Array(3), new Float32Array(4), new Float32Array(4));
    expect(() => wasmGemm(g)).toThrow(InvalidArgumentError);
    expect(() => wasmGemm(g)).toThrow(/operand a needs elements 0\.\.3/);
    expect(() => wasmGemm({ ...g, a: new Float32Array(4), lda: 1 })).toThrow(/lda = 1/);
  });
});
