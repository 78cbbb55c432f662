// The kernels built against an imported shared memory (see scripts/build-wasm.mjs), plus the chunk
// loops that let several threads share one GEMM or one batch of convolutions. A job descriptor
// starts with the atomic chunk counter and the job kind (0: gemm, else a conv kind from _conv.ts).
import { gemm } from './_gemm';
import { CONV_CHUNK, CONV_CHUNKS, CONV_N, CONV_STAGED, convChunk, JOB_KIND, JOB_NEXT } from './_conv';

export { dataStart, workBytes, gemm } from './_gemm';
export { jobBytes, convRun, sumPartials, convPackWeights, convPackedWeightBytes } from './_conv';
export { intConvImage } from './_int-conv';
export { requantizeInt32 } from './_requantize';
export { fakeQuantizeSymmetric } from './_fake-quant';
export { maxPool2d } from './_max-pool';
export { activation } from './_activation';
export { channelMinMax } from './_min-max';
export { histogramCounts } from './_histogram';
export { bnForward, bnBackward, relu, reluBackward, addSame } from './_pointwise';

// Gemm job fields (i32) after the common header.
// @ts-ignore: decorator
@inline const TRANS_A: usize = 8;
// @ts-ignore: decorator
@inline const TRANS_B: usize = 12;
// @ts-ignore: decorator
@inline const M: usize = 16;
// @ts-ignore: decorator
@inline const N: usize = 20;
// @ts-ignore: decorator
@inline const K: usize = 24;
// @ts-ignore: decorator
@inline const A: usize = 28;
// @ts-ignore: decorator
@inline const LDA: usize = 32;
// @ts-ignore: decorator
@inline const B: usize = 36;
// @ts-ignore: decorator
@inline const LDB: usize = 40;
// @ts-ignore: decorator
@inline const C: usize = 44;
// @ts-ignore: decorator
@inline const LDC: usize = 48;
// @ts-ignore: decorator
@inline const BETA: usize = 52;
// @ts-ignore: decorator
@inline const SPLIT_M: usize = 56;
// @ts-ignore: decorator
@inline const CHUNK: usize = 60;
// @ts-ignore: decorator
@inline const CHUNKS: usize = 64;

/**
 * Takes chunks of the job at `job` (column blocks of C, or row blocks when SPLIT_M is set) from its
 * atomic NEXT counter until none is left, computing each with the scratch area at `work`.
 * Returns how many chunks this caller computed.
 */
export function gemmChunks(job: usize, work: usize): i32 {
  const transA = load<i32>(job, TRANS_A);
  const transB = load<i32>(job, TRANS_B);
  const m = load<i32>(job, M);
  const n = load<i32>(job, N);
  const k = load<i32>(job, K);
  const a = load<usize>(job, A);
  const lda = load<i32>(job, LDA);
  const b = load<usize>(job, B);
  const ldb = load<i32>(job, LDB);
  const c = load<usize>(job, C);
  const ldc = load<i32>(job, LDC);
  const beta = load<i32>(job, BETA);
  const splitM = load<i32>(job, SPLIT_M) != 0;
  const chunk = load<i32>(job, CHUNK);
  const chunks = load<i32>(job, CHUNKS);
  let done = 0;
  for (let i = atomic.add<i32>(job + JOB_NEXT, 1); i < chunks; i = atomic.add<i32>(job + JOB_NEXT, 1)) {
    const start = i * chunk;
    if (splitM) {
      const rows = min(chunk, m - start);
      const ai = a + ((transA ? <usize>start : <usize>start * lda) << 2);
      gemm(transA, transB, rows, n, k, ai, lda, b, ldb, c + ((<usize>start * ldc) << 2), ldc, beta, work);
    } else {
      const cols = min(chunk, n - start);
      const bj = b + ((transB ? <usize>start * ldb : <usize>start) << 2);
      gemm(transA, transB, m, cols, k, a, lda, bj, ldb, c + (<usize>start << 2), ldc, beta, work);
    }
    done++;
  }
  return done;
}

/**
 * Takes chunks of the conv job at `job` until none is left; `thread` picks this thread's scratch.
 * The host may still be copying images in while the worker starts: a chunk waits until its
 * images are staged (only the worker ever waits, the host stages everything before joining).
 */
export function convChunks(job: usize, work: usize, thread: i32): i32 {
  const chunks = load<i32>(job + CONV_CHUNKS);
  const chunk = load<i32>(job + CONV_CHUNK);
  const n = load<i32>(job + CONV_N);
  let done = 0;
  for (let i = atomic.add<i32>(job + JOB_NEXT, 1); i < chunks; i = atomic.add<i32>(job + JOB_NEXT, 1)) {
    const need = min(n, (i + 1) * chunk);
    for (let staged = atomic.load<i32>(job + CONV_STAGED); staged < need; staged = atomic.load<i32>(job + CONV_STAGED)) {
      atomic.wait<i32>(job + CONV_STAGED, staged);
    }
    convChunk(job, i, work, thread);
    done++;
  }
  return done;
}

/** The worker's entry: runs its share of whichever job is in the descriptor. */
export function runJob(job: usize, work: usize, thread: i32): i32 {
  return load<i32>(job + JOB_KIND) == 0 ? gemmChunks(job, work) : convChunks(job, work, thread);
}
