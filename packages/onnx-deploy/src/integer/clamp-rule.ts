// FixedClamp (clamp / abs): on the input's grid, bounds `R(min / s)` and `R(max / s)` (constants of
// the call), saturation to the input dtype, then the output requantize when the op has one.
import { FixedClamp, roundReal } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { clip, quantizedInput, doubleScalar, requantize, saturate, toDouble, toStorage } from './int-emit.js';

function boundOf(v: unknown): number | null {
  return typeof v === 'number' ? v : null;
}

registerModuleExport(FixedClamp, (s) => {
  const m = s.module as FixedClamp;
  const x = quantizedInput(s, m.kind);
  const { b, name } = s;
  const sc = x.tensorScale;
  let v = toDouble(b, s.inputs[0]!, name);
  if (m.kind === 'abs') v = b.node('Abs', [v], `${name}_abs`)[0]!;
  const min = m.kind === 'clamp' ? boundOf(s.args[1]) : null;
  const max = m.kind === 'clamp' ? boundOf(s.args[2]) : null;
  const lo = min === null ? null : roundReal(min / sc, m.rounding);
  const hi = max === null ? null : roundReal(max / sc, m.rounding);
  if (lo !== null && hi !== null && lo > hi) {
    // QTK tests the lower bound first: below lo gives lo, everything else hi
    const below = b.node('Less', [v, doubleScalar(b, lo, `${name}_lo`)], `${name}_below`)[0]!;
    v = b.node(
      'Where',
      [below, doubleScalar(b, lo, `${name}_lo_v`), doubleScalar(b, hi, `${name}_hi_v`)],
      `${name}_where`,
    )[0]!;
  } else if (lo !== null || hi !== null) {
    v = clip(b, v, lo ?? Number.NEGATIVE_INFINITY, hi ?? Number.POSITIVE_INFINITY, `${name}_bounds`);
  }
  // then the input dtype's range (a separate clip: the bounds may lie outside it)
  v = saturate(b, v, x.dtype, `${name}_sat`);
  if (!m.requant) return [toStorage(b, v, x.dtype, name)];
  const y = requantize(b, v, m.requant, -1, x.shape.length, `${name}_requant`);
  return [toStorage(b, y, m.requant.outDtype, name)];
});
