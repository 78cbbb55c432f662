// FixedReduce (sum / mean): the exact sum of the reduced integers in float64 (at most 2^31 int16
// values, below 2^53), saturated to int32, then the plan from s_acc = s_in / N (mean) or s_in (sum).
import { FixedReduce, type QTensor } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { clip, quantizedInput, requantize, toDouble, toStorage } from './int-emit.js';

function reducedAxes(axes: unknown, rank: number): number[] {
  if (axes === undefined || axes === null) return Array.from({ length: rank }, (_, i) => i);
  const list = typeof axes === 'number' ? [axes] : [...(axes as number[])];
  return [...new Set(list.map((a) => (a < 0 ? a + rank : a)))].sort((p, q) => p - q);
}

registerModuleExport(FixedReduce, (s) => {
  const m = s.module as FixedReduce;
  const x = quantizedInput(s, m.kind);
  const { b, name } = s;
  const axes = reducedAxes(s.args[1], x.shape.length);
  const keepdims = s.args[2] ? 1 : 0;
  const n = axes.reduce((p, a) => p * x.shape[a]!, 1);
  let acc = toDouble(b, s.inputs[0]!, name);
  if (axes.length > 0) {
    acc =
      b.opset >= 13
        ? b.node('ReduceSum', [acc, b.intConst(axes, `${name}_axes`)], `${name}_sum`, { keepdims })[0]!
        : b.node('ReduceSum', [acc], `${name}_sum`, { axes, keepdims })[0]!;
  }
  acc = clip(b, acc, -2147483648, 2147483647, `${name}_sat32`);
  // the module's plan for this input scale and count (planned as the module plans and caches it)
  const sIn = x.tensorScale;
  const plan = m.planner(m.kind === 'mean' ? sIn / n : sIn, m.outScale, m.outDtype);
  const rank = (s.out as QTensor).shape.length;
  return [toStorage(b, requantize(b, acc, plan, -1, rank, `${name}_requant`), m.outDtype, name)];
});
