export { setMarch, getMarch, resetMarch, checkQconfigForMarch } from './march.js';
export { QconfigResolver, checkQconfigDict, type QConfigDict } from './qconfig-dict.js';
export { UnknownModuleNameError, checkModuleNames, coversPath, moduleNamesOf } from './module-names.js';
export { QatModule, weightedLayer } from './qat-module.js';
export {
  createPrepareContext,
  type PrepareContext,
  type PrepareContextInputs,
  type PreparePass,
} from './prepare-context.js';
export {
  swapQatModulesPass,
  swapWrappedModulesPass,
  qatReplacementFor,
  insertActivationFakeQuantPass,
  checkQuantStubPass,
} from './prepare-passes.js';
export { checkSharedModulesPass, checkOutputPrecisionPass, checkAfterDeQuantStubPass } from './prepare-guards.js';
export { isWrappedMethodCall, modulesOnlyInWrappedMethods } from './fx-wrapped-modules.js';
export {
  prepareQatFx,
  insertInputQuantStubs,
  DEFAULT_PREPARE_PASSES,
  type PrepareQatFxOptions,
  type PrepareQatFxSetterOptions,
} from './prepare-qat-fx.js';
export { insertOutputDeQuantStubs } from './output-dequant-stubs.js';
export {
  calibrate,
  calibrateAsync,
  calibrationIssues,
  uncalibratedFakeQuants,
  startQat,
  type CalibrateOptions,
  type CalibrationBatch,
  type CalibrationIssue,
} from './calibration.js';
export {
  quantizePostTraining,
  quantizePostTrainingAsync,
  calibratePostTraining,
  calibrationQconfigDict,
  DEFAULT_PTQ_OBSERVER,
  type PostTrainingOptions,
  type PostTrainingResult,
  type PostTrainingStage,
  type CalibratedResult,
} from './ptq/quantize-post-training.js';
export { setFakeQuantize } from '@qtk/fake-quant';
export { convertFx, ConversionError, type ConvertFxOptions } from './convert-fx.js';
export { setPreserveQatMode, isPreserveQatMode, isPreservedAt } from './preserve-qat-mode.js';
export { carryPreserveQatModePass } from './preserve-qat-mode-pass.js';
export { stepwiseFloatPass, FLOAT_STEP, FLOAT_BOUNDARY } from './stepwise-float-pass.js';
export {
  DEPLOY_DEVICE,
  DEPLOY_REASON,
  DEPLOY_DETAIL,
  deployDeviceOf,
  setDeployDevice,
  type DeployDevice,
  type DeployReason,
  type HybridDict,
} from './deploy-device.js';
export { qconfigOf, moduleOf, pathOf, type NodeQconfig } from './qconfig-of.js';
export { SoftmaxQat, LayerNormQat, type StepFakeQuant } from '@qtk/fixed-point';
export {
  marchPrepareContext,
  marchRewritesPass,
  compositeRewritesPass,
  marchPreparePassesPass,
} from './march-prepare-passes.js';
export { registerQatCodecs } from './qat-codecs.js';
export {
  modelToBytes,
  modelFromBytes,
  modelHeaderFromBytes,
  inferModelKind,
  ModelFileError,
  MODEL_FILE_FORMAT,
  MODEL_FILE_VERSION,
  MODEL_KINDS,
  type ModelKind,
  type ModelFileHeader,
  type SaveModelOptions,
  type LoadedModel,
} from './model-file.js';
export { modelInfoOf, recordModelInfo, type ModelInfo } from './model-info.js';
export { insertYuvInput, type InsertYuvInputOptions } from './insert-yuv-input.js';
export {
  qconfigSettersPass,
  QCONFIG_SETTERS_PASS,
  type QconfigSetter,
  type NamedQconfigSetter,
  type QconfigSetterContext,
  type QconfigSetterNode,
  type QconfigSetterResult,
} from './qconfig-setter.js';
export { activationFakeQuantOf } from './activation-fake-quant-of.js';
export { defaultQconfigSetter, type DefaultQconfigSetterOptions } from './qconfig-templates/default.js';
export { int16ActivationSetter } from './qconfig-templates/int16-activations.js';
export {
  fixedActivationScaleSetter,
  type FixedActivationScaleOptions,
} from './qconfig-templates/fixed-activation-scales.js';
export { sensitivitySetter, type SensitivitySetterOptions } from './qconfig-templates/sensitivity.js';
export {
  checkSensitivityTable,
  mostSensitive,
  SensitivityTableError,
  type SensitivityTableV1,
  type SensitivityEntryV1,
} from './qconfig-templates/sensitivity-table.js';
export { withActivationDtype, setActivationDtype } from './qconfig-templates/activation-dtype.js';
