export { QtkError, ShapeError, DTypeError, InvalidArgumentError, KernelNotFoundError, AutogradError } from './errors.js';
export { type DType, type TypedArray, DTYPES, dtypeRange, allocate, isFloating } from './dtype.js';
export { type Shape, sizeOf, broadcastShapes, contiguousStrides, shapesEqual, normalizeAxis, normalizeAxes } from './shape.js';
export { Tensor, type TensorInit } from './tensor.js';
export {
  kernels,
  registerBackend,
  registerKernel,
  type Backend,
  type KernelSpec,
  type TensorKernel,
  type Saved,
  type KernelRegistry,
} from './registry.js';
export {
  registerGradient,
  getGradient,
  noGrad,
  isGradEnabled,
  setGradEnabled,
  backward,
  GradNode,
  type GradContext,
  type GradientFn,
  type BackwardOptions,
} from './autograd.js';
export { runOp, run1 } from './dispatch.js';
export { Generator, defaultGenerator, manualSeed } from './random.js';
export {
  tensor,
  scalar,
  full,
  zeros,
  ones,
  zerosLike,
  onesLike,
  arange,
  rand,
  randn,
  randint,
  type CreateOptions,
  type RandomOptions,
} from './creation.js';
export { cpuBackend } from './backends.js';
export { gemm, gemmArgs, cpuGemm, type GemmArgs, type GemmKernel } from './gemm/gemm.js';
export { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge, broadcastBinary } from './ops/binary.js';
export { defineUnary, neg, exp, log, sqrt, rsqrt, reciprocal, abs, relu, toType, type UnaryDefinition } from './ops/unary.js';
export { sum, mean, sumToShape, reducedShape } from './ops/reduce.js';
export { reshape, permute, transpose, expand, contiguous } from './ops/view.js';
export { matmul, linear } from './ops/matmul.js';
import './tensor-methods.js';
export { gradcheck, type GradcheckOptions, type GradcheckMismatch } from './testing/gradcheck.js';
import './wasm/wasm-backend.js';
export { wasmBackend, wasmStatus, loadWasmBackend, type WasmStatus } from './wasm/wasm-backend.js';
export { conv1d, conv2d, conv3d, type ConvOptions, type ConvAttrs } from './ops/conv.js';
export { convTranspose1d, convTranspose2d, type ConvTransposeOptions, type ConvTransposeAttrs } from './ops/conv-transpose.js';
export {
  clamp, relu6, leakyRelu, prelu, elu, selu, sigmoid, tanh, silu, gelu, erfc, hardsigmoid, hardswish, softplus, round, floor, sign,
  type GeluApproximate,
} from './ops/activations.js';
export { where } from './ops/where.js';
export { softmax, logSoftmax } from './ops/softmax.js';
export { crossEntropy, mseLoss, l1Loss, type CrossEntropyOptions, type Reduction } from './ops/cross-entropy.js';
export { max, min, argmax, argmin } from './ops/reduce-extra.js';
export { cat, split, slice, flatten, squeeze, unsqueeze, type SliceSpec } from './ops/shape-ops.js';
export { maxPool2d, avgPool2d, adaptiveAvgPool2d, poolOutSize, type MaxPool2dOptions, type AvgPool2dOptions } from './ops/pool.js';
export { interpolate, type InterpolateOptions, type InterpolateMode } from './ops/interpolate.js';
export { pad, type PadMode } from './ops/pad.js';
export { batchNorm, type BatchNormOptions } from './ops/batch-norm.js';
export { layerNorm } from './ops/layer-norm.js';
export { profileOps, formatTimings, type OpTiming } from './op-profiler.js';
export { setWasmThreads } from './wasm/wasm-backend.js';
