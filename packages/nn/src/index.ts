export {
  StateDictError,
  DataFormatError,
  DatasetNotFoundError,
  WriteTargetError,
  CompressedDataError,
  type ShapeMismatch,
} from './errors.js';
export { Parameter } from './parameter.js';
export {
  Module,
  currentForwardPass,
  setModuleCallInterceptor,
  type ForwardHook,
  type ForwardPreHook,
  type ModuleCallInterceptor,
  type RemovableHandle,
} from './module.js';
export { deepCopy, COPY_FIELDS } from './deep-copy.js';
export {
  STATE_DICT_VERSION,
  EXTRA_STATE_KEY,
  isStateDict,
  type JsonValue,
  type StateDict,
  type LoadStateDictOptions,
  type LoadStateDictResult,
} from './state-dict.js';
export { STATE_DICT_FILE_VERSION, serializeStateDict, deserializeStateDict } from './state-dict-file.js';
export { crc32 } from './crc32.js';
export { manualSeed, defaultGenerator } from '@qtk/tensor';
export * as init from './init.js';
export * as F from './functional.js';

// Layers
export { Linear, type LinearOptions } from './layers/linear.js';
export {
  Conv1d,
  Conv2d,
  Conv3d,
  ConvTranspose1d,
  ConvTranspose2d,
  type ConvLayerOptions,
  type ConvTransposeLayerOptions,
} from './layers/conv.js';
export {
  BatchNorm1d,
  BatchNorm2d,
  BatchNorm3d,
  LayerNorm,
  type BatchNormLayerOptions,
  type LayerNormOptions,
} from './layers/normalization.js';
export {
  ReLU,
  ReLU6,
  Hardtanh,
  LeakyReLU,
  PReLU,
  Sigmoid,
  Tanh,
  SiLU,
  GELU,
  Hardsigmoid,
  Hardswish,
  ELU,
  SELU,
  Softplus,
  Softmax,
  LogSoftmax,
  type HardtanhOptions,
  type LeakyReLUOptions,
  type PReLUOptions,
  type GELUOptions,
  type ELUOptions,
  type SoftplusOptions,
  type SoftmaxOptions,
} from './layers/activation.js';
export {
  MaxPool2d,
  AvgPool2d,
  AdaptiveAvgPool2d,
  type MaxPool2dLayerOptions,
  type AvgPool2dLayerOptions,
} from './layers/pooling.js';
export { Upsample, type UpsampleOptions } from './layers/upsample.js';
export { PixelShuffle, PixelUnshuffle, ChannelShuffle } from './layers/shuffle.js';
export { Dropout, type DropoutOptions } from './layers/dropout.js';
export { dropout } from './functional.js';
export { Identity, Flatten, Lambda, type FlattenOptions } from './layers/basic.js';
export { Sequential, ModuleList, ModuleDict } from './layers/container.js';
export { FloatFunctional } from './float-functional.js';
export { QuantStub, DeQuantStub, type QuantStubOptions } from './quant-stub.js';
export {
  CrossEntropyLoss,
  MSELoss,
  L1Loss,
  type CrossEntropyLossOptions,
  type ReductionOptions,
} from './loss.js';

// Optimizers and schedules
export {
  Optimizer,
  optimizerStateToStateDict,
  optimizerStateFromStateDict,
  type ParamGroup,
  type ParamGroupInput,
  type OptimizerStateDict,
} from './optim/optimizer.js';
export { SGD, type SGDOptions } from './optim/sgd.js';
export { Adam, AdamW, type AdamOptions } from './optim/adam.js';
export { clipGradNorm, clipGradValue, NonfiniteGradientError, type ClipGradNormOptions } from './optim/clip-grad.js';
export {
  LRScheduler,
  StepLR,
  CosineAnnealingLR,
  LinearWarmup,
  type SchedulerStateDict,
  type StepLROptions,
  type CosineAnnealingLROptions,
  type LinearWarmupOptions,
} from './optim/lr-scheduler.js';

// Data
export { parseIdx, type IdxArray, type IdxDType } from './data/idx.js';
export { parseNpy, serializeNpy, type NpyArray, type NpyDType } from './data/npy.js';
export { rawToTensor, type RawArray, type RawNdArray } from './data/convert.js';
export { DataLoader, type DataLoaderOptions } from './data/data-loader.js';
export { batchesOf } from './data/batches.js';
export {
  fashionMnistFromIdx,
  FASHION_MNIST_CLASSES,
  type FashionMnist,
  type FashionMnistIdxOptions,
} from './data/fashion-mnist.js';
export { ProgressBar, formatDuration, type ProgressOptions, type ProgressStream } from './data/progress.js';
export { top1, accuracy, agreement } from './metrics.js';
export { PairSums, sqnrDb } from './pair-sums.js';
export { SyncBatchNorm } from './layers/sync-batch-norm.js';
export type { BatchNormNd } from './layers/normalization.js';

// registers the module classes above in the op catalog
import './nn-ops.js';
