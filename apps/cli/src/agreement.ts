import type { Tensor } from '@qtk/tensor';
import { CliError } from './io.js';

/**
 * max |fixed-point − fake-quant| over one batch's outputs (`where`: which samples, for the messages).
 * Outputs holding NaN or ±Infinity, or of different sizes, leave the agreement unmeasurable: a CliError
 * naming `model` (with the warnings gathered so far, which usually say why), so no such model is written.
 */
export function agreement(
  fakeQuant: Tensor,
  fixedPoint: Tensor,
  model: string,
  warnings: readonly string[] = [],
  where = 'the first calibration batch',
): number {
  const a = fakeQuant.values();
  const b = fixedPoint.values();
  const also = warnings.length ? `\nwarnings:\n${warnings.map((w) => `  - ${w}`).join('\n')}` : '';
  if (a.length !== b.length) {
    throw new CliError(
      `cannot quantize ${model}: the fixed-point model gives ${b.length} output values on ${where}, the fake-quant model ${a.length}; nothing written${also}`,
    );
  }
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(Number(a[i]) - Number(b[i])));
  if (Number.isFinite(maxDiff)) return maxDiff;
  const which = nonFinite(a) ? 'fake-quant' : 'fixed-point';
  throw new CliError(
    `cannot quantize ${model}: the ${which} model gives non-finite outputs (NaN or ±Infinity) on ${where}, so its agreement cannot be measured; nothing written${also}`,
  );
}

function nonFinite(v: ArrayLike<number | bigint>): boolean {
  for (let i = 0; i < v.length; i++) if (!Number.isFinite(Number(v[i]))) return true;
  return false;
}

/**
 * The agreement line's text: the largest difference in the model's output units, and as a share of the
 * fake-quant outputs' range (max − min over `fakeQuant`), so 0.02 reads differently for logits of ±1 and ±100.
 */
export function agreementText(maxDiff: number, fakeQuant: Tensor, where: string): string {
  const v = fakeQuant.values();
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < v.length; i++) {
    lo = Math.min(lo, Number(v[i]));
    hi = Math.max(hi, Number(v[i]));
  }
  const range = hi - lo;
  const share =
    range > 0 ? `, ${((100 * maxDiff) / range).toPrecision(3)} % of the output range ${range.toPrecision(3)}` : '';
  return `max |fixed-point - fake-quant| = ${maxDiff.toPrecision(3)} (output units${share}) on ${where}`;
}
