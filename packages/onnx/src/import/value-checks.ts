// Values an ONNX file may hold but no trained model means: non-finite attributes (refused) and initializers
// holding NaN, ±Infinity or magnitudes so large that the float forward pass overflows (warned about).
import type { Tensor } from '@qtk/tensor';
import { OnnxAttributeError } from '../errors.js';
import { AttrType, type NodeMsg } from '../onnx-schema.js';

/** Attributes where ±Infinity is a meaningful bound (Clip before opset 11: min = -inf means none). */
const INFINITY_ALLOWED: Readonly<Record<string, readonly string[]>> = { Clip: ['min', 'max'] };

/**
 * Throws OnnxAttributeError for a float attribute (FLOAT or FLOATS) holding NaN, or ±Infinity where
 * the operator has no use for it, naming the node and the attribute.
 */
export function checkFloatAttributes(n: NodeMsg, name: string): void {
  const opType = n.op_type ?? '';
  for (const a of n.attribute ?? []) {
    // files that leave `type` out are read by the field that is set
    const untyped = a.type === undefined || a.type === 0;
    const values =
      a.type === AttrType.FLOAT || (untyped && a.f !== undefined)
        ? [a.f ?? 0]
        : a.type === AttrType.FLOATS || untyped
          ? (a.floats ?? [])
          : [];
    const attribute = a.name ?? '';
    const infinityOk = INFINITY_ALLOWED[opType]?.includes(attribute) ?? false;
    const bad = values.find((v) => Number.isNaN(v) || (!Number.isFinite(v) && !infinityOk));
    if (bad !== undefined) {
      const shown = Number.isNaN(bad) ? 'NaN' : bad > 0 ? '+Infinity' : '-Infinity';
      throw new OnnxAttributeError(name, opType, attribute, values.length > 1 ? `[..., ${shown}, ...]` : shown);
    }
  }
}

/**
 * Magnitudes from which a float32 forward pass is expected to overflow: a product with an input of a
 * few thousand, summed over a few hundred terms, passes float32's maximum (3.4e38). Trained weights
 * sit many orders of magnitude below.
 */
export const OVERFLOW_MAGNITUDE = 1e30;

/** A warning for a float initializer holding NaN / ±Infinity or values of OVERFLOW_MAGNITUDE or more; else null. */
export function initializerWarning(name: string, t: Tensor): string | null {
  if (t.dtype !== 'float32') return null;
  const v = t.values() as Float32Array;
  let nonFinite = 0;
  let largest = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i]!;
    if (!Number.isFinite(x)) nonFinite++;
    else if (Math.abs(x) > largest) largest = Math.abs(x);
  }
  if (nonFinite > 0)
    return `initializer '${name}' holds ${nonFinite} non-finite value(s) (NaN or ±Infinity) of ${v.length}: outputs computed from it may be NaN; check the file or its exporter`;
  if (largest >= OVERFLOW_MAGNITUDE)
    return `initializer '${name}' holds values up to ${largest.toExponential(2)} in magnitude (${OVERFLOW_MAGNITUDE.toExponential(0)} or more): the float forward pass will likely overflow float32 (max 3.4e+38) to ±Infinity and give NaN outputs; check the file or its exporter`;
  return null;
}
