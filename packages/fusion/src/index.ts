export { fuseFx, registerDefaultFusions, type FuseFxOptions } from './fuse-fx.js';
export {
  FUSION_FAMILIES,
  FUSION_ADDS,
  FUSION_RELUS,
  FUSION_SHAPES,
  convFusionPatterns,
  partsOf,
  referencedElsewhere,
  type ConvFusionPattern,
} from './fusion-patterns.js';
export {
  FusedConvBase,
  ConvAddReLU2d,
  ConvTransposeAddReLU2d,
  ConvAddReLU3d,
  LinearAddReLU,
  registerFusedModules,
} from './fused-modules.js';
export {
  type AbsorbedBatchNorm,
  type AbsorbingLayer,
  absorbBatchNorm,
  absorbedBatchNormOf,
  bnAbsorptionProblem,
  fuseLayerWithBatchNorm,
} from './bn-absorption.js';
export { shallowCloneModule, setModuleCopyOnWrite } from './module-tree.js';
export { moduleizeFunctionalOps, functionalOriginOf } from './functional-modules.js';
export { fusionRefusal } from './march-fusions.js';
