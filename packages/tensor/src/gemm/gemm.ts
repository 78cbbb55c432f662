import { kernels, registerKernel } from '../registry.js';

/**
 * Row-major single-precision GEMM: C = op(A)·op(B) + beta·C, with op(X) = Xᵀ when trans is set.
 * A is m×k after op, B is k×n after op, C is m×n; lda/ldb/ldc are row strides of the stored
 * matrices. beta is 0 (overwrite) or 1 (accumulate).
 */
export interface GemmArgs {
  transA: boolean;
  transB: boolean;
  m: number;
  n: number;
  k: number;
  a: Float32Array;
  aOffset: number;
  lda: number;
  b: Float32Array;
  bOffset: number;
  ldb: number;
  c: Float32Array;
  cOffset: number;
  ldc: number;
  beta: 0 | 1;
}

export type GemmKernel = (args: GemmArgs) => void;

/** Fills in default offsets and leading dimensions for dense operands. */
export function gemmArgs(
  transA: boolean,
  transB: boolean,
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  beta: 0 | 1 = 0,
  offsets: { a?: number; b?: number; c?: number } = {},
): GemmArgs {
  return {
    transA,
    transB,
    m,
    n,
    k,
    a,
    aOffset: offsets.a ?? 0,
    lda: transA ? m : k,
    b,
    bOffset: offsets.b ?? 0,
    ldb: transB ? k : n,
    c,
    cOffset: offsets.c ?? 0,
    ldc: n,
    beta,
  };
}

/** Reference GEMM in TypeScript: B is packed into row-major k×n so the inner loop is a unit-stride axpy. */
export const cpuGemm: GemmKernel = (g) => {
  const { m, n, k, c, cOffset, ldc } = g;
  if (g.beta === 0) {
    for (let i = 0; i < m; i++) c.fill(0, cOffset + i * ldc, cOffset + i * ldc + n);
  }
  if (m === 0 || n === 0 || k === 0) return;
  let bp: Float32Array;
  let bOff: number;
  let ldb: number;
  if (g.transB) {
    bp = new Float32Array(k * n);
    for (let j = 0; j < n; j++) for (let p = 0; p < k; p++) bp[p * n + j] = g.b[g.bOffset + j * g.ldb + p]!;
    bOff = 0;
    ldb = n;
  } else {
    bp = g.b;
    bOff = g.bOffset;
    ldb = g.ldb;
  }
  const a = g.a;
  for (let i = 0; i < m; i++) {
    const ci = cOffset + i * ldc;
    for (let p = 0; p < k; p++) {
      const av = g.transA ? a[g.aOffset + p * g.lda + i]! : a[g.aOffset + i * g.lda + p]!;
      if (av === 0) continue;
      const bo = bOff + p * ldb;
      for (let j = 0; j < n; j++) c[ci + j]! += av * bp[bo + j]!;
    }
  }
};

registerKernel<GemmKernel>({ op: 'Gemm', backend: 'cpu', fn: cpuGemm });

/** Runs the best registered GEMM kernel (wasm SIMD when loaded, else the TypeScript one). */
export function gemm(args: GemmArgs): void {
  kernels.resolve<GemmKernel>('Gemm', args).fn(args);
}

/** Element strides between consecutive products' A, B and C in gemmBatch. */
export interface GemmStrides {
  a: number;
  b: number;
  c: number;
}

/**
 * `count` independent products shaped as `args` laid out one after another (a batched matmul, the
 * groups of a convolution): product i reads A and B and writes C at i·stride elements past args' offsets.
 */
export function gemmBatch(count: number, args: GemmArgs, stride: GemmStrides): void {
  for (let i = 0; i < count; i++) {
    gemm({
      ...args,
      aOffset: args.aOffset + i * stride.a,
      bOffset: args.bOffset + i * stride.b,
      cOffset: args.cOffset + i * stride.c,
    });
  }
}
