// The input quantize of a deployed image model that takes centered YUV444 bytes (march-numerics.md,
// "YUV input"): per output channel c, one integer dot product over (Y, U, V) and a rounding shift
// replace "YUV → RGB, normalize, quantize":
//   acc = w[c,0]·y + w[c,1]·u + w[c,2]·v + bias[c]
//   q   = clamp(R(acc · 2^-shift[c]), min[c], max[c])
// with R the replaced Quantize's rounding. min/max are the outputs of a black and a white channel,
// which is the 0..255 clamp of the RGB value carried through the (increasing) normalization.
import type { QuantDType } from '@qtk/spec';
import {
  type ColorOrder,
  DTypeError,
  InvalidArgumentError,
  ShapeError,
  type Tensor,
  type YuvSwing,
  yuvColorSpace,
  type RoundingMode,
} from '@qtk/tensor';
import { intRange, roundReal } from '../integer-math.js';
import { QTensor } from '../qtensor.js';
import { PlannedModule } from './planned-module.js';

export interface YuvInputQuantizeConfig {
  /** What the plan was built from (kept to describe the module; the integers below are what runs). */
  readonly swing: YuvSwing;
  readonly order: ColorOrder;
  readonly mean: readonly number[];
  readonly std: readonly number[];
  /** The output's scale, dtype and rounding: the replaced Quantize's. */
  readonly scale: number;
  readonly dtype: QuantDType;
  readonly rounding: RoundingMode;
  /** Row-major [3 output channels × (Y, U, V)]. */
  readonly weight: Int32Array;
  readonly bias: Int32Array;
  readonly shift: Int32Array;
  readonly min: Int32Array;
  readonly max: Int32Array;
}

export interface YuvInputPlanOptions {
  swing: YuvSwing;
  /** The channel order the model was trained on (default 'rgb'). */
  order?: ColorOrder;
  /** Per channel (model order) or one for all: the model's input was ((pixel / 255) − mean) / std. */
  mean: number | readonly number[];
  std: number | readonly number[];
  scale: number;
  dtype: QuantDType;
  rounding: RoundingMode;
}

/** The largest fraction bits of a weight; 2^-24 keeps the approximation error far below one output step. */
const MAX_SHIFT = 24;
/** Below this many fraction bits the error bound (192.5 · 2^-shift steps) would exceed 0.19 steps. */
const MIN_SHIFT = 10;
const INT32_MAX = 2 ** 31 - 1;

function perChannel(v: number | readonly number[], what: string): number[] {
  const list = typeof v === 'number' ? [v, v, v] : [...v];
  if (list.length === 1) list.push(list[0]!, list[0]!);
  if (list.length !== 3 || list.some((x) => !Number.isFinite(x))) {
    throw new InvalidArgumentError(
      `yuv input: ${what} must be one finite number or three (one per channel), got ${JSON.stringify(v)}`,
    );
  }
  return list;
}

/**
 * The integer plan of a YUV input quantize: for output channel c the real map
 * `q = (toRgb_c · (yuv + 128 − offset) / 255 − mean_c) / std_c / scale` as `w · yuv + bias` with
 * `shift[c]` fraction bits, the most (up to 24) for which the weights and the bias fit int32. Then
 * |acc| < 385 · 2^31 < 2^40: every value is an exact integer in float64.
 */
