export { call, imageBatches, randomInputs } from './inputs.js';
export {
  AlternatingNet,
  CpuEndsNet,
  FunctionalSeluNet,
  MiddleOpsNet,
  prototypeTask,
  SeluBlock,
} from './cpu-op-nets.js';
export {
  ConvSeluBlock,
  NestedSeluNet,
  NoDeQuantNet,
  SeluNet,
  SharedConvNet,
  SharedNormNet,
  UnfusedNet,
} from './check-nets.js';
export {
  ConvBnRelu,
  ResidualBlock,
  ResidualNet,
  ResidualSigmoidNet,
  ShortcutBlock,
  ShortcutResNet,
  TinyResNet,
  type TinyResNetOptions,
} from './residual-nets.js';
export { CompositeNet, SharedHeadNet, SharedSigmoidNet } from './template-nets.js';
export { ConvClassifier, LayerNormSoftmax } from './model-file-nets.js';
export {
  ConvBnReluNet,
  type ConvBnReluNetOptions,
  ConvSkipNet,
  type ConvSkipNetOptions,
} from './conv-classifiers.js';
export { SingleOpNet } from './single-op-net.js';
