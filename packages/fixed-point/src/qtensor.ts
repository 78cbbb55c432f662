import { QUANT_STORAGE_DTYPE, type QuantDType } from '@qtk/spec';
import { InvalidArgumentError, QUANTIZED_VALUE, Tensor, type DType } from '@qtk/tensor';
import { intRange, sat } from './integer-math.js';

/** The storage dtype of each quantized dtype. */
export const STORAGE_DTYPE: Readonly<Record<QuantDType | 'qbool', DType>> = { ...QUANT_STORAGE_DTYPE, qbool: 'bool' };

export type QTensorDType = QuantDType | 'qbool';

/**
 * A quantized tensor of the fixed-point model: integer data (int8/int16/int32/bool storage), a
 * float32 scale per tensor or per channel along `axis`, zero point 0. Its real value is
 * `data * scale`.
 */
export class QTensor {
  /** The brand packages below @qtk/fixed-point recognise a quantized value by (isQuantizedValue). */
  get [QUANTIZED_VALUE](): true {
    return true;
  }

  readonly data: Tensor;
  readonly scale: Float32Array;
  /** -1 for a per-tensor scale, else the channel axis of `scale`. */
  readonly axis: number;
  readonly dtype: QTensorDType;

  constructor(data: Tensor, scale: ArrayLike<number>, dtype: QTensorDType, axis = -1) {
    if (data.dtype !== STORAGE_DTYPE[dtype]) {
      throw new InvalidArgumentError(
        `QTensor: ${dtype} data must be stored as ${STORAGE_DTYPE[dtype]}, got ${data.dtype}`,
      );
    }
    const s = Float32Array.from(scale);
    if (axis < 0 ? s.length !== 1 : s.length !== data.shape[axis]) {
      throw new InvalidArgumentError(
        `QTensor: ${axis < 0 ? 'a per-tensor scale has 1 element' : `a per-channel scale along axis ${axis} has ${data.shape[axis]} elements`}, got ${s.length}`,
      );
    }
    this.data = data;
    this.scale = s;
    this.axis = axis;
    this.dtype = dtype;
  }

  get shape(): readonly number[] {
    return this.data.shape;
  }

  /** The single scale of a per-tensor QTensor. */
  get tensorScale(): number {
    if (this.axis >= 0)
      throw new InvalidArgumentError(`QTensor: a per-channel (axis ${this.axis}) tensor has no single scale`);
    return this.scale[0]!;
  }

  /** The integers in row-major order (a view when the data is contiguous). */
  ints(): ArrayLike<number> {
    return this.data.values();
  }

  /** A QTensor with the same scale and dtype over new integer data of the same storage dtype. */
  withData(data: Tensor): QTensor {
    return new QTensor(data, this.scale, this.dtype, this.axis);
  }

  /** The real value `q * scale` as a float32 tensor. */
  dequantize(): Tensor {
    const q = this.data.values();
    const out = new Float32Array(q.length);
    const shape = this.data.shape;
    if (this.axis < 0) {
      const s = this.scale[0]!;
      for (let i = 0; i < q.length; i++) out[i] = q[i]! * s;
    } else {
      let inner = 1;
      for (let d = this.axis + 1; d < shape.length; d++) inner *= shape[d]!;
      const c = shape[this.axis]!;
      for (let i = 0; i < q.length; i++) out[i] = q[i]! * this.scale[Math.floor(i / inner) % c]!;
    }
    return new Tensor({ data: out, shape: [...shape], dtype: 'float32' });
  }

  /** Builds a QTensor from integer values (saturated to the dtype) in row-major order. */
  static fromInts(
    values: ArrayLike<number>,
    shape: readonly number[],
    scale: ArrayLike<number>,
    dtype: QTensorDType,
    axis = -1,
  ): QTensor {
    const storage = STORAGE_DTYPE[dtype];
    const t = new Tensor({ data: saturatedArray(values, dtype), shape: [...shape], dtype: storage });
    return new QTensor(t, scale, dtype, axis);
  }
}

function saturatedArray(
  values: ArrayLike<number>,
  dtype: QTensorDType,
): Int8Array | Int16Array | Int32Array | Uint8Array {
  const n = values.length;
  const out =
    dtype === 'qint8'
      ? new Int8Array(n)
      : dtype === 'qint16'
        ? new Int16Array(n)
        : dtype === 'qint32'
          ? new Int32Array(n)
          : new Uint8Array(n);
  intRange(dtype);
  for (let i = 0; i < n; i++) out[i] = sat(values[i]!, dtype);
  return out;
}