export function planYuvInput(options: YuvInputPlanOptions): YuvInputQuantizeConfig {
  const order = options.order ?? 'rgb';
  if (order !== 'rgb' && order !== 'bgr')
    throw new InvalidArgumentError(`yuv input: order must be 'rgb' or 'bgr', got '${String(order)}'`);
  const space = yuvColorSpace(options.swing);
  const mean = perChannel(options.mean, 'mean');
  const std = perChannel(options.std, 'std');
  if (std.some((s) => s <= 0))
    throw new InvalidArgumentError(`yuv input: std must be positive, got [${std.join(', ')}]`);
  const s = Math.fround(options.scale);
  if (!(s > 0) || !Number.isFinite(s))
    throw new InvalidArgumentError(`yuv input: the scale must be positive and finite, got ${options.scale}`);
  const { min: qmin, max: qmax } = intRange(options.dtype);
  const weight = new Int32Array(9);
  const bias = new Int32Array(3);
  const shift = new Int32Array(3);
  const min = new Int32Array(3);
  const max = new Int32Array(3);
  for (let c = 0; c < 3; c++) {
    const color = order === 'rgb' ? c : 2 - c;
    const row = space.toRgb.slice(3 * color, 3 * color + 3);
    // RGB = row · centered + rgbOffset, centered = YUV byte − 128
    const rgbOffset = row.reduce((acc, m, j) => acc + m * (128 - space.yuvOffset[j]!), 0);
    const alpha = 1 / (255 * std[c]! * s);
    const beta = -mean[c]! / (std[c]! * s);
    const w = row.map((m) => alpha * m);
    const b = alpha * rgbOffset + beta;
    let f = MAX_SHIFT;
    const widest = (k: number) =>
      Math.max(...w.map((x) => Math.abs(Math.round(x * 2 ** k))), Math.abs(Math.round(b * 2 ** k)));
    while (f > 0 && widest(f) > INT32_MAX) f--;
    if (f < MIN_SHIFT) {
      throw new InvalidArgumentError(
        `yuv input: channel ${c} maps one RGB level to ${alpha.toPrecision(4)} output steps (scale ${s}, std ${std[c]}, mean ${mean[c]}), ` +
          'too many for int32 weights with 10 fraction bits; check the input quantize scale, mean and std',
      );
    }
    w.forEach((x, j) => {
      weight[3 * c + j] = Math.round(x * 2 ** f);
    });
    bias[c] = Math.round(b * 2 ** f);
    shift[c] = f;
    const clampQ = (v: number) => Math.min(qmax, Math.max(qmin, roundReal(v, options.rounding)));
    min[c] = clampQ(beta);
    max[c] = clampQ(255 * alpha + beta);
  }
  return {
    swing: options.swing,
    order,
    mean,
    std,
    scale: s,
    dtype: options.dtype,
    rounding: options.rounding,
    weight,
    bias,
    shift,
    min,
    max,
  };
}

/** Centered YUV444 int8 in (YUV byte − 128, NCHW, as a qint8 QTensor of scale 1), the model's quantized RGB input out. */
export class YuvInputQuantize extends PlannedModule<YuvInputQuantizeConfig> {
  get scale(): number {
    return this.config.scale;
  }

  get dtype(): QuantDType {
    return this.config.dtype;
  }

  forward(x: QTensor): QTensor {
    if (!(x instanceof QTensor) || x.dtype !== 'qint8' || x.axis >= 0 || x.scale[0] !== 1) {
      const v = x as unknown;
      throw new DTypeError(
        `YuvInputQuantize: expected centered YUV bytes as a qint8 QTensor of scale 1, got ${
          v instanceof QTensor ? `a ${v.dtype} QTensor of scale [${Array.from(v.scale).join(', ')}]` : typeof v
        }; wrap the int8 data with centeredYuvInput(...)`,
      );
    }
    if (x.shape.length !== 4 || x.shape[1] !== 3)
      throw new ShapeError(
        `YuvInputQuantize: expected an NCHW image with 3 channels, got shape [${x.shape.join(', ')}]`,
      );
    const [n, , h, w] = x.shape as [number, number, number, number];
    const plane = h * w;
    const src = x.ints();
    const out = new Float64Array(src.length);
    const c = this.config;
    for (let b = 0; b < n; b++) {
      const o = b * 3 * plane;
      for (let p = 0; p < plane; p++) {
        const y = src[o + p]!;
        const u = src[o + plane + p]!;
        const v = src[o + 2 * plane + p]!;
        for (let k = 0; k < 3; k++) {
          // |acc| < 2^40 (planYuvInput), so acc and acc · 2^-shift are exact in float64
          const acc = c.weight[3 * k]! * y + c.weight[3 * k + 1]! * u + c.weight[3 * k + 2]! * v + c.bias[k]!;
          const q = roundReal(acc / 2 ** c.shift[k]!, c.rounding);
          out[o + k * plane + p] = q < c.min[k]! ? c.min[k]! : q > c.max[k]! ? c.max[k]! : q;
        }
      }
    }
    return QTensor.fromInts(out, x.shape, [c.scale], c.dtype);
  }

  override extraRepr(): string {
    const c = this.config;
    return `swing=${c.swing}, order=${c.order}, scale=${c.scale}, dtype=${c.dtype}`;
  }
}

/** Centered YUV bytes (integers in −128..127, e.g. rgb2CenteredYuv's output or an int8 tensor) as the qint8 QTensor a YUV input takes. */
export function centeredYuvInput(x: Tensor): QTensor {
  const v = x.values();
  for (let i = 0; i < v.length; i++) {
    const e = v[i]!;
    if (!Number.isInteger(e) || e < -128 || e > 127) {
      throw new InvalidArgumentError(
        `centeredYuvInput: element ${i} is ${e}; centered YUV bytes are integers in -128..127 (round and clamp first, as rgb2CenteredYuv does)`,
      );
    }
  }
  return QTensor.fromInts(v, x.shape, [1], 'qint8');
}
