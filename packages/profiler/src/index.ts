export type { SimilarityMetric } from './compare/metrics.js';
export {
  featuremapSimilarity,
  type FeaturemapSimilarityOptions,
  type FeaturemapSimilarityResult,
} from './compare/featuremap-similarity.js';
export type { DivergenceCause } from './compare/divergence-cause.js';
export {
  firstDivergence,
  type Stage,
  type FirstDivergenceOptions,
  type FirstDivergenceResult,
} from './compare/first-divergence.js';
export { getRawFeatures, type RawFeatures, type RawFeaturesOptions } from './values/raw-features.js';
export { profileFeaturemap, type FeaturemapProfile } from './values/profile-featuremap.js';
export { compareWeights, type CompareWeightsResult } from './compare/compare-weights.js';
export { memoryProfile, type MemoryProfileOptions, type MemoryProfileResult } from './checks/memory-profile.js';
/**
 * Extension point: a script may build its own `ProfilerReport` (sections from `tableOf` and
 * `similaritySection`) and render it with `renderProfilerHtml` or write it with `writeProfilerReport`
 * (`@qtk/profiler/node`).
 */
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
} from './checks/check-unfused.js';
export { getModuleCalledCount, type ModuleCalledCountResult } from './checks/module-called-count.js';
export {
  checkQconfig,
  type CheckQconfigOptions,
  type CheckQconfigResult,
  type QconfigCheckCall,
} from './checks/check-qconfig.js';
export { formatQconfigInfo } from './checks/check-qconfig-text.js';
export { compareModelFiles, type ModelFilesComparison } from './compare/compare-model-files.js';
export {
  checkDeployDevice,
  formatDeployDevice,
  type CheckDeployDeviceOptions,
  type DeployDeviceReport,
} from '@qtk/hybrid';
export { checkModel, type CheckModelOptions, type CheckModelResult } from './lint/check-model.js';
export { applyModelFixes, type AppliedModelFixes } from './lint/apply-model-fixes.js';
export type { Finding, FindingCode, FindingSeverity, ModelFix } from './lint/lint-findings.js';
export { runModelProfiler, type RunModelProfilerOptions, type ModelProfilerRun } from './report/model-profiler.js';
export { outputScorer, SCORE_METRICS, type ScoreMetric } from './precision/output-score.js';
export { defaultBaselineDict, quantizableNodes } from './precision/precision-variants.js';
export {
  sensitivity,
  type SensitivityMode,
  type SensitivityOptions,
  type SensitivityResult,
} from './precision/sensitivity.js';
export {
  autoQconfig,
  type AutoQconfigBudget,
  type AutoQconfigOptions,
  type AutoQconfigResult,
} from './precision/auto-qconfig.js';
