// ONNX exports written to disk: the bytes of exportOnnxBytes / exportQuantizedOnnxBytes / qdqScales,
// each written to a temporary file, then renamed into place.
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { OnnxExportError } from '../errors.js';
import { type ExampleInput, type ExportOnnxOptions, exportOnnxBytes } from '../export-onnx.js';
import { type QdqScales, qdqScales } from '../qdq/qdq-scales.js';
import { type ExportQuantizedOnnxOptions, exportQuantizedOnnxBytes } from '../visualize/export-quantized-onnx.js';

function write(what: string, path: string, bytes: Uint8Array): void {
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
 * (docs/onnx-export.md). Returns the bytes (exportOnnxBytes gives them without a file).
 */
export function exportOnnx(
  gm: GraphModule | Module,
  exampleInputs: ExampleInput | readonly ExampleInput[],
  path: string,
  options: ExportOnnxOptions = {},
): Uint8Array {
  const bytes = exportOnnxBytes(gm, exampleInputs, options);
  write('exportOnnx', path, bytes);
  return bytes;
}

/**
 * Writes the visualisation export of a QAT, calibrated or fixed-point model to `path` (a temporary
 * file renamed into place, as exportOnnx does) and returns the bytes. See exportQuantizedOnnxBytes.
 */
export function exportQuantizedOnnx(
  gm: GraphModule,
  exampleInputs: ExampleInput | readonly ExampleInput[],
  path: string,
  options: ExportQuantizedOnnxOptions = {},
): Uint8Array {
  const bytes = exportQuantizedOnnxBytes(gm, exampleInputs, options);
  write('exportQuantizedOnnx', path, bytes);
  return bytes;
}

/** Writes the scales of a QDQ model (qdqScales) as JSON to `path` (conventionally qdqScalesPath(model)); returns them. */
export function writeQdqScales(onnx: Uint8Array, path: string): QdqScales {
  const scales = qdqScales(onnx);
  write('writeQdqScales', path, new TextEncoder().encode(`${JSON.stringify(scales, null, 2)}\n`));
  return scales;
}
