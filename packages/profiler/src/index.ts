export {
  captureNodeValues,
  validatingFakeQuants,
  scaleAt,
  outputFakeQuantOf,
  realValues,
  nodeNameOf,
  type NodeValue,
  type NodeQuant,
  type CaptureOptions,
} from './values/node-values.js';
export { alignNodes, aliasesOf, type AlignedPair } from './compare/align-nodes.js';
export { nodeTypeOf, callNames } from './values/node-type.js';
export { argsOf, type ModelInputs } from './values/model-inputs.js';
export {
  similarityOf,
  klDivergence,
  SIMILARITY_METRICS,
  HIGHER_IS_BETTER,
  type Similarity,
  type SimilarityMetric,
} from './compare/metrics.js';
export {
  featuremapSimilarity,
  isWorse,
  type FeaturemapSimilarityOptions,
  type FeaturemapSimilarityResult,
  type NodeSimilarity,
  type SimilarityJson,
} from './compare/featuremap-similarity.js';
export {
  diagnose,
  causeEvidence,
  DIVERGENCE_CAUSES,
  type DivergenceCause,
  type Diagnosis,
  type CauseEvidence,
} from './compare/divergence-cause.js';
export {
  firstDivergence,
  STAGES,
  type Stage,
  type StagePair,
  type DivergentNode,
  type FirstDivergenceOptions,
  type FirstDivergenceResult,
} from './compare/first-divergence.js';
export {
  getRawFeatures,
  featuresOf,
  saturationOf,
  outlierOf,
  DEFAULT_BINS,
  DEFAULT_OUTLIER_RATIO,
  OUTLIER_MIN_VALUES,
  type RawFeatures,
  type RawFeaturesOptions,
  type NodeFeatures,
  type Histogram,
  type ChannelFeatures,
  type Outlier,
} from './values/raw-features.js';
export {
  profileFeaturemap,
  summarizeFeatures,
  type FeaturemapProfile,
  type FeaturemapSummary,
} from './values/profile-featuremap.js';
export { compareWeights, type CompareWeightsResult, type LayerWeightComparison } from './compare/compare-weights.js';
export {
  memoryProfile,
  type MemoryProfileOptions,
  type MemoryProfileResult,
  type NodeMemory,
} from './checks/memory-profile.js';
export type {
  ProfilerReport,
  ProfilerMode,
  ReportMeta,
  ReportNote,
  ReportTable,
  ReportColumn,
  ReportColumnKind,
  ReportRow,
  ReportCell,
  ReportHistogram,
  SimilarityPlot,
  SimilarityPoint,
} from './report/report-model.js';
export { renderProfilerHtml } from './report/render-html.js';
export { ReportDirError } from './report/report-dir-error.js';
export { similaritySection, type SimilaritySectionOptions } from './report/similarity-section.js';
export { tableOf, type TableOfOptions } from './report/table-of.js';
export {
  checkUnfusedOperations,
  type CheckUnfusedOptions,
  type UnfusedOperationsResult,
  type FusableChain,
  type BlockedChain,
  type FusionBlock,
} from './checks/check-unfused.js';
export { getModuleCalledCount, type ModuleCalledCountResult, type ModuleCalls } from './checks/module-called-count.js';
export {
  checkQconfig,
  type CheckQconfigOptions,
  type CheckQconfigResult,
  type NodeQconfigInfo,
  type FakeQuantSummary,
  type FlowDtype,
  type QconfigWarning,
  type QconfigWarningCode,
} from './checks/check-qconfig.js';
export {
  compareModelFiles,
  type ModelVersion,
  type ModelFilesComparison,
  type OpComparison,
  type StructureChange,
  type ParameterChange,
} from './compare/compare-model-files.js';
export {
  checkDeployDevice,
  formatDeployDevice,
  type CheckDeployDeviceOptions,
  type DeployDeviceReport,
  type DeployedNode,
  type DeploySegment,
  type DeployMismatch,
} from '@qtk/hybrid';
export { checkModel, type CheckModelOptions, type CheckModelResult } from './lint/check-model.js';
export { applyModelFixes, type AppliedModelFixes } from './lint/apply-model-fixes.js';
export { DEFAULT_LINT_QCONFIG_DICT, type LintOptions } from './lint/lint-context.js';
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
} from './lint/lint-findings.js';
export {
  runModelProfiler,
  type RunModelProfilerOptions,
  type ModelProfilerRun,
  type ModelProfilerResults,
} from './report/model-profiler.js';
export { profilerReportOf, type ReportContext } from './report/profiler-report.js';
export {
  outputScorer,
  outputsOf,
  SCORE_METRICS,
  type EvalSet,
  type ScoreMetric,
} from './precision/output-score.js';
export {
  buildVariant,
  calibratedFakeQuants,
  defaultBaselineDict,
  marchHasInt16,
  precisionSignature,
  quantizableNodes,
  variantConfig,
  type CalibratedFakeQuants,
  type PrecisionChange,
  type QuantizableNode,
  type VariantSetup,
} from './precision/precision-variants.js';
export {
  sensitivity,
  SENSITIVITY_MODES,
  type NodeSensitivity,
  type SensitivityMode,
  type SensitivityOptions,
  type SensitivityResult,
} from './precision/sensitivity.js';
export {
  autoQconfig,
  type AutoQconfigBudget,
  type AutoQconfigChoice,
  type AutoQconfigOptions,
  type AutoQconfigResult,
} from './precision/auto-qconfig.js';
