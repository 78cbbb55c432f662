// Export-time checks that a requantize's float64 arithmetic stays on exact integers: the rules pass
// the largest |accumulator| their step can produce (docs/march-numerics.md, "Integer ONNX: tables,
// composites, resize") and get an error naming the step instead of a silently rounded graph.
import type { RequantizePlan } from '@qtk/fixed-point';
import { OnnxExportError } from '@qtk/onnx';

const EXACT = 2 ** 53;

/**
 * Throws unless `floor(acc·2^-pre)·m + 2^(n−1)` stays below 2^53 for every |acc| <= `accBound` and
 * every channel of the plan (the intermediate is clamped to int16 under the int16_intermediate rule).
 */
export function checkRequantizeExact(label: string, accBound: number, plan: RequantizePlan): void {
  for (let c = 0; c < plan.m.length; c++) {
    let t = Math.floor(accBound / 2 ** plan.pre[c]!);
    if (plan.rule === 'int16_intermediate') t = Math.min(t, 32768);
    const n = plan.n[c]!;
    const bound = t * Math.abs(plan.m[c]!) + (n === 0 ? 0 : 2 ** (n - 1));
    if (!(accBound < EXACT && bound < EXACT))
      throw new OnnxExportError(
        `exportOnnx: ${label}: the requantize of |acc| <= ${accBound} reaches ${bound} (channel ${c}), beyond exact float64 integers (2^53); use smaller rows or other scales`,
      );
  }
}
