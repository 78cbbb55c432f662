export { ReferenceNet, Block, type ReferenceNetOptions } from './reference-net.js';
export {
  trainFloat,
  evaluate,
  predict,
  accuracyOf,
  type Dataset,
  type FloatTrainOptions,
  type FloatTrainResult,
} from './train.js';
export { takeBatch } from './batches.js';
export { SUBSET_DIR, DEBIAN_FASHION_MNIST, resolveFullData, loadDataset } from './data.js';
export { checkIntegerOnnx, type IntegerOnnxCheck, type IntegerOnnxCheckOptions } from './integer-onnx-check.js';
export {
  TinyVit,
  TinyBert,
  TinyConvNext,
  ConvNextBlock,
  EncoderLayer,
  SelfAttention,
  type EncoderSize,
} from './transformer-encoders.js';
export { encoderCases, quantizeCase, type EncoderCase } from './transformer-sqnr.js';
