import { Module } from '@qtk/nn';
import { DTypeError, InvalidArgumentError, type RoundingMode } from '@qtk/tensor';
import { intRange, roundReal } from '../integer-math.js';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
import { QTensor } from '../qtensor.js';
import { intStorage, qtensorOf } from './binary-operands.js';

/**
 * clamp / abs, value preserving on the input's grid [choice]: clamp bounds become
 * `R(min / s)`, `R(max / s)`; abs is `sat(|q|)`. With an output fake-quant the result is then
 * requantized to it (`requant`), else the scale passes through.
 */
export class FixedClamp extends Module {
  static override readonly takesQuantizedValues = true;

  readonly kind: 'clamp' | 'abs';
  readonly rounding: RoundingMode;
  readonly requant: RequantizePlan | null;
  readonly outScale: number | null;

  constructor(
    kind: 'clamp' | 'abs',
    rounding: RoundingMode,
    requant: RequantizePlan | null = null,
    outScale: number | null = null,
  ) {
    super();
    this.kind = kind;
    this.rounding = rounding;
    this.requant = requant;
    this.outScale = outScale;
  }

  forward(x: QTensor, min?: number | null, max?: number | null): QTensor {
    if (!(x instanceof QTensor)) throw new DTypeError(`${this.kind} (fixed point): expected a quantized input`);
    if (x.axis >= 0) throw new InvalidArgumentError(`${this.kind} (fixed point): the input has a per-channel scale`);
    if (x.dtype === 'qbool') throw new DTypeError(`${this.kind} (fixed point): a qbool input has no numeric value`);
    const s = x.tensorScale;
    const r = intRange(x.dtype);
    const lo =
      this.kind === 'clamp' && min !== undefined && min !== null ? roundReal(min / s, this.rounding) : -Infinity;
    const hi =
      this.kind === 'clamp' && max !== undefined && max !== null ? roundReal(max / s, this.rounding) : Infinity;
    const v = x.ints();
    const y = intStorage(x.dtype, v.length) as Int8Array | Int16Array | Int32Array;
    for (let i = 0; i < v.length; i++) {
      let u = this.kind === 'abs' ? Math.abs(v[i]!) : v[i]!;
      u = u < lo ? lo : u > hi ? hi : u;
      y[i] = u < r.min ? r.min : u > r.max ? r.max : u;
    }
    if (!this.requant) return qtensorOf(y, x.shape, s, x.dtype);
    const out = intStorage(this.requant.outDtype, v.length) as Int8Array | Int16Array | Int32Array;
    requantizeInto(y, this.requant, 1, out);
    return qtensorOf(out, x.shape, this.outScale!, this.requant.outDtype);
  }

  override extraRepr(): string {
    return this.kind;
  }
}
