export { setMarch, getMarch, resetMarch } from './march.js';
export { moduleNameRecord, QconfigResolver, type QConfigDict } from './qconfig-dict.js';
export { UnknownModuleNameError, coversPath, moduleNamesOf } from './module-names.js';
export { QatModule, ownWeightedLayer, weightedLayer } from './qat-module.js';
/** Extension point: `prepareQatFx`'s `options.passes` replaces or maps `DEFAULT_PREPARE_PASSES` with such passes. */
export {
  createPrepareContext,
  type PrepareContext,
  type PrepareContextInputs,
  type PreparePass,
} from './prepare-context.js';
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
  type CalibrateAsyncOptions,
  type CalibrationBatchRunner,
  calibrationIssues,
  startQat,
  type CalibrateOptions,
  type CalibrationBatch,
  type CalibrationIssue,
} from './calibration.js';
export {
  quantizePostTraining,
  quantizePostTrainingAsync,
  type AsyncPostTrainingOptions,
  calibratePostTraining,
  calibrationQconfigDict,
  DEFAULT_PTQ_OBSERVER,
  type PostTrainingOptions,
  type PostTrainingResult,
  type PostTrainingStage,
  type CalibratedResult,
} from './ptq/quantize-post-training.js';
export { type BiasCorrection, type BiasCorrectionResult, correctBias } from './ptq/bias-correction.js';
export { correctBiasAnalytic, gaussianExpectation } from './ptq/bias-correction-analytic.js';
export { adaround, type AdaRoundLayer, type AdaRoundOptions, type AdaRoundResult } from './ptq/adaround.js';
export {
  type CrossLayerEqualizationOptions,
  type CrossLayerEqualizationResult,
  type EqualizedPair,
  equalizeCrossLayer,
} from './ptq/cross-layer-equalization.js';
export { setFakeQuantize } from '@qtk/fake-quant';
export { convertFx, ConversionError, type ConvertFxOptions } from './convert-fx.js';
/** Eager mode: module swaps on the model's own tree, for models that do not trace. */
export { fuseModules, FusedAddSite, type FuseModulesOptions } from './eager/fuse-modules.js';
export { prepareQat, type PrepareQatOptions } from './eager/prepare-qat.js';
export { convert, type ConvertOptions } from './eager/convert.js';
export { setPreserveQatMode } from './preserve-qat-mode.js';
export { FLOAT_STEP } from './stepwise-float-pass.js';
export {
  DEPLOY_REASON,
  DEPLOY_DETAIL,
  deployDeviceOf,
  setDeployDevice,
  type DeployDevice,
  type DeployReason,
  type HybridDict,
} from './deploy-device.js';
export { qconfigOf, moduleOf, type NodeQconfig } from './qconfig-of.js';
export { SoftmaxQat, LayerNormQat } from '@qtk/fixed-point';
export {
  modelToBytes,
  modelFromBytes,
  modelHeaderFromBytes,
  ModelFileError,
  type ModelKind,
  type ModelFileHeader,
  type SaveModelOptions,
  type LoadedModel,
} from './model-file.js';
export { modelInfoOf, type ModelInfo } from './model-info.js';
export { insertYuvInput, type InsertYuvInputOptions } from './insert-yuv-input.js';
/** Extension point: `prepareQatFx`'s `qconfigSetter` list takes setters like the templates below, ours or a user's. */
export type {
  QconfigSetter,
  NamedQconfigSetter,
  QconfigSetterContext,
  QconfigSetterNode,
  QconfigSetterResult,
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
  SensitivityTableError,
  type SensitivityTableV1,
  type SensitivityEntryV1,
} from './qconfig-templates/sensitivity-table.js';
export { withActivationDtype } from './qconfig-templates/activation-dtype.js';
