// registers softmax, layer norm and div in `compositeOps` when the package is imported
import './composites/builtin-composites.js';

export { type IntRange, intRange, rhu, rhe, roundReal, shr, shrR, sat } from './integer-math.js';
export { type FixedMultiplier, fitMul } from './fit-mul.js';
export { QTensor, type QTensorDType } from './qtensor.js';
export {
  type RequantizePlan,
  type RequantizeRule,
  type Warn,
  type RequantizePlanner,
  planRequantizeInt16,
  planRequantizeWide,
  requantizeValue,
} from './requantize.js';
export { quantizeBiasInt32, quantizeBiasShifted16, planSumin, type SuminPlan } from './bias.js';
export { Quantize, Dequantize } from './modules/quantize.js';
export {
  YuvInputQuantize,
  planYuvInput,
  centeredYuvInput,
  type YuvInputPlanOptions,
} from './modules/yuv-input-quantize.js';
export { FixedConv, type FixedConvConfig, type FixedConvKind } from './modules/fixed-conv.js';
export { FixedAvgPool2d, avgPoolWindowList } from './modules/fixed-avg-pool.js';
export { FixedValueOp, type ValueOpOutput } from './modules/fixed-value-op.js';
export { FixedResize, bilinearTaps, resizePlan, RESIZE_WEIGHT_BITS } from './modules/fixed-resize.js';
/**
 * Extension point: a march builds its `convertNode` with `createMarchConverter(env, rules)` from its
 * `MarchNumerics` (composed from the planners and integer primitives exported here) and `DEFAULT_CONVERT_RULES`.
 */
export {
  type MarchNumerics,
  type MarchEnv,
  type ConvertRule,
  createMarchConverter,
  createMarchSupport,
  ruleVerdict,
  type RuleVerdict,
  isModule,
  isCall,
} from './convert/march-converter.js';
export { VALUE_OP_RULES } from './convert/value-op-rules.js';
export { DEFAULT_CONVERT_RULES } from './convert/default-rules.js';
export { intConv, intConvTranspose } from './int-conv.js';
export { intLinear, intMatmul } from './int-matmul.js';
export { EXACT_F32_SUM, planChunks, planCost } from './exact-sum.js';
export * as nonlinear from './nonlinear-functions.js';
export type { NonlinearFunction } from './nonlinear-functions.js';
export { buildLookupTable } from './lookup-table.js';
export {
  type SegmentTableV1,
  type SegmentTableOptions,
  buildSegmentTable,
  evalSegment,
  segmentY16,
} from './segment-table.js';
export { FixedTableOp, type TablePlan, planTable } from './modules/fixed-table-op.js';
export { defaultDividing } from './convert/nonlinear-rules.js';
export { parseTableOptions, tableOptionsOf, type ConvertTableOptions } from './convert/table-options.js';
export {
  type AddTerm,
  type AddPlan,
  type AddPlanner,
  type ScalarOperand,
  type ScalarOperandRule,
  type ShiftLimit,
  planAddShiftLarger,
  planAddConvSumin,
  addTermValue,
  scalarOperandInt8,
  scalarOperandWide,
} from './elementwise.js';
export { broadcastIndex } from './broadcast-index.js';
export { FixedAdd } from './modules/fixed-add.js';
export { FixedMul } from './modules/fixed-mul.js';
export { FixedMatMul } from './modules/fixed-matmul.js';
export { FixedCat } from './modules/fixed-cat.js';
export { FixedReduce } from './modules/fixed-reduce.js';
export { FixedMinMax } from './modules/fixed-min-max.js';
export { FixedCompare, type CompareKind } from './modules/fixed-compare.js';
export { FixedClamp } from './modules/fixed-clamp.js';
export { requantizePlanners } from './requantize-planners.js';
export { registerFixedPointCodecs } from './codecs.js';
export { fromJsonData } from './codec-json.js';
export type { SoftmaxQatForm, LayerNormQatForm } from './composite-forms.js';
export { FixedSoftmax } from './modules/fixed-softmax.js';
export { FixedLayerNorm, subPlanOf, type SubPlan } from './modules/fixed-layer-norm.js';
/** Extension point: an op a march's table gives `impl: 'composite'` takes its forms from `compositeOps`. */
export { type CompositeOp, compositeOps, compositeOpsOf, compositeQatForm } from './composites/composite-ops.js';
export { SoftmaxQat, LayerNormQat, type QatStep, type StepFakeQuant } from './composites/qat-forms.js';
