// ONNX Resize over any dims: each resized dim maps every output index to a few input taps with weights
// (nearest: 2 taps with one weight 1; linear: 2; cubic: 4), applied one dim at a time. The mapping follows
// the ONNX specification's reference implementation, including its float output width for align_corners.
import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import type { Tensor } from '../tensor.js';
import { shapeStr } from './conv-args.js';
import { f32, make, requireFloat } from './util.js';

export type ResizeMode = 'nearest' | 'linear' | 'cubic';
export type ResizeCoordinateMode =
  | 'half_pixel'
  | 'pytorch_half_pixel'
  | 'half_pixel_symmetric'
  | 'align_corners'
  | 'asymmetric'
  | 'tf_half_pixel_for_nn';
export type ResizeNearestMode = 'round_prefer_floor' | 'round_prefer_ceil' | 'floor' | 'ceil';

export interface ResizeOptions {
  /**
   * Output size per dim (all dims); give this, scales, or both. With both, sizes are the output and scales
   * map output coordinates to input ones (ONNX's keep_aspect_ratio_policy, one scale for several dims).
   */
  sizes?: readonly number[];
  /** Scale per dim (all dims); the output size is floor(in · scale) unless sizes are given too. */
  scales?: readonly number[];
  mode?: ResizeMode;
  coordinateTransformationMode?: ResizeCoordinateMode;
  nearestMode?: ResizeNearestMode;
  /** Cubic only: the 'a' of the cubic convolution kernel (ONNX default −0.75). */
  cubicCoeffA?: number;
  /** Cubic only: give taps outside the input weight 0 and renormalise. */
  excludeOutside?: boolean;
}

/** Attributes of ResizeAxis: along `axis`, output i = Σ_t weights[i·taps + t] · input[index[i·taps + t]]. */
export interface ResizeAxisAttrs {
  axis: number;
  outSize: number;
  taps: number;
  index: Int32Array;
  weights: Float32Array;
}

function forEachLine(
  shape: readonly number[],
  axis: number,
  fn: (outer: number, inner: number, innerSize: number) => void,
): void {
  const outer = shape.slice(0, axis).reduce((p, d) => p * d, 1);
  const innerSize = shape.slice(axis + 1).reduce((p, d) => p * d, 1);
  for (let o = 0; o < outer; o++) for (let i = 0; i < innerSize; i++) fn(o, i, innerSize);
}

registerKernel<(i: Tensor[], a: ResizeAxisAttrs) => Tensor>({
  op: 'ResizeAxis',
  backend: 'cpu',
  fn: ([x], a) => {
    const xv = f32(x!);
    const n = x!.shape[a.axis]!;
    const outShape = x!.shape.map((d, k) => (k === a.axis ? a.outSize : d));
    const out = new Float32Array(outShape.reduce((p, d) => p * d, 1));
    forEachLine(x!.shape, a.axis, (o, i, inner) => {
      const inBase = o * n * inner + i;
      const outBase = o * a.outSize * inner + i;
      for (let j = 0; j < a.outSize; j++) {
        let s = 0;
        for (let t = 0; t < a.taps; t++)
          s += a.weights[j * a.taps + t]! * xv[inBase + a.index[j * a.taps + t]! * inner]!;
        out[outBase + j * inner] = s;
      }
    });
    return make(out, outShape);
  },
});

registerGradient<ResizeAxisAttrs>('ResizeAxis', ({ inputs: [x], attrs: a }, [g]) => {
  if (!x!.requiresGrad) return [null];
  const gv = f32(g!);
  const n = x!.shape[a.axis]!;
  const dx = new Float32Array(x!.size);
  forEachLine(x!.shape, a.axis, (o, i, inner) => {
    const inBase = o * n * inner + i;
    const outBase = o * a.outSize * inner + i;
    for (let j = 0; j < a.outSize; j++) {
      const gj = gv[outBase + j * inner]!;
      for (let t = 0; t < a.taps; t++)
        dx[inBase + a.index[j * a.taps + t]! * inner]! += a.weights[j * a.taps + t]! * gj;
    }
  });
  return [make(dx, x!.shape)];
});

function cubicCoeffs(r: number, A: number): number[] {
  const s = 1 - r;
  return [
    ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
    ((A + 2) * r - (A + 3)) * r * r + 1,
    ((A + 2) * s - (A + 3)) * s * s + 1,
    ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A,
  ];
}

