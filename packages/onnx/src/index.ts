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
export { OVERFLOW_MAGNITUDE } from './value-checks.js';
export { type DefaultedDim, describeDefaulted } from './import-input-shapes.js';
export { pytorchModulePath } from './pytorch-names.js';
export {
  importOnnx,
  OnnxGraphModule,
  SUPPORTED_ONNX_OPS,
  MIN_OPSET,
  MAX_OPSET,
  DEFAULT_MAX_ELEMENTS,
  type ImportOnnxOptions,
  type OnnxInputSpec,
} from './import-onnx.js';
export { readTensorProto, constToTensor, type OnnxConst } from './tensor-proto.js';
export { decodeTensor } from './onnx-schema.js';
export { exportOnnxBytes, type ExportOnnxOptions, type ExampleInput } from './export-onnx.js';
export {
  registerModuleExport,
  moduleExportRuleOf,
  hasOwnModuleExport,
  type ModuleExportRule,
  type ModuleExportStep,
} from './export-rules.js';
export { OnnxBuilder, type AttrValue } from './export-builder.js';
export type { ExportStep } from './export-modules.js';
export {
  formatRuntimeComparison,
  type RuntimeComparison,
  type NodeComparison,
  type CompareOptions,
  type FloatTolerance,
  type RuntimeComparer,
} from './compare-runtime.js';
export {
  STORAGE_ELEM,
  doubleConst,
  doubleScalar,
  intConstOf,
  cast,
  toDouble,
  toStorage,
  binary,
  floor,
  clip,
  saturate,
  channelShape,
  channelConst,
  shiftRight,
  requantize,
} from './integer/int-emit.js';
export {
  exportQuantizedOnnxBytes,
  QTK_VISUAL_DOMAIN,
  QTK_VISUAL_DOMAIN_VERSION,
  type ExportQuantizedOnnxOptions,
} from './visualize/export-quantized-onnx.js';
// Reading and editing ONNX files without importing them (the CLI inspects exported files; tests alter them).
export {
  decodeModel,
  encodeModel,
  DataType,
  type ModelMsg,
  type GraphMsg,
  type NodeMsg,
  type TensorMsg,
  type ValueInfoMsg,
} from './onnx-schema.js';
export { NODE_VALUES_KEY } from './export-onnx.js';
export { registerExportSetup, type ExportSetup } from './export-rules.js';
export { registerQdqExport } from './qdq/qdq-rules.js';
export { INT16_QDQ_OPSET, PER_CHANNEL_QDQ_OPSET } from './qdq/qdq-emit.js';
export {
  qdqScales,
  qdqScalesPath,
  QDQ_SCALES_FORMAT,
  QDQ_SCALES_VERSION,
  type QdqScales,
  type QdqTensorScale,
} from './qdq/qdq-scales.js';

import { registerQdqExport } from './qdq/qdq-rules.js';
// fused, fake-quant and QAT modules export as Conv / QuantizeLinear / DequantizeLinear (docs/onnx-export.md)
registerQdqExport();
