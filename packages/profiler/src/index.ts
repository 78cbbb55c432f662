export {
  captureNodeValues,
  outputFakeQuantOf,
  realValues,
  nodeNameOf,
  type NodeValue,
  type NodeQuant,
  type CaptureOptions,
} from './node-values.js';
export { alignNodes, aliasesOf, type AlignedPair } from './align-nodes.js';
export { nodeTypeOf, callNames } from './node-type.js';
export { argsOf, type ModelInputs } from './model-inputs.js';
export {
  similarityOf,
  klDivergence,
  SIMILARITY_METRICS,
  HIGHER_IS_BETTER,
  type Similarity,
  type SimilarityMetric,
} from './metrics.js';
export {
  featuremapSimilarity,
  isWorse,
  type FeaturemapSimilarityOptions,
  type FeaturemapSimilarityResult,
  type NodeSimilarity,
  type SimilarityJson,
} from './featuremap-similarity.js';
export {
  checkUnfusedOperations,
  type CheckUnfusedOptions,
  type UnfusedOperationsResult,
  type FusableChain,
  type BlockedChain,
  type FusionBlock,
} from './check-unfused.js';
export { getModuleCalledCount, type ModuleCalledCountResult, type ModuleCalls } from './module-called-count.js';
export {
  checkQconfig,
  type CheckQconfigOptions,
  type CheckQconfigResult,
  type NodeQconfigInfo,
  type FakeQuantSummary,
  type FlowDtype,
  type QconfigWarning,
  type QconfigWarningCode,
} from './check-qconfig.js';
export {
  compareModelFiles,
  type ModelVersion,
  type ModelFilesComparison,
  type OpComparison,
  type StructureChange,
  type ParameterChange,
} from './compare-model-files.js';
export {
  checkDeployDevice,
  formatDeployDevice,
  type CheckDeployDeviceOptions,
  type DeployDeviceReport,
  type DeployedNode,
  type DeploySegment,
  type DeployMismatch,
} from '@qtk/hybrid';
export { checkModel, type CheckModelOptions, type CheckModelResult } from './check-model.js';
export { applyModelFixes, type AppliedModelFixes } from './apply-model-fixes.js';
export { DEFAULT_LINT_QCONFIG_DICT, type LintOptions } from './lint-context.js';
export type {
  Finding,
  FindingCode,
  FindingSeverity,
  ModelFix,
  QconfigDelta,
  QconfigEdit,
  QconfigPreset,
  HybridDelta,
  PrepareOptionFix,
} from './lint-findings.js';
