// The single-thread build (wasm/gemm.wasm): the packed SIMD gemm, the per-image convolutions on it
// and the pointwise kernels (batch norm, relu, add).
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