/** Taps of one dim: input size n, output size out, scale (out/in, or the given scale). */
export function resizeTaps(
  n: number,
  out: number,
  scale: number,
  o: Required<Omit<ResizeOptions, 'sizes' | 'scales'>>,
): { taps: number; index: Int32Array; weights: Float32Array } {
  const taps = o.mode === 'cubic' ? 4 : 2;
  const index = new Int32Array(out * taps);
  const weights = new Float32Array(out * taps);
  const outWidth = scale * n;
  for (let j = 0; j < out; j++) {
    let x: number;
    switch (o.coordinateTransformationMode) {
      case 'align_corners':
        x = outWidth === 1 ? 0 : (j * (n - 1)) / (outWidth - 1);
        break;
      case 'asymmetric':
        x = j / scale;
        break;
      case 'pytorch_half_pixel':
        x = outWidth === 1 ? -0.5 : (j + 0.5) / scale - 0.5;
        break;
      case 'tf_half_pixel_for_nn':
        x = (j + 0.5) / scale;
        break;
      case 'half_pixel_symmetric': {
        // opset 19: half_pixel, shifted so that the rounding of the output size spreads over both ends
        const offset = (n / 2) * (1 - out / outWidth);
        x = offset + (j + 0.5) / scale - 0.5;
        break;
      }
      default:
        x = (j + 0.5) / scale - 0.5;
    }
    // As the reference: the ratio lies in (0, 1], preferring the pixel left of x.
    const whole = Number.isInteger(x);
    const left = whole ? x - 1 : Math.floor(x);
    const r = whole ? 1 : x - left;
    let c: number[];
    if (o.mode === 'linear') c = [1 - r, r];
    else if (o.mode === 'cubic') c = cubicCoeffs(r, o.cubicCoeffA);
    else if (whole) c = [0, 1];
    else {
      const up =
        o.nearestMode === 'ceil'
          ? true
          : o.nearestMode === 'floor'
            ? false
            : o.nearestMode === 'round_prefer_ceil'
              ? r >= 0.5
              : r > 0.5;
      c = up ? [0, 1] : [1, 0];
    }
    const first = left - (taps / 2 - 1);
    let norm = 1;
    if (o.mode === 'cubic' && o.excludeOutside) {
      norm = 0;
      c = c.map((w, t) => (first + t < 0 || first + t >= n ? 0 : w));
      for (const w of c) norm += w;
    }
    for (let t = 0; t < taps; t++) {
      index[j * taps + t] = Math.min(n - 1, Math.max(0, first + t));
      weights[j * taps + t] = c[t]! / norm;
    }
  }
  return { taps, index, weights };
}

const MODES: readonly string[] = ['nearest', 'linear', 'cubic'];
const COORDS: readonly string[] = [
  'half_pixel',
  'pytorch_half_pixel',
  'half_pixel_symmetric',
  'align_corners',
  'asymmetric',
  'tf_half_pixel_for_nn',
];
const NEAREST: readonly string[] = ['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'];

/**
 * ONNX Resize (opset 11–19 semantics, without tf_crop_and_resize and antialias) over every dim whose scale is
 * not 1: nearest (4 rounding modes), linear and cubic interpolation with ONNX's coordinate transformations.
 */
export function resize(x: Tensor, options: ResizeOptions): Tensor {
  const op = 'resize';
  requireFloat(x, op);
  const o = {
    mode: options.mode ?? 'nearest',
    coordinateTransformationMode: options.coordinateTransformationMode ?? 'half_pixel',
    nearestMode: options.nearestMode ?? 'round_prefer_floor',
    cubicCoeffA: options.cubicCoeffA ?? -0.75,
    excludeOutside: options.excludeOutside ?? false,
  };
  if (!MODES.includes(o.mode))
    throw new InvalidArgumentError(`${op}: mode must be one of ${MODES.join(', ')}, got '${o.mode}'`);
  if (!COORDS.includes(o.coordinateTransformationMode)) {
    throw new InvalidArgumentError(
      `${op}: coordinateTransformationMode must be one of ${COORDS.join(', ')}, got '${o.coordinateTransformationMode}'`,
    );
  }
  if (!NEAREST.includes(o.nearestMode))
    throw new InvalidArgumentError(`${op}: nearestMode must be one of ${NEAREST.join(', ')}, got '${o.nearestMode}'`);
  if (options.sizes === undefined && options.scales === undefined)
    throw new InvalidArgumentError(`${op}: give sizes, scales or both`);
  for (const [what, given] of [
    ['sizes', options.sizes],
    ['scales', options.scales],
  ] as const) {
    if (given && given.length !== x.ndim) {
      throw new ShapeError(
        `${op}: ${what} needs one value per dim of the input ${shapeStr(x.shape)}, got ${given.length}`,
      );
    }
  }
  let y = x;
  x.shape.forEach((n, axis) => {
    let out: number;
    let scale: number;
    if (options.sizes) {
      out = options.sizes[axis]!;
      if (!Number.isInteger(out) || out < 1)
        throw new InvalidArgumentError(`${op}: sizes must be positive integers, got [${options.sizes.join(', ')}]`);
      scale = options.scales?.[axis] ?? out / n;
      if (!(Number.isFinite(scale) && scale > 0))
        throw new InvalidArgumentError(`${op}: scales must be positive, got [${options.scales!.join(', ')}]`);
    } else {
      scale = options.scales![axis]!;
      if (!(Number.isFinite(scale) && scale > 0))
        throw new InvalidArgumentError(`${op}: scales must be positive, got [${options.scales!.join(', ')}]`);
      out = Math.floor(n * scale);
      if (out < 1) throw new ShapeError(`${op}: scale ${scale} of dim ${axis} (size ${n}) gives an empty output`);
    }
    if (out === n && scale === 1) return;
    const t = resizeTaps(n, out, scale, o);
    y = run1<ResizeAxisAttrs>('ResizeAxis', [y], { axis, outSize: out, ...t });
  });
  return y;
}
