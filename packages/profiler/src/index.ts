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
  outputScorer,
  outputsOf,
  SCORE_METRICS,
  type EvalSet,
  type ScoreMetric,
} from './output-score.js';
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
} from './precision-variants.js';
export {
  sensitivity,
  SENSITIVITY_MODES,
  type NodeSensitivity,
  type SensitivityMode,
  type SensitivityOptions,
  type SensitivityResult,
} from './sensitivity.js';
export {
  autoQconfig,
  type AutoQconfigBudget,
  type AutoQconfigChoice,
  type AutoQconfigOptions,
  type AutoQconfigResult,
} from './auto-qconfig.js';
