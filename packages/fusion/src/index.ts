export {
  fuseFx,
  applyFusion,
  fusionRule,
  fusionRuleTable,
  registerDefaultFusions,
  isFusedModule,
  type FuseFxOptions,
} from './fuse-fx.js';
export {
  FUSION_FAMILIES,
  FUSION_ADDS,
  FUSION_RELUS,
  FUSION_SHAPES,
  convFusionPatterns,
  defaultFusionPatterns,
  partsOf,
  shapeName,
  referencedElsewhere,
  type FusionFamily,
  type FusionShape,
  type ConvFusionPattern,
  type ConvFusionParts,
} from './fusion-patterns.js';
export {
  FusedConvBase,
  ConvAddReLU2d,
  ConvTransposeAddReLU2d,
  ConvAddReLU3d,
  LinearAddReLU,
  registerFusedModules,
  type FusedActivation,
  type FusedOptions,
} from './fused-modules.js';
export { registerFusedOps } from './fused-ops.js';
export {
  absorbBatchNorm,
  bnAbsorptionProblem,
  fuseLayerWithBatchNorm,
  outChannelsOf,
  type AbsorbingLayer,
} from './bn-absorption.js';
export { shallowCloneModule, setModuleCopyOnWrite } from './module-tree.js';
export {
  moduleizeFunctionalOps,
  functionalOriginOf,
  MODULEIZED_FUNCTIONS,
  type FunctionalOrigin,
} from './functional-modules.js';
export { ALWAYS_FUSABLE, fusionRefusal, forMarch } from './march-fusions.js';
