// The accumulator of an add / sub plan (AddPlan v2) as ONNX float64 arithmetic, shared by FixedAdd
// and FixedCompare: each term `v' = negate ? sat(-v, qint8) : v`, then `v'·m·2^shift` or
// `floor(v'·2^shift)·m`; their sum, saturated to int32 for a conv-with-sumin accumulator.
import { addTermValue, type AddPlan, type AddTerm } from '@qtk/fixed-point';
import type { OnnxBuilder } from '@qtk/onnx';
import type { Operand } from './binary-operands.js';
import { binary, clip, doubleScalar, floor } from './int-emit.js';

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/** One term as a float64 value, or a constant for a scalar slot (a tensor's zero term stays: it broadcasts). */
function termOf(b: OnnxBuilder, v: Operand, t: AddTerm, name: string): string | number {
  if (v.kind === 'scalar') return addTermValue(v.int, t);
  let u = v.value;
  if (t.negate)
    u = clip(b, binary(b, 'Mul', u, doubleScalar(b, -1, `${name}_neg1`), `${name}_neg`), -128, 127, `${name}_sat8`);
  if (t.shift >= 0) {
    const k = t.m * 2 ** t.shift;
    return k === 1 ? u : binary(b, 'Mul', u, doubleScalar(b, k, `${name}_k`), `${name}_mul`);
  }
  const shifted = floor(
    b,
    binary(b, 'Mul', u, doubleScalar(b, 2 ** t.shift, `${name}_inv`), `${name}_scale`),
    `${name}_shr`,
  );
  return t.m === 1 ? shifted : binary(b, 'Mul', shifted, doubleScalar(b, t.m, `${name}_m`), `${name}_mul`);
}

/**
 * `acc = term_a(a) + term_b(b)` (broadcasting like the module), int32-saturated when the plan says
 * so. At least one operand is a tensor, so the result is an ONNX value.
 */
export function addAccumulator(b: OnnxBuilder, a: Operand, c: Operand, plan: AddPlan, name: string): string {
  const ta = termOf(b, a, plan.a, `${name}_a`);
  const tb = termOf(b, c, plan.b, `${name}_b`);
  const asValue = (t: string | number, k: string): string =>
    typeof t === 'string' ? t : doubleScalar(b, t, `${name}_${k}`);
  // a scalar slot's zero term (x ± 0) adds nothing
  let acc: string;
  if (typeof ta === 'string' && tb === 0) acc = ta;
  else if (typeof tb === 'string' && ta === 0) acc = tb;
  else acc = binary(b, 'Add', asValue(ta, 'a'), asValue(tb, 'b'), `${name}_acc`);
  return plan.saturate32 ? clip(b, acc, INT32_MIN, INT32_MAX, `${name}_sat32`) : acc;
}
