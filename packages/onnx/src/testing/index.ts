// @qtk/onnx/testing: onnx.checker through python3-onnx, and small ONNX models built by hand, for the tests of
// @qtk/onnx and of the packages that build on it (@qtk/onnx-deploy).
export { findPythonWithOnnx, onnxCheck } from './python-onnx.js';
export { floatInitializer, handMadeModel, valueInfo } from './hand-made-model.js';
