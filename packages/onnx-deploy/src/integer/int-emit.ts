// ONNX subgraphs for the integer vocabulary of the fixed-point model (march-numerics.md, "Integer ONNX").
// Integer tensors travel in their storage type (int8 / int16 / int32 / bool); arithmetic runs in
// float64 (DOUBLE), where every intermediate the rules produce is an integer below 2^53 in magnitude,
// or such an integer times a power of two, so every Add, Sub, Mul and Floor is exact and the result
// does not depend on the order, fusion or vectorization the runtime chooses.
import { intRange, QTensor, type QTensorDType, type RequantizePlan } from '@qtk/fixed-point';
import { type ModuleExportStep, type OnnxBuilder, DataType, OnnxExportError } from '@qtk/onnx';

/** The ONNX element type that stores a quantized dtype. */
export const STORAGE_ELEM: Readonly<Record<QTensorDType, number>> = {
  qint8: DataType.INT8,
  qint16: DataType.INT16,
  qint32: DataType.INT32,
  qbool: DataType.BOOL,
};

/** The step's first argument, which a one-input integer op (`kind`: clamp, sum, ...) needs quantized. */
export function quantizedInput(s: ModuleExportStep, kind: string): QTensor {
  const x = s.args[0];
  if (!(x instanceof QTensor)) throw new OnnxExportError(`exportOnnx: ${kind} node '${s.name}' has no quantized input`);
  return x;
}

/** A float64 initializer. */
export function doubleConst(b: OnnxBuilder, values: ArrayLike<number>, name: string, shape?: number[]): string {
  const n = b.unique(name);
  const data = Float64Array.from(values);
  b.initializers.push({
    name: n,
    dims: shape ?? [data.length],
    data_type: DataType.DOUBLE,
    raw_data: new Uint8Array(data.buffer),
  });
  return n;
}

/** A float64 scalar initializer. */
export function doubleScalar(b: OnnxBuilder, v: number, name: string): string {
  return doubleConst(b, [v], name, []);
}

/** An initializer of integers in a storage type (int8, int16, int32 or int64). */
export function intConstOf(
  b: OnnxBuilder,
  values: ArrayLike<number>,
  elem: number,
  name: string,
  shape?: number[],
): string {
  const n = b.unique(name);
  const data =
    elem === DataType.INT8
      ? Int8Array.from(values)
      : elem === DataType.INT16
        ? Int16Array.from(values)
        : elem === DataType.INT32
          ? Int32Array.from(values)
          : BigInt64Array.from(Array.from(values, (v) => BigInt(v)));
  b.initializers.push({
    name: n,
    dims: shape ?? [data.length],
    data_type: elem,
    raw_data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  });
  return n;
}

export function cast(b: OnnxBuilder, x: string, elem: number, name: string): string {
  return b.node('Cast', [x], name, { to: elem })[0]!;
}

export function toDouble(b: OnnxBuilder, x: string, name: string): string {
  return cast(b, x, DataType.DOUBLE, `${name}_f64`);
}

/** A float64 value of exact integers back to the storage type of `dtype` (the values are in range). */
export function toStorage(b: OnnxBuilder, x: string, dtype: QTensorDType, name: string): string {
  return cast(b, x, STORAGE_ELEM[dtype], name);
}

export function binary(b: OnnxBuilder, op: 'Add' | 'Sub' | 'Mul' | 'Div', x: string, y: string, name: string): string {
  return b.node(op, [x, y], name)[0]!;
}

export function floor(b: OnnxBuilder, x: string, name: string): string {
  return b.node('Floor', [x], name)[0]!;
}

/** Clamps a float64 value to [lo, hi]. */
export function clip(b: OnnxBuilder, x: string, lo: number, hi: number, name: string): string {
  const [l, h] = [doubleScalar(b, lo, `${name}_lo`), doubleScalar(b, hi, `${name}_hi`)];
  // onnxruntime's Clip-11 takes float only: Max then Min, the same order Clip applies its bounds in
  if (b.opset < 12) return b.node('Min', [b.node('Max', [x, l], `${name}_max`)[0]!, h], name)[0]!;
  return b.node('Clip', [x, l, h], name)[0]!;
}

