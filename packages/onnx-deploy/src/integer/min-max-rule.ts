// FixedMinMax: both operands requantized to the output grid, then the integer maximum / minimum.
import { FixedMinMax, requantizeValue } from '@qtk/fixed-point';
import type { QTensor } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { binaryOperands, type Operand } from './binary-operands.js';
import { doubleScalar, requantize, toStorage } from './int-emit.js';

registerModuleExport(FixedMinMax, (s) => {
  const c = (s.module as FixedMinMax).config;
  const rank = (s.out as QTensor).shape.length;
  const onGrid = (o: Operand, k: 0 | 1): string =>
    o.kind === 'scalar'
      ? doubleScalar(s.b, requantizeValue(o.int, c.requants[k]), `${s.name}_scalar${k}`)
      : requantize(s.b, o.value, c.requants[k], -1, rank, `${s.name}_requant${k}`);
  const [a, b] = binaryOperands(s, c.scalars);
  const op = c.kind === 'maximum' ? 'Max' : 'Min';
  const y = s.b.node(op, [onGrid(a, 0), onGrid(b, 1)], `${s.name}_${op.toLowerCase()}`)[0]!;
  return [toStorage(s.b, y, c.outDtype, s.name)];
});
