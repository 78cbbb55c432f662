import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import {
  DTypeError,
  InvalidArgumentError,
  ShapeError,
  Tensor,
  type InterpolateOptions,
  type RoundingMode,
} from '@qtk/tensor';
import { roundReal, sat, shrR } from '../integer-math.js';
import { QTensor, STORAGE_DTYPE } from '../qtensor.js';
import { requantizeValue, type RequantizePlan } from '../requantize.js';

/** Fractional bits of a bilinear weight along one dim (docs/march-numerics.md, "Resize"). */
export const RESIZE_WEIGHT_BITS = 8;
const ONE = 1 << RESIZE_WEIGHT_BITS;

/** The two input taps and their integer weights (w0 + w1 = 256) of each output index along one dim. */
export interface BilinearTaps {
  readonly i0: Int32Array;
  readonly i1: Int32Array;
  readonly w0: Int32Array;
  readonly w1: Int32Array;
}

/**
 * PyTorch's source coordinate for output `o` (float32 arithmetic, as the float kernel), then the
 * weight of the upper tap `w1 = R(λ · 256)` and `w0 = 256 − w1`.
 * `scale` is the float32 output→input scale (in/out for a size, 1/scaleFactor for a factor).
 */
export function bilinearTaps(
  inSize: number,
  outSize: number,
  scale: number,
  alignCorners: boolean,
  rounding: RoundingMode = 'half_up',
): BilinearTaps {
  const fr = Math.fround;
  const i0 = new Int32Array(outSize);
  const i1 = new Int32Array(outSize);
  const w0 = new Int32Array(outSize);
  const w1 = new Int32Array(outSize);
  const a = alignCorners ? (outSize > 1 ? fr((inSize - 1) / (outSize - 1)) : 0) : fr(scale);
  for (let o = 0; o < outSize; o++) {
    let src = alignCorners ? fr(a * o) : fr(fr(a * (o + 0.5)) - 0.5);
    if (src < 0) src = 0;
    const lo = Math.min(Math.floor(src), inSize - 1);
    const lambda = fr(src - lo);
    i0[o] = lo;
    i1[o] = lo < inSize - 1 ? lo + 1 : lo;
    const w = Math.min(ONE, Math.max(0, roundReal(lambda * ONE, rounding)));
    w1[o] = w;
    w0[o] = ONE - w;
  }
  return { i0, i1, w0, w1 };
}

/** Output size and float32 output→input scales of interpolate(x, options), as the float op computes them. */
export function resizePlan(
  H: number,
  W: number,
  options: InterpolateOptions,
): { size: [number, number]; scales: [number, number] } {
  const pair = (v: number | readonly number[]): [number, number] => (typeof v === 'number' ? [v, v] : [v[0]!, v[1]!]);
  if (options.size !== undefined) {
    const size = pair(options.size);
    return { size, scales: [Math.fround(H / size[0]), Math.fround(W / size[1])] };
  }
  if (options.scaleFactor === undefined)
    throw new InvalidArgumentError('FixedResize: give exactly one of size and scaleFactor');
  const sf = pair(options.scaleFactor);
  const size: [number, number] = [Math.floor(H * sf[0]), Math.floor(W * sf[1])];
  if (size[0] < 1 || size[1] < 1)
    throw new ShapeError(
      `FixedResize: scaleFactor ${JSON.stringify(options.scaleFactor)} gives an empty output for ${H}×${W}`,
    );
  return { size, scales: [Math.fround(1 / sf[0]), Math.fround(1 / sf[1])] };
}

/**
 * Bilinear resize in fixed point (march-semantics.md §1 [choice], docs/march-numerics.md "Resize"):
 * per output pixel `acc = Σ wy_i · wx_j · x_ij` over the 4 taps (weights with 8 fractional bits,
 * so acc has 16), exact in float64. At the input's scale the output is `sat(shrR(acc, 16))`; with
 * its own output scale, acc at `s_in / 2^16` is requantized by the march's plan.
 */
