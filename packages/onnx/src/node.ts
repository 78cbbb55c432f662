// @qtk/onnx/node: ONNX files on disk and onnxruntime-node. The main entry is platform-neutral:
// importOnnx takes the model's bytes, exportOnnxBytes / exportQuantizedOnnxBytes / qdqScales give bytes.
// The main entry's registrations (the QDQ export rules) come first, so exports from here see them.
import './index.js';

export { importOnnx } from './node/import-onnx-file.js';
export { exportOnnx, exportQuantizedOnnx, writeQdqScales } from './node/export-onnx-files.js';
export { compareWithRuntime } from './node/compare-with-runtime.js';
