export { StateDictError, DataFormatError, DatasetNotFoundError, type ShapeMismatch } from './errors.js';
export { Parameter } from './parameter.js';
export { Module, currentForwardPass, type ForwardHook, type ForwardPreHook, type RemovableHandle } from './module.js';
export { STATE_DICT_VERSION, isStateDict, type StateDict, type LoadStateDictOptions, type LoadStateDictResult } from './state-dict.js';
export {
  serializeStateDict,
  deserializeStateDict,
  saveStateDict,
  saveStateDictSync,
  loadStateDictFile,
  loadStateDictFileSync,
} from './state-dict-file.js';
export * as init from './init.js';
export { Linear, type LinearOptions } from './layers/linear.js';
export { Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, type ConvLayerOptions, type ConvTransposeLayerOptions } from './layers/conv.js';
export { Sequential, ModuleList, ModuleDict } from './layers/container.js';
export { Identity, Flatten, Lambda, type FlattenOptions } from './layers/basic.js';
export { Dropout, type DropoutOptions } from './layers/dropout.js';
export { FloatFunctional } from './float-functional.js';
export { QuantStub, DeQuantStub, type QuantStubOptions } from './quant-stub.js';
