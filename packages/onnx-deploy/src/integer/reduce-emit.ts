// Opset-dependent form of the reductions the integer rules use: ReduceSum / ReduceMax take their
// axes as an input from opsets 13 / 18 (an attribute before).
import type { OnnxBuilder } from '@qtk/onnx';

/** Sums (or takes the max) over `axes`, keeping them as size-1 dims unless `keepdims` is 0. */
export function reduce(
  b: OnnxBuilder,
  op: 'ReduceSum' | 'ReduceMax',
  x: string,
  axes: number[],
  keepdims: 0 | 1,
  name: string,
): string {
  const axesAsInput = op === 'ReduceSum' ? b.opset >= 13 : b.opset >= 18;
  if (axesAsInput) return b.node(op, [x, b.intConst(axes, `${name}_axes`)], name, { keepdims })[0]!;
  return b.node(op, [x], name, { axes, keepdims })[0]!;
}
