export {
  QtkError,
  ShapeError,
  DTypeError,
  InvalidArgumentError,
  KernelNotFoundError,
  AutogradError,
  RegistryError,
  UnknownOpError,
} from './errors.js';
export { Registry, type RegistryOptions } from './named-registry.js';
export type { FusionRole, OpDefinition } from './op-catalog/op-definitions.js';
export {
  defineOp,
  getOp,
  hasOp,
  implementationsOf,
  listOps,
  opOfFunction,
  opOfMethod,
  opOfModule,
  registerFunctionOp,
  registerMethodOp,
  registerModuleOp,
  type CallImplementation,
  type CallSite,
  type FusedOp,
  type ModuleImplementation,
  type OpMatch,
} from './op-catalog/op-catalog.js';
export { closeNames, didYouMean } from './close-names.js';
export { isQuantizedValue, QUANTIZED_VALUE } from './quantized-value.js';
import './op-catalog/tensor-ops.js';
export { type DType, type TypedArray, DTYPES, dtypeRange, allocate, isFloating } from './dtype.js';
export {
  type Shape,
  sizeOf,
  broadcastShapes,
  contiguousStrides,
  shapesEqual,
  normalizeAxis,
  normalizeAxes,
} from './shape.js';
export { Tensor, type TensorInit } from './tensor.js';
/** Extension point: a backend registers kernels for catalog ops (`registerBackend`, `registerKernel`). */
export {
  kernels,
  registerBackend,
  registerKernel,
  type Backend,
  type KernelSpec,
  type TensorKernel,
  type Saved,
} from './registry.js';
/** Extension point: a new op registers its gradient (`registerGradient`); `backward` / `noGrad` drive autograd. */
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
export type { CreateOptions, RandomOptions } from './creation.js';
export { cpuBackend } from './backends.js';
export { gemm, gemmArgs, cpuGemm, type GemmArgs, type GemmKernel } from './gemm/gemm.js';
export { broadcastBinary } from './ops/binary.js';
export { defineUnary, type UnaryDefinition } from './ops/unary.js';
export { forEachReduced, reducedShape } from './ops/reduce.js';
import './tensor-methods.js';
import './wasm/wasm-backend.js';
export {
  wasmBackend,
  wasmStatus,
  loadWasmBackend,
  initWasmBackend,
  type WasmInitOptions,
  type WasmStatus,
} from './wasm/wasm-backend.js';
export { wasmBuildUrl, type WasmBuild } from './wasm-urls.js';
export type { ConvOptions, ConvAttrs } from './ops/conv.js';
export { samePadding, windowOutSize } from './ops/conv-args.js';
export type { ConvTransposeOptions, ConvTransposeAttrs } from './ops/conv-transpose.js';
export { erfc, type GeluApproximate } from './ops/activations.js';
export type { CrossEntropyOptions, Reduction } from './ops/cross-entropy.js';
export type { SliceSpec } from './ops/shape-ops.js';
export {
  poolOutSize,
  forEachAvgWindow,
  type AvgPoolAttrs,
  type MaxPool2dOptions,
  type AvgPool2dOptions,
} from './ops/pool.js';
export type { InterpolateOptions, InterpolateMode } from './ops/interpolate.js';
export type { PadMode } from './ops/pad.js';
export type {
  BatchNormOptions,
  BatchNormAttrs,
  BatchNormBackwardAttrs,
  BatchNormBackwardKernel,
  BatchNormKernel,
} from './ops/batch-norm.js';
export type { ReluBackwardKernel } from './ops/unary.js';
export { profileOps, formatTimings, type OpTiming } from './op-profiler.js';
export { setWasmThreads } from './wasm/wasm-backend.js';
// Public functional ops, wrapped so symbolic tracing (@qtk/ir) records them; see trace-hook.ts.
export * from './traceable-ops.js';
export {
  TRACED,
  setTraceHook,
  getTraceHook,
  isTracedValue,
  containsTraced,
  traceable,
  traceables,
  TraceableRegistry,
  type TraceHook,
} from './trace-hook.js';
export { convPlan, type ConvBackwardKernel } from './ops/conv.js';
export { convWithEpilogue, type ConvActivation, type ConvEpilogue } from './ops/conv-epilogue.js';
export type { ResizeOptions, ResizeMode, ResizeCoordinateMode, ResizeNearestMode } from './ops/resize.js';
export { convInteger, type ConvIntegerOptions } from './ops/conv-integer.js';
export { yuvColorSpace, type YuvSwing, type ColorOrder, type YuvColorSpace } from './ops/color-space.js';
export {
  requantizeInt32,
  REQUANTIZE_MAX_MULTIPLIER,
  type RequantizeInt32Options,
  type RequantizeInt32Rule,
} from './ops/requantize-int32.js';
export {
  channelLayout,
  fakeQuantizeSymmetric,
  fakeQuantizeSymmetricBackward,
  type FakeQuantizeSymmetricAttrs,
} from './ops/fake-quantize-symmetric.js';
export { ROUNDING_MODES, type RoundingMode, roundHalfEven, roundHalfUp, roundingFunction } from './rounding.js';
export { channelMinMax } from './ops/channel-min-max.js';
export { addHistogramCounts, histogramCounts } from './ops/histogram-counts.js';
