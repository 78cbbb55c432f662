// A brand for quantized values (@qtk/fixed-point's QTensor) that packages below fixed-point can recognise: the
// graph runner names a float module given one (an op added to a converted model by hand) instead of reporting
// whatever the float op failed on.

/** The property a quantized value carries, true. */
export const QUANTIZED_VALUE: unique symbol = Symbol.for('qtk.quantized-value');

/** Whether `v` is a quantized value (a fixed-point QTensor). */
export function isQuantizedValue(v: unknown): boolean {
  return typeof v === 'object' && v !== null && (v as { [QUANTIZED_VALUE]?: unknown })[QUANTIZED_VALUE] === true;
}