/** Saturates a float64 value to the range of `dtype`. */
export function saturate(b: OnnxBuilder, x: string, dtype: QTensorDType, name: string): string {
  const { min, max } = intRange(dtype);
  return clip(b, x, min, max, name);
}

/**
 * The shape that broadcasts `channels` per-channel values along `axis` of a rank-`rank` tensor
 * ([C] at the last axis, [C, 1, ...] elsewhere); a single value is a scalar.
 */
export function channelShape(channels: number, axis: number, rank: number): number[] {
  if (channels === 1) return [];
  const a = axis < 0 ? axis + rank : axis;
  return [channels, ...new Array<number>(rank - 1 - a).fill(1)];
}

/** Per-channel float64 constants, or one scalar when every channel has the same value. */
export function channelConst(
  b: OnnxBuilder,
  values: ArrayLike<number>,
  axis: number,
  rank: number,
  name: string,
): string {
  const list = Array.from(values);
  if (list.every((v) => v === list[0])) return doubleScalar(b, list[0]!, name);
  return doubleConst(b, list, name, channelShape(list.length, axis, rank));
}

/** `floor(x · 2^-n)` per channel (an arithmetic shift right; n = 0 leaves x). */
export function shiftRight(
  b: OnnxBuilder,
  x: string,
  n: ArrayLike<number>,
  axis: number,
  rank: number,
  name: string,
): string {
  const shifts = Array.from(n);
  if (shifts.every((s) => s === 0)) return x;
  const scaled = binary(
    b,
    'Mul',
    x,
    channelConst(
      b,
      shifts.map((s) => 2 ** -s),
      axis,
      rank,
      `${name}_inv`,
    ),
    `${name}_mul`,
  );
  return floor(b, scaled, name);
}

/**
 * Requantizes a float64 accumulator (exact integers) with a plan, channel c of the plan along `axis`, and
 * saturates it to the plan's dtype: the same integers as requantizeInto (see requantizeClamped).
 */
export function requantize(
  b: OnnxBuilder,
  acc: string,
  plan: RequantizePlan,
  axis: number,
  rank: number,
  name: string,
): string {
  const { min, max } = intRange(plan.outDtype);
  return requantizeClamped(b, acc, plan, axis, rank, min, max, name);
}

/**
 * `t = floor(acc·2^-pre)` (clamped to int16 under the int16_intermediate rule), `y = floor(t·(m·2^-n) + ½)`
 * (t·m where n = 0), clamped to [lo, hi] (within the plan's dtype). Float64 exact integers in and out.
 * `floor(t·(m·2^-n) + ½)` is requantizeInto's `floor((t·m + 2^(n-1))·2^-n)` bit for bit, in one float64
 * pass fewer: t·m (< 2^47) times a power of two is exact, and so is adding ½ to it (the exact sum is
 * representable); saturation and a fused ReLU / ReLU6 are one Clip.
 */
export function requantizeClamped(
  b: OnnxBuilder,
  acc: string,
  plan: RequantizePlan,
  axis: number,
  rank: number,
  lo: number,
  hi: number,
  name: string,
): string {
  let t = shiftRight(b, acc, plan.pre, axis, rank, `${name}_pre`);
  if (plan.rule === 'int16_intermediate') t = clip(b, t, -32768, 32767, `${name}_int16`);
  const m = Array.from(plan.m);
  const n = Array.from(plan.n);
  const scaled =
    m.every((v) => v === 1) && n.every((v) => v === 0)
      ? t
      : binary(
          b,
          'Mul',
          t,
          channelConst(
            b,
            m.map((v, c) => v * 2 ** -n[c]!),
            axis,
            rank,
            `${name}_mul`,
          ),
          `${name}_scaled`,
        );
  let y = scaled;
  if (n.some((v) => v !== 0)) {
    const half = channelConst(
      b,
      n.map((v) => (v === 0 ? 0 : 0.5)),
      axis,
      rank,
      `${name}_half`,
    );
    y = floor(b, binary(b, 'Add', scaled, half, `${name}_add`), `${name}_floor`);
  }
  return clip(b, y, lo, hi, name);
}
