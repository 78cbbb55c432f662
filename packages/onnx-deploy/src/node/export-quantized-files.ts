// The quantized exports written to disk: the visualisation export and the QDQ scales, each written to a
// temporary file, then renamed into place (as @qtk/onnx's exportOnnx does).
import type { GraphModule } from '@qtk/ir';
import { writeExportFile } from '@qtk/onnx/node';
import type { QuantizedInput } from '../quantized-input.js';
import { type QdqScales, qdqScales } from '../qdq/qdq-scales.js';
import { type ExportQuantizedOnnxOptions, exportQuantizedOnnxBytes } from '../visualize/export-quantized-onnx.js';

/**
 * Writes the visualisation export of a QAT, calibrated or fixed-point model to `path` (a temporary
 * file renamed into place, as exportOnnx does) and returns the bytes. See exportQuantizedOnnxBytes.
 */
export function exportQuantizedOnnx(
  gm: GraphModule,
  exampleInputs: QuantizedInput | readonly QuantizedInput[],
  path: string,
  options: ExportQuantizedOnnxOptions = {},
): Uint8Array {
  const bytes = exportQuantizedOnnxBytes(gm, exampleInputs, options);
  writeExportFile('exportQuantizedOnnx', path, bytes);
  return bytes;
}

/** Writes the scales of a QDQ model (qdqScales) as JSON to `path` (conventionally qdqScalesPath(model)); returns them. */
export function writeQdqScales(onnx: Uint8Array, path: string): QdqScales {
  const scales = qdqScales(onnx);
  writeExportFile('writeQdqScales', path, new TextEncoder().encode(`${JSON.stringify(scales, null, 2)}\n`));
  return scales;
}
