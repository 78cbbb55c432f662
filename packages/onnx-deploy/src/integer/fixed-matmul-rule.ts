// FixedMatMul as integer ONNX: both operands to float64, one MatMul there (every partial sum of the
// integer products stays below 2^53, so the runtime's summation order cannot round), saturated to
// int32 as QTK's intMatmul, then requantized by the plan.
import { FixedMatMul, intRange, type QTensor } from '@qtk/fixed-point';
import { OnnxExportError, registerModuleExport } from '@qtk/onnx';
import { clip, requantizeClamped, toDouble, toStorage } from './int-emit.js';

const MAX_ABS: Readonly<Record<string, number>> = { int8: 128, int16: 32768 };

registerModuleExport(FixedMatMul, ({ b, inputs, args, out, name, module }) => {
  const m = module as FixedMatMul;
  const [a, c] = args as [QTensor, QTensor];
  const k = a.shape[a.shape.length - 1]!;
  const bound = k * (MAX_ABS[a.data.dtype] ?? Infinity) * (MAX_ABS[c.data.dtype] ?? Infinity);
  if (!(bound < 2 ** 53))
    throw new OnnxExportError(
      `exportOnnx: FixedMatMul '${name}' sums ${k} products of ${a.data.dtype} and ${c.data.dtype} operands, beyond what float64 sums exactly; use int8 or int16 operands and a reduction below 2^23`,
    );
  const prod = b.node(
    'MatMul',
    [toDouble(b, inputs[0]!, `${name}_a`), toDouble(b, inputs[1]!, `${name}_b`)],
    `${name}_matmul`,
  )[0]!;
  const acc = bound > 2147483647 ? clip(b, prod, -2147483648, 2147483647, `${name}_acc_i32`) : prod;
  const rank = (out as QTensor).shape.length;
  const { min, max } = intRange(m.config.outDtype);
  const y = requantizeClamped(b, acc, m.config.requant, -1, rank, min, max, `${name}_requant`);
  return [toStorage(b, y, m.config.outDtype, name)];
});
