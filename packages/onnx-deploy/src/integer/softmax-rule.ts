// FixedSoftmax: d = x − max(x) requantized, e = exp table(d), S = Σe requantized, r = reciprocal
// table(S), y = e·r requantized; each step the operations of FixedSoftmax.forward, in float64.
import { FixedSoftmax, type QTensor } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { reduce } from './reduce-emit.js';
import { checkRequantizeExact } from './exact-bounds.js';
import { binary, requantize, toDouble, toStorage } from './int-emit.js';
import { applyTablePlans } from './table-emit.js';
import type { ObserverDType } from '@qtk/spec';

registerModuleExport(FixedSoftmax, ({ b, inputs, name, module, args }) => {
  const c = (module as FixedSoftmax).config;
  const rank = (args[0] as QTensor).shape.length;
  const axis = c.dim < 0 ? c.dim + rank : c.dim;
  const n = (what: string) => `${name}_${what}`;
  const size = (args[0] as QTensor).shape[axis]!;
  // |x − max| <= 2^16, |Σe| <= size·2^15, |e·r| <= 2^30
  checkRequantizeExact(`softmax '${name}' x − max`, 2 ** 16, c.sub);
  checkRequantizeExact(`softmax '${name}' Σe`, size * 2 ** 15, c.sum);
  checkRequantizeExact(`softmax '${name}' e·r`, 2 ** 30, c.mul);
  const x = toDouble(b, inputs[0]!, name);
  const max = reduce(b, 'ReduceMax', x, [axis], 1, n('max'));
  const d = requantize(b, binary(b, 'Sub', x, max, n('x_minus_max')), c.sub, -1, rank, n('d'));
  const e = applyTablePlans(b, d, [c.exp], -1, rank, n('exp'));
  const sum = requantize(b, reduce(b, 'ReduceSum', e, [axis], 1, n('sum_e')), c.sum, -1, rank, n('sum'));
  const r = applyTablePlans(b, sum, [c.reciprocal], -1, rank, n('reciprocal'));
  const y = requantize(b, binary(b, 'Mul', e, r, n('e_r')), c.mul, -1, rank, n('y'));
  return [toStorage(b, y, c.outDtype as ObserverDType, name)];
});
