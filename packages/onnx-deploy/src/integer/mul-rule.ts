// FixedMul: `acc = x·y` (a product of two int8 / int16 integers, exact in float64), then the requantize plan.
import { FixedMul } from '@qtk/fixed-point';
import type { QTensor } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { binaryOperands, type Operand } from './binary-operands.js';
import { binary, doubleScalar, requantize, toStorage } from './int-emit.js';

registerModuleExport(FixedMul, (s) => {
  const c = (s.module as FixedMul).config;
  const [a, b] = binaryOperands(s, c.scalars);
  const value = (o: Operand, k: string) => (o.kind === 'tensor' ? o.value : doubleScalar(s.b, o.int, `${s.name}_${k}`));
  const acc = binary(s.b, 'Mul', value(a, 'a'), value(b, 'b'), `${s.name}_acc`);
  const rank = (s.out as QTensor).shape.length;
  return [toStorage(s.b, requantize(s.b, acc, c.requant, -1, rank, `${s.name}_requant`), c.outDtype, s.name)];
});
