// @qtk/nn's module classes in the op catalog (@qtk/tensor): the op each stands for and the
// attributes capability tables constrain. Containers, stubs, losses and Lambda stand for no op.
import { registerModuleOp, type ModuleImplementation } from '@qtk/tensor';
import {
  ELU,
  GELU,
  Hardsigmoid,
  Hardswish,
  Hardtanh,
  LeakyReLU,
  LogSoftmax,
  PReLU,
  ReLU,
  ReLU6,
  SELU,
  Sigmoid,
  SiLU,
  Softmax,
  Softplus,
  Tanh,
} from './layers/activation.js';
import { Flatten, Identity } from './layers/basic.js';
import { Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d } from './layers/conv.js';
import { Dropout } from './layers/dropout.js';
import { Linear } from './layers/linear.js';
import { BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm } from './layers/normalization.js';
import { AdaptiveAvgPool2d, AvgPool2d, MaxPool2d } from './layers/pooling.js';
import { ChannelShuffle, PixelShuffle, PixelUnshuffle } from './layers/shuffle.js';
import { SyncBatchNorm } from './layers/sync-batch-norm.js';
import { Upsample } from './layers/upsample.js';
import { FloatFunctional } from './float-functional.js';

type ConvLike = Conv2d | ConvTranspose2d;

/** The geometry of a conv-family layer, as capability tables and marches read it. */
function convAttrs(spatialDims: number) {
  return (m: ConvLike): Record<string, unknown> => ({
    spatialDims,
    kernelShape: m.kernelSize,
    stride: m.stride,
    padding: m.padding,
    dilation: m.dilation,
    groups: m.groups,
    ...(m instanceof ConvTranspose1d || m instanceof ConvTranspose2d ? { outputPadding: m.outputPadding } : {}),
  });
}

const impl = <M extends object>(entry: ModuleImplementation<M>): ModuleImplementation<M> => entry;

const NN_MODULE_OPS: readonly ModuleImplementation[] = [
  impl({ cls: Conv1d, op: 'Conv', attrs: convAttrs(1) }),
  impl({ cls: Conv2d, op: 'Conv', attrs: convAttrs(2) }),
  impl({ cls: Conv3d, op: 'Conv', attrs: convAttrs(3) }),
  impl({ cls: ConvTranspose1d, op: 'ConvTranspose', attrs: convAttrs(1) }),
  impl({ cls: ConvTranspose2d, op: 'ConvTranspose', attrs: convAttrs(2) }),
  impl({ cls: Linear, op: 'Gemm' }),
  // a BatchNorm left unfused (after an add, in a detection neck) rescales each channel: it gets an output
  // scale of its own, which its conversion (a per-channel affine, a depthwise 1×1 conv) requantizes to
  ...[BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm].map((cls) => impl({ cls, op: 'BatchNormalization' })),
  impl({ cls: LayerNorm, op: 'LayerNormalization' }),
  impl({ cls: ReLU, op: 'Relu' }),
  impl({ cls: ReLU6, op: 'Clip', attrs: () => ({ min: 0, max: 6 }) }),
  impl({ cls: Hardtanh, op: 'Clip', attrs: (m) => ({ min: m.minVal, max: m.maxVal }) }),
  impl({ cls: LeakyReLU, op: 'LeakyRelu', attrs: (m) => ({ alpha: m.negativeSlope }) }),
  impl({ cls: PReLU, op: 'PRelu' }),
  impl({ cls: Sigmoid, op: 'Sigmoid' }),
  impl({ cls: Tanh, op: 'Tanh' }),
  impl({ cls: SiLU, op: 'Silu' }),
  impl({ cls: GELU, op: 'Gelu', attrs: (m) => ({ approximate: m.approximate }) }),
  impl({ cls: Hardsigmoid, op: 'HardSigmoid' }),
  impl({ cls: Hardswish, op: 'HardSwish' }),
  impl({ cls: ELU, op: 'Elu', attrs: (m) => ({ alpha: m.alpha }) }),
  impl({ cls: SELU, op: 'Selu' }),
  impl({ cls: Softplus, op: 'Softplus', attrs: (m) => ({ beta: m.beta, threshold: m.threshold }) }),
  impl({ cls: Softmax, op: 'Softmax', attrs: (m) => ({ axis: m.dim }) }),
  impl({ cls: LogSoftmax, op: 'LogSoftmax', attrs: (m) => ({ axis: m.dim }) }),
  impl({
    cls: MaxPool2d,
    op: 'MaxPool',
    attrs: (m) => ({ kernelShape: m.kernelSize, stride: m.stride, padding: m.padding }),
  }),
  impl({
    cls: AvgPool2d,
    op: 'AveragePool',
    attrs: (m) => ({ kernelSize: m.kernelSize, stride: m.stride, padding: m.padding }),
  }),
  impl({ cls: AdaptiveAvgPool2d, op: 'AdaptiveAveragePool', attrs: (m) => ({ outputSize: m.outputSize }) }),
  // nn.Upsample keeps its input's scale (nearest moves integers); the `interpolate` function gets its own
  impl({ cls: Upsample, op: 'Resize', attrs: (m) => ({ mode: m.mode }), ownOutputScale: false }),
  impl({ cls: PixelShuffle, op: 'DepthToSpace', attrs: (m) => ({ blocksize: m.upscaleFactor }) }),
  impl({ cls: PixelUnshuffle, op: 'SpaceToDepth', attrs: (m) => ({ blocksize: m.downscaleFactor }) }),
  impl({ cls: ChannelShuffle, op: 'ChannelShuffle', attrs: (m) => ({ groups: m.groups }) }),
  impl({ cls: Dropout, op: 'Dropout' }),
  impl({ cls: Identity, op: 'Identity' }),
  impl({ cls: Flatten, op: 'Flatten', attrs: (m) => ({ axis: m.startDim }) }),
  // FloatFunctional is no op itself; each of its methods is one
  impl({
    cls: FloatFunctional,
    op: () => null,
    methods: {
      add: 'Add',
      addScalar: 'Add',
      sub: 'Sub',
      mul: 'Mul',
      mulScalar: 'Mul',
      div: 'Div',
      matmul: 'MatMul',
      cat: 'Concat',
      sum: 'ReduceSum',
      mean: 'ReduceMean',
    },
  }),
];

let registered = false;

/** Registers @qtk/nn's module classes in the op catalog; runs when the package loads, idempotent. */
export function registerNnOps(): void {
  if (registered) return;
  registered = true;
  for (const entry of NN_MODULE_OPS) registerModuleOp(entry);
}

registerNnOps();
