import type { OnnxBuilder } from './export-builder.js';

export type ReduceOp = 'ReduceSum' | 'ReduceMean' | 'ReduceMax' | 'ReduceMin';

/**
 * A reduction over `axes`: ReduceSum takes its axes as an input from opset 13, ReduceMean / ReduceMax / ReduceMin
 * from opset 18 (where the attribute is gone); before that they are the `axes` attribute.
 */
export function reduceNode(
  b: OnnxBuilder,
  op: ReduceOp,
  x: string,
  axes: number[],
  keepdims: boolean,
  name: string,
): string[] {
  const asInput = op === 'ReduceSum' ? b.opset >= 13 : b.opset >= 18;
  const keep = keepdims ? 1 : 0;
  if (asInput) return b.node(op, [x, b.intConst(axes, `${name}_axes`)], name, { keepdims: keep });
  return b.node(op, [x], name, { axes, keepdims: keep });
}
