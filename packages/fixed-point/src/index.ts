export { type IntRange, intRange, rhu, rhe, roundReal, shr, shrR, sat, clampInt } from './integer-math.js';
export { type FixedMultiplier, fitMul } from './fit-mul.js';
export { QTensor, STORAGE_DTYPE, type QTensorDType } from './qtensor.js';
export {
  type RequantizePlan,
  type RequantizeRule,
  type Warn,
  type RequantizePlanner,
  planRequantizeInt16,
  planRequantizeWide,
  requantizeValue,
  requantizeInto,
} from './requantize.js';
export { quantizeBiasInt32, quantizeBiasShifted16, planSumin, suminTerm, type SuminPlan } from './bias.js';
export { Quantize, Dequantize } from './modules/quantize.js';
export {
  YuvInputQuantize,
  planYuvInput,
  centeredYuvInput,
  type YuvInputQuantizeConfig,
  type YuvInputPlanOptions,
} from './modules/yuv-input-quantize.js';
export { FixedConv, type FixedConvConfig, type FixedConvKind, type FixedConvAttrs } from './modules/fixed-conv.js';
export {
  FixedAvgPool2d,
  avgPoolWindowList,
  type AvgPoolWindow,
  type AvgPoolWindows,
  type WindowPlanner,
} from './modules/fixed-avg-pool.js';
export { FixedValueOp, type ValueOpTarget, type ValueOpOutput } from './modules/fixed-value-op.js';
export {
  FixedResize,
  bilinearTaps,
  resizePlan,
  RESIZE_WEIGHT_BITS,
  type BilinearTaps,
} from './modules/fixed-resize.js';
export {
  type MarchNumerics,
  type MarchEnv,
  type ConvertRule,
  createMarchConverter,
  createMarchSupport,
  ruleVerdict,
  type RuleVerdict,
  quantizedArgs,
  isModule,
  isCall,
  opNameOf,
} from './convert/march-converter.js';
export { quantizeWeight, CONV_RULES } from './convert/conv-rules.js';
export { quantStubRule, dequantStubRule } from './convert/stub-rules.js';
export { VALUE_OP_RULES } from './convert/value-op-rules.js';
export { POOL_RULES } from './convert/pool-rules.js';
export { DEFAULT_CONVERT_RULES } from './convert/default-rules.js';
export { intConv, intConvTranspose } from './int-conv.js';
export { intLinear, intMatmul } from './int-matmul.js';
export { EXACT_F32_SUM, planChunks, planCost } from './exact-sum.js';
export * as nonlinear from './nonlinear-functions.js';
export { type NonlinearFunction, NONLINEAR_FUNCTIONS } from './nonlinear-functions.js';
export { buildLookupTable, applyLookupTable } from './lookup-table.js';
export {
  type SegmentTableV1,
  type SegmentTableOptions,
  type SegmentDividing,
  type SegmentDividingOption,
  type SegmentLine,
  type SegmentIndex,
  buildSegmentTable,
  applySegmentTable,
  evalSegment,
  segmentY16,
} from './segment-table.js';
export {
  FixedTableOp,
  type FixedTableOpConfig,
  type TablePlan,
  planTable,
  applyTablePlan,
  buildLookupTable16,
} from './modules/fixed-table-op.js';
export { NONLINEAR_RULES, defaultDividing } from './convert/nonlinear-rules.js';
export {
  tableOptionsSchema,
  nodeTableOptionsSchema,
  convertTableOptionsSchema,
  parseTableOptions,
  tableOptionsOf,
  planTunedTable,
  checkTableOptionsFit,
  type ConvertTableOptions,
} from './convert/table-options.js';
export {
  type EwOperand,
  type AddTerm,
  type AddPlan,
  type AddPlanner,
  type ScalarOperand,
  type ScalarOperandRule,
  type ShiftLimit,
  planAddShiftLarger,
  planAddConvSumin,
  planSingleOperand,
  addTermValue,
  addAccumulate,
  mulAccScale,
  roundHalfAway,
  scalarOperandInt8,
  scalarOperandWide,
} from './elementwise.js';
export { broadcastIndex, type BroadcastIndex } from './broadcast-index.js';
export { FixedAdd, type FixedAddConfig } from './modules/fixed-add.js';
export { FixedMul, type FixedMulConfig } from './modules/fixed-mul.js';
export { FixedMatMul, type FixedMatMulConfig } from './modules/fixed-matmul.js';
export { FixedCat, type FixedCatConfig } from './modules/fixed-cat.js';
export { FixedReduce } from './modules/fixed-reduce.js';
export { FixedMinMax, type FixedMinMaxConfig } from './modules/fixed-min-max.js';
export { FixedCompare, type FixedCompareConfig, type CompareKind } from './modules/fixed-compare.js';
export { FixedClamp } from './modules/fixed-clamp.js';
export { ELEMENTWISE_RULES } from './convert/elementwise-rules.js';
export {
  requantizePlanner,
  requantizePlanners,
  requantizePlannerName,
  type NamedRequantizePlanner,
} from './requantize-planners.js';
export { requantizeRuleOf } from './convert/pool-rules.js';
export { registerFixedPointCodecs } from './codecs.js';
export { toJsonData, fromJsonData } from './codec-json.js';
export {
  type ObservedStep,
  type SoftmaxQatForm,
  type LayerNormQatForm,
  type DivQatForm,
  type CompositeQatForm,
  compositeFormOf,
} from './composite-forms.js';
export { FixedSoftmax, type FixedSoftmaxConfig } from './modules/fixed-softmax.js';
export { FixedLayerNorm, type FixedLayerNormConfig, subPlanOf, type SubPlan } from './modules/fixed-layer-norm.js';
export { COMPOSITE_RULES, softmaxRule, layerNormRule, rsqrtPlusEps } from './convert/composite-rules.js';
export {
  type CompositeOp,
  compositeOps,
  compositeOpsOf,
  compositeQatForm,
  runsAsComposite,
} from './composites/composite-ops.js';
export { SoftmaxQat, LayerNormQat, type QatStep, type StepFakeQuant } from './composites/qat-forms.js';
export { decomposeDiv } from './composites/div-rewrite.js';
export {
  SOFTMAX_COMPOSITE,
  LAYER_NORM_COMPOSITE,
  DIV_COMPOSITE,
  registerBuiltinComposites,
} from './composites/builtin-composites.js';