export class FixedResize extends Module {
  static override readonly takesQuantizedValues = true;

  readonly options: InterpolateOptions | null;
  readonly outScale: number | null;
  readonly outDtype: QuantDType | null;
  readonly rounding: RoundingMode;
  private readonly plan: RequantizePlan | null;

  constructor(config: {
    options?: InterpolateOptions | null;
    output?: { scale: number; dtype: QuantDType; plan: RequantizePlan } | null;
    rounding?: RoundingMode;
  }) {
    super();
    this.options = config.options ?? null;
    this.outScale = config.output ? Math.fround(config.output.scale) : null;
    this.outDtype = config.output?.dtype ?? null;
    this.plan = config.output?.plan ?? null;
    this.rounding = config.rounding ?? 'half_up';
  }

  forward(x: QTensor, options?: InterpolateOptions): QTensor {
    if (!(x instanceof QTensor)) throw new DTypeError(`FixedResize: expected a quantized input, got ${typeof x}`);
    if (x.shape.length !== 4) throw new ShapeError(`FixedResize: expected [N, C, H, W], got [${x.shape}]`);
    const opts = options ?? this.options;
    if (!opts) throw new InvalidArgumentError('FixedResize: no resize options (size or scaleFactor)');
    if ((opts.mode ?? 'nearest') !== 'bilinear')
      throw new InvalidArgumentError(`FixedResize: only 'bilinear' is computed here, got '${opts.mode ?? 'nearest'}'`);
    const [N, C, H, W] = x.shape as [number, number, number, number];
    const { size, scales } = resizePlan(H, W, opts);
    const [OH, OW] = size;
    const align = opts.alignCorners ?? false;
    const th = bilinearTaps(H, OH, scales[0], align, this.rounding);
    const tw = bilinearTaps(W, OW, scales[1], align, this.rounding);
    const sIn = x.tensorScale;
    const dtype = this.outDtype ?? (x.dtype as QuantDType);
    if (dtype === 'qint32' || (x.dtype as string) === 'qbool')
      throw new DTypeError(`FixedResize: ${x.dtype} → ${dtype} is not a resize of activations`);
    const plan = this.plan;
    const storage = STORAGE_DTYPE[dtype];
    const out = new Tensor({
      data: new (storage === 'int8' ? Int8Array : Int16Array)(N * C * OH * OW),
      shape: [N, C, OH, OW],
      dtype: storage,
    });
    const o = out.data as Int8Array | Int16Array;
    const v = x.ints();
    let k = 0;
    for (let p = 0; p < N * C; p++) {
      const base = p * H * W;
      for (let oy = 0; oy < OH; oy++) {
        const r0 = base + th.i0[oy]! * W;
        const r1 = base + th.i1[oy]! * W;
        const wy0 = th.w0[oy]!;
        const wy1 = th.w1[oy]!;
        for (let ox = 0; ox < OW; ox++) {
          const c0 = tw.i0[ox]!;
          const c1 = tw.i1[ox]!;
          const wx0 = tw.w0[ox]!;
          const wx1 = tw.w1[ox]!;
          const acc = wy0 * (wx0 * v[r0 + c0]! + wx1 * v[r0 + c1]!) + wy1 * (wx0 * v[r1 + c0]! + wx1 * v[r1 + c1]!);
          o[k++] = plan ? requantizeValue(acc, plan) : sat(shrR(acc, 2 * RESIZE_WEIGHT_BITS), dtype);
        }
      }
    }
    return new QTensor(out, [plan ? this.outScale! : sIn], dtype);
  }

  override extraRepr(): string {
    return `bilinear${this.options ? `, ${JSON.stringify(this.options)}` : ''}${this.outScale !== null ? `, out=${this.outDtype}@${this.outScale}` : ''}`;
  }
}
