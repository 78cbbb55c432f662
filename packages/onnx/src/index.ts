export {
  OnnxError,
  OnnxFormatError,
  OnnxExternalDataError,
  OnnxLimitError,
  UnsupportedOnnxOpError,
  OnnxInputShapeError,
  OnnxExportError,
  OnnxAttributeError,
  type UnsupportedNode,
} from './errors.js';
export { OVERFLOW_MAGNITUDE } from './import/value-checks.js';
export { type DefaultedDim, describeDefaulted } from './import/input-shapes.js';
export { pytorchModulePath } from './import/pytorch-names.js';
export {
  importOnnx,
  OnnxGraphModule,
  SUPPORTED_ONNX_OPS,
  MIN_OPSET,
  MAX_OPSET,
  DEFAULT_MAX_ELEMENTS,
  type ImportOnnxOptions,
  type OnnxInputSpec,
} from './import/import-onnx.js';
export { readTensorProto, constToTensor, type OnnxConst } from './tensor-proto.js';
export { decodeTensor } from './onnx-schema.js';
export { exportOnnxBytes, type ExportOnnxOptions, type ExportedGraph } from './export-onnx.js';
export {
  RuntimeModel,
  RuntimeRunError,
  type OnnxRuntimeApi,
  type RuntimeSessionOptions,
  type RuntimeSession,
} from './runtime/runtime-session.js';
export { runtimeDifference, leadingRows } from './runtime/runtime-agreement.js';
export type { ExampleInput, RegisteredValue } from './export-values.js';
export {
  registerModuleExport,
  moduleExportRuleOf,
  hasOwnModuleExport,
  type ModuleExportRule,
  type ModuleExportStep,
} from './export-rules.js';
export { OnnxBuilder, type AttrValue } from './export-builder.js';
export type { ExportStep } from './export-modules.js';
// Reading and editing ONNX files without importing them (the CLI inspects exported files; tests alter them).
export {
  decodeModel,
  encodeModel,
  DataType,
  AttrType,
  type AttributeMsg,
  type ModelMsg,
  type GraphMsg,
  type NodeMsg,
  type TensorMsg,
  type ValueInfoMsg,
} from './onnx-schema.js';
export { NODE_VALUES_KEY } from './export-onnx.js';
export { registerExportSetup, type ExportSetup } from './export-rules.js';
export { QTK_VISUAL_DOMAIN, QTK_VISUAL_DOMAIN_VERSION } from './visual-domain.js';
// The importer's Gather, for probes that build the graph an imported Gather gives (@qtk/testkit).
export { onnxGather } from './import/functions.js';
// The float forms and the seams that packages registering export rules (@qtk/onnx-deploy) build on.
export {
  registerExactFloatExport,
  registerModelKindExport,
  isModelKindExported,
} from './export-rules.js';
export { registerExportValue, exportValueOf, type ExportValue, type ExportValueReader } from './export-values.js';
export { exportModule, convPads } from './export-modules.js';
export { exportCall } from './export-functions.js';
export { reduceNode, type ReduceOp } from './export-reduce.js';
export { int64Proto } from './tensor-proto.js';
