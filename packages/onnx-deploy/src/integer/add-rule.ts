// FixedAdd (add / sub): the march's two-term accumulator (add-terms.ts), then the requantize plan.
import { FixedAdd } from '@qtk/fixed-point';
import type { QTensor } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { addAccumulator } from './add-terms.js';
import { binaryOperands } from './binary-operands.js';
import { requantize, toStorage } from './int-emit.js';

registerModuleExport(FixedAdd, (s) => {
  const c = (s.module as FixedAdd).config;
  const [a, b] = binaryOperands(s, c.scalars);
  const acc = addAccumulator(s.b, a, b, c.plan, s.name);
  const rank = (s.out as QTensor).shape.length;
  return [toStorage(s.b, requantize(s.b, acc, c.requant, -1, rank, `${s.name}_requant`), c.outDtype, s.name)];
});
