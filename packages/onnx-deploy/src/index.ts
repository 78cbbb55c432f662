// @qtk/onnx-deploy: quantized models to ONNX. QAT and calibrated models export as QDQ ONNX, fixed-point models as
// integer ONNX that onnxruntime runs bit for bit, any of them as the visualisation export; the rules plug into
// @qtk/onnx's export walk (registerModuleExport), registered when this entry is imported.
import { registerExportValue, registerModelKindExport } from '@qtk/onnx';
import { registerQdqExport } from './qdq/qdq-rules.js';
import { readQTensor } from './quantized-input.js';
// The integer rules of fixed-point modules register themselves on import.
import './integer/index.js';

export { type QuantizedInput, readQTensor } from './quantized-input.js';
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
export { runtimeCalibration, type RuntimeCalibrationOptions } from './calibrate/runtime-calibration.js';
export { exportQuantizedOnnxBytes, type ExportQuantizedOnnxOptions } from './visualize/export-quantized-onnx.js';
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

// fused, fake-quant and QAT modules export as Conv / QuantizeLinear / DequantizeLinear (docs/onnx-export.md)
registerQdqExport();
// fixed-point values (QTensor inputs and outputs of a segment) are written as their integers
registerExportValue(readQTensor);
// @qtk/onnx's walk refuses these kinds until their rules are registered
registerModelKindExport('qat');
registerModelKindExport('fixed-point');
