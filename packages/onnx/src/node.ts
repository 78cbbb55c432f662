// @qtk/onnx/node: ONNX files on disk. The main entry is platform-neutral: importOnnx takes the model's bytes,
// exportOnnxBytes gives bytes. The quantized exports' files and onnxruntime-node are in @qtk/onnx-deploy/node.
export { importOnnx } from './node/import-onnx-file.js';
export { exportOnnx, writeExportFile } from './node/export-onnx-files.js';
