// @qtk/onnx-deploy/node: the quantized exports' files on disk, and onnxruntime-node (compareWithRuntime). The main
// entry's registrations (the QDQ and integer export rules) come first, so exports from here see them.
import './index.js';

export { exportQuantizedOnnx, writeQdqScales } from './node/export-quantized-files.js';
export { compareWithRuntime } from './node/compare-with-runtime.js';
