// FixedTableOp: y = table(x) elementwise, one table or one per channel (PReLU).
import { FixedTableOp, type QTensor } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { toDouble, toStorage } from './int-emit.js';
import { applyTablePlans } from './table-emit.js';
import type { ObserverDType } from '@qtk/spec';

registerModuleExport(FixedTableOp, ({ b, inputs, name, module, args }) => {
  const c = (module as FixedTableOp).config;
  const rank = (args[0] as QTensor).shape.length;
  const y = applyTablePlans(b, toDouble(b, inputs[0]!, name), c.plans, c.channelAxis ?? 1, rank, `${name}_table`);
  return [toStorage(b, y, c.outDtype as ObserverDType, name)];
});
