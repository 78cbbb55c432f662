// The two operands of a fixed-point binary op: quantized tensors, or a scalar constant the
// conversion turned into a one-element quantized operand.
import type { QuantDType } from '@qtk/spec';
import { DTypeError, InvalidArgumentError, Tensor } from '@qtk/tensor';
import { broadcastIndex, type BroadcastIndex } from '../broadcast-index.js';
import type { ScalarOperand } from '../elementwise.js';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
import { QTensor, STORAGE_DTYPE, type QTensorDType } from '../qtensor.js';

export interface BinaryOperands {
  readonly a: ArrayLike<number>;
  readonly b: ArrayLike<number>;
  readonly index: BroadcastIndex;
}

function intsOf(
  label: string,
  v: unknown,
  scalar: ScalarOperand | null,
  which: string,
): { ints: ArrayLike<number>; shape: readonly number[] } {
  if (scalar) return { ints: [scalar.value], shape: [] };
  if (!(v instanceof QTensor))
    throw new DTypeError(
      `${label} (fixed point): its ${which} operand must be a quantized tensor, got ${v instanceof Tensor ? `a ${v.dtype} Tensor` : typeof v}`,
    );
  if (v.axis >= 0)
    throw new InvalidArgumentError(
      `${label} (fixed point): its ${which} operand has a per-channel scale; elementwise ops take per-tensor operands`,
    );
  return { ints: v.ints(), shape: v.shape };
}

/** Integers of both operands (a scalar slot takes its converted operand) and the broadcast index. */
export function binaryOperands(
  label: string,
  x: unknown,
  y: unknown,
  scalars: readonly [ScalarOperand | null, ScalarOperand | null],
): BinaryOperands {
  const a = intsOf(label, x, scalars[0], 'first');
  const b = intsOf(label, y, scalars[1], 'second');
  return { a: a.ints, b: b.ints, index: broadcastIndex(a.shape, b.shape) };
}

/** A zeroed integer array of a quantized dtype's storage. */
export function intStorage(dtype: QTensorDType, n: number): Int8Array | Int16Array | Int32Array | Uint8Array {
  const s = STORAGE_DTYPE[dtype];
  return s === 'int8'
    ? new Int8Array(n)
    : s === 'int16'
      ? new Int16Array(n)
      : s === 'int32'
        ? new Int32Array(n)
        : new Uint8Array(n);
}

/** A QTensor over integers already in range. */
export function qtensorOf(
  data: Int8Array | Int16Array | Int32Array | Uint8Array,
  shape: readonly number[],
  scale: number,
  dtype: QTensorDType,
): QTensor {
  return new QTensor(new Tensor({ data, shape: [...shape], dtype: STORAGE_DTYPE[dtype] }), [scale], dtype);
}

/** Broadcasts the operands and maps each pair of integers to an output integer already in range of `dtype` (comparisons, maximum/minimum). */
export function mapBinary(
  label: string,
  x: unknown,
  y: unknown,
  scalars: readonly [ScalarOperand | null, ScalarOperand | null],
  dtype: QTensorDType,
  scale: number,
  f: (a: number, b: number) => number,
): QTensor {
  const { a, b, index } = binaryOperands(label, x, y, scalars);
  const n = index.ia.length;
  const out = intStorage(dtype, n);
  for (let i = 0; i < n; i++) out[i] = f(a[index.ia[i]!]!, b[index.ib[i]!]!);
  return qtensorOf(out, index.shape, scale, dtype);
}

/** The output grid and the scalar slots of a fixed-point binary module's config. */
export interface BinaryOutputConfig {
  readonly outScale: number;
  readonly outDtype: QuantDType;
  /** A scalar argument in slot 0 or 1 (add_scalar, sub with a constant), already a quantized operand. */
  readonly scalars: readonly [ScalarOperand | null, ScalarOperand | null];
}

/** What a binary op that requantizes its accumulator needs: the plan, the output grid and the scalar slots. */
export interface RequantizedBinaryConfig extends BinaryOutputConfig {
  readonly requant: RequantizePlan;
}

/** Broadcasts the operands, takes `acc = accumulate(a, b)` per element (exact, float64) and requantizes it to the output (add/sub, mul). */
export function requantizedBinary(
  label: string,
  x: unknown,
  y: unknown,
  c: RequantizedBinaryConfig,
  accumulate: (a: number, b: number) => number,
): QTensor {
  const { a, b, index } = binaryOperands(label, x, y, c.scalars);
  const n = index.ia.length;
  const acc = new Float64Array(n);
  for (let i = 0; i < n; i++) acc[i] = accumulate(a[index.ia[i]!]!, b[index.ib[i]!]!);
  const out = intStorage(c.outDtype, n) as Int8Array | Int16Array | Int32Array;
  requantizeInto(acc, c.requant, 1, out);
  return qtensorOf(out, index.shape, c.outScale, c.outDtype);
}
