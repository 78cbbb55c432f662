// ONNX exports written to disk: the bytes of exportOnnxBytes written to a temporary file, then renamed into place.
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { OnnxExportError } from '../errors.js';
import { type ExportOnnxOptions, exportOnnxBytes } from '../export-onnx.js';
import type { ExampleInput } from '../export-values.js';

/**
 * Writes the bytes of an export to `path` (a temporary file, then renamed into place); a failure is an
 * OnnxExportError that names `what` (the exporting function) and the path.
 */
export function writeExportFile(what: string, path: string, bytes: Uint8Array): void {
  try {
    writeFileAtomicSync(path, bytes);
  } catch (e) {
    throw new OnnxExportError(`${what}: cannot write '${path}': ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Exports a model to an ONNX file (written to a temporary file, then renamed into place), with named
 * inputs and outputs and, by default, a dynamic batch dimension; the form follows the model: a float
 * model as float ONNX, a QAT or calibrated model as QDQ ONNX (QuantizeLinear / DequantizeLinear at each
 * fake-quant), a fixed-point model (convertFx) as integer ONNX that onnxruntime runs bit for bit
 * (docs/onnx-export.md); the QDQ and integer forms are registered by @qtk/onnx-deploy, which must be
 * imported for them. Returns the bytes (exportOnnxBytes gives them without a file).
 */
export function exportOnnx(
  gm: GraphModule | Module,
  exampleInputs: ExampleInput | readonly ExampleInput[],
  path: string,
  options: ExportOnnxOptions = {},
): Uint8Array {
  const bytes = exportOnnxBytes(gm, exampleInputs, options);
  writeExportFile('exportOnnx', path, bytes);
  return bytes;
}
