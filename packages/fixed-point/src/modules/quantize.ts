import { Module } from '@qtk/nn';
import type { QParams, QuantDType } from '@qtk/spec';
import { DTypeError, InvalidArgumentError, Tensor, type RoundingMode } from '@qtk/tensor';
import { intRange, roundReal } from '../integer-math.js';
import { QTensor } from '../qtensor.js';

/** A float tensor into the fixed-point model (a QuantStub's job): `q = sat(R(x / s), dtype)` per tensor. */
export class Quantize extends Module {
  readonly scale: number;
  readonly dtype: QuantDType;
  readonly rounding: RoundingMode;

  constructor(qparams: Pick<QParams, 'scale' | 'dtype'>, rounding: RoundingMode = 'half_up') {
    super();
    if (qparams.scale.length !== 1)
      throw new InvalidArgumentError(
        `Quantize: activations are quantized per tensor, got ${qparams.scale.length} scales`,
      );
    this.scale = Math.fround(qparams.scale[0]!);
    this.dtype = qparams.dtype;
    this.rounding = rounding;
  }

  forward(x: Tensor): QTensor {
    if (!(x instanceof Tensor) || x.dtype !== 'float32') {
      throw new DTypeError(
        `Quantize: expected a float32 tensor, got ${x instanceof Tensor ? x.dtype : typeof x}; quantize model inputs, not values already quantized`,
      );
    }
    const v = x.values();
    const { min, max } = intRange(this.dtype);
    const q = new Float64Array(v.length);
    const s = this.scale;
    for (let i = 0; i < v.length; i++) {
      const r = roundReal(v[i]! / s, this.rounding);
      q[i] = r < min ? min : r > max ? max : r;
    }
    return QTensor.fromInts(q, x.shape, [s], this.dtype);
  }

  override extraRepr(): string {
    return `scale=${this.scale}, dtype=${this.dtype}, rounding=${this.rounding}`;
  }
}

/** A quantized tensor back to float (a DeQuantStub's job): `q * scale`, per tensor or per channel. */
export class Dequantize extends Module {
  static override readonly takesQuantizedValues = true;

  forward(x: QTensor): Tensor {
    if (!(x instanceof QTensor)) {
      const v = x as unknown;
      throw new DTypeError(
        `Dequantize: expected a quantized tensor, got ${v instanceof Tensor ? `a ${v.dtype} Tensor` : typeof v}; dequantize only values inside the quantized region`,
      );
    }
    return x.dequantize();
  }
}
