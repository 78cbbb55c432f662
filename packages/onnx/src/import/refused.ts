// Operators the importer knows but refuses, each with why and what to do instead, so the error names more
// than "operator not supported". They stay out of SUPPORTED_ONNX_OPS.
import type { NodeMsg } from '../onnx-schema.js';

const intAttr = (n: NodeMsg, name: string): number => Number((n.attribute ?? []).find((a) => a.name === name)?.i ?? 0);

function quantizeReason(n: NodeMsg): string {
  const block = intAttr(n, 'block_size');
  const what =
    block > 0
      ? `blocked quantization (block_size = ${block}, opset 21) is not supported, nor are QuantizeLinear / DequantizeLinear at all`
      : 'QuantizeLinear / DequantizeLinear (a quantized QDQ model) are not imported';
  return `${what}: QTK quantizes float models itself; import the float model and quantize it with QTK (qtk quantize)`;
}

/** The reason given for each refused operator of the default domain. */
export const REFUSED_ONNX_OPS: Readonly<Record<string, (n: NodeMsg) => string>> = {
  DeformConv: () =>
    'DeformConv (opset 19) samples its input at offsets computed from the data, which no QTK module or march does; replace it by a Conv before exporting',
  GridSample: () =>
    'GridSample (opset 16, 20) reads its input at positions computed from the data, which no QTK module or march does; keep it out of the model QTK imports (split the model before it)',
  AffineGrid: () =>
    'AffineGrid (opset 20) builds a sampling grid for GridSample, which QTK does not import; keep both out of the model QTK imports (split the model before them)',
  QuantizeLinear: quantizeReason,
  DequantizeLinear: quantizeReason,
};
