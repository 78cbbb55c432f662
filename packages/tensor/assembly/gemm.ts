// The single-thread build (wasm/gemm.wasm): the packed SIMD gemm and the per-image convolutions on it.
export { dataStart, workBytes, gemm } from './_gemm';
export { jobBytes, convRun, sumPartials } from './_conv';
