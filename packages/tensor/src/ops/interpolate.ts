import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import type { Tensor } from '../tensor.js';
import { shapeStr } from './conv-args.js';
import { f32, make, requireFloat } from './util.js';

export type InterpolateMode = 'nearest' | 'bilinear';

export interface ResizeAttrs {
  size: [number, number];
  mode: InterpolateMode;
  alignCorners: boolean;
  /** Per-dim scale from output to input coordinates (1/scaleFactor when one was given, else in/out), as float32. */
  scales: [number, number];
}

/**
 * Source taps along one dim: for output i, input indices i0[i] and i1[i] with weight 1−λ and λ.
 * Follows PyTorch's float32 coordinate arithmetic so indices agree at the edges.
 */
function taps(inSize: number, outSize: number, scale: number, mode: InterpolateMode, alignCorners: boolean) {
  const i0 = new Int32Array(outSize);
  const i1 = new Int32Array(outSize);
  const lambda = new Float32Array(outSize);
  const fr = Math.fround;
  if (mode === 'nearest') {
    for (let o = 0; o < outSize; o++) {
      let s: number;
      if (outSize === inSize) s = o;
      else if (outSize === 2 * inSize) s = o >> 1;
      else s = Math.min(Math.floor(fr(o * scale)), inSize - 1);
      i0[o] = s;
      i1[o] = s;
    }
    return { i0, i1, lambda };
  }
  const a = alignCorners ? (outSize > 1 ? fr((inSize - 1) / (outSize - 1)) : 0) : scale;
  for (let o = 0; o < outSize; o++) {
    let src = alignCorners ? fr(a * o) : fr(fr(a * (o + 0.5)) - 0.5);
    if (src < 0) src = 0;
    const lo = Math.min(Math.floor(src), inSize - 1);
    i0[o] = lo;
    i1[o] = lo < inSize - 1 ? lo + 1 : lo;
    lambda[o] = fr(src - lo);
  }
  return { i0, i1, lambda };
}

function planTaps(x: Tensor, a: ResizeAttrs) {
  const H = x.shape[2]!;
  const W = x.shape[3]!;
  return {
    H,
    W,
    planes: x.shape[0]! * x.shape[1]!,
    th: taps(H, a.size[0], a.scales[0], a.mode, a.alignCorners),
    tw: taps(W, a.size[1], a.scales[1], a.mode, a.alignCorners),
  };
}

registerKernel<(i: Tensor[], a: ResizeAttrs) => Tensor>({
  op: 'Resize',
  backend: 'cpu',
  fn: ([x], attrs) => {
    const [OH, OW] = attrs.size;
    const out = new Float32Array(x!.shape[0]! * x!.shape[1]! * OH * OW);
    resizeTaps(x!, attrs, f32(x!), out, true);
    return make(out, [x!.shape[0]!, x!.shape[1]!, OH, OW]);
  },
});

registerGradient<ResizeAttrs>('Resize', ({ inputs: [x], attrs }, [g]) => {
  const dx = new Float32Array(x!.size);
  resizeTaps(x!, attrs, dx, f32(g!), false);
  return [make(dx, x!.shape)];
});

/**
 * The one walk of Resize over its taps: `forward` interpolates `image` (x's planes) into `resized` (row-major
 * [planes, OH, OW]); otherwise it is the adjoint, adding each resized value's gradient back onto its taps in `image`.
 */
function resizeTaps(x: Tensor, attrs: ResizeAttrs, image: Float32Array, resized: Float32Array, forward: boolean): void {
  const { H, W, planes, th, tw } = planTaps(x, attrs);
  const [OH, OW] = attrs.size;
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const r0 = base + th.i0[oy]! * W;
      const r1 = base + th.i1[oy]! * W;
      if (attrs.mode === 'nearest') {
        if (forward) for (let ox = 0; ox < OW; ox++) resized[o++] = image[r0 + tw.i0[ox]!]!;
        else for (let ox = 0; ox < OW; ox++) image[r0 + tw.i0[ox]!]! += resized[o++]!;
        continue;
      }
      const lh = th.lambda[oy]!;
      for (let ox = 0; ox < OW; ox++) {
        const c0 = tw.i0[ox]!;
        const c1 = tw.i1[ox]!;
        const lw = tw.lambda[ox]!;
        if (forward) {
          const top = (1 - lw) * image[r0 + c0]! + lw * image[r0 + c1]!;
          const bottom = (1 - lw) * image[r1 + c0]! + lw * image[r1 + c1]!;
          resized[o++] = (1 - lh) * top + lh * bottom;
        } else {
          const v = resized[o++]!;
          const top = (1 - lh) * v;
          const bottom = lh * v;
          image[r0 + c0]! += (1 - lw) * top;
          image[r0 + c1]! += lw * top;
          image[r1 + c0]! += (1 - lw) * bottom;
          image[r1 + c1]! += lw * bottom;
        }
      }
    }
  }
}

export interface InterpolateOptions {
  /** Output [H, W] (or one number for both); give this or scaleFactor. */
  size?: number | readonly [number, number];
  /** Output size is floor(in · scaleFactor); coordinates map back with 1/scaleFactor, as PyTorch. */
  scaleFactor?: number | readonly [number, number];
  mode?: InterpolateMode;
  /** bilinear only: map corner pixel centres onto each other instead of using half-pixel offsets. */
  alignCorners?: boolean;
}

function pair(v: number | readonly number[], what: string): [number, number] {
  const arr = typeof v === 'number' ? [v, v] : [...v];
  if (arr.length !== 2)
    throw new InvalidArgumentError(
      `interpolate: ${what} needs 1 or 2 values for a 4-d input, got ${JSON.stringify(v)}`,
    );
  return arr as [number, number];
}

/** Resizes the spatial dims of an [N, C, H, W] tensor ('nearest' by default, like PyTorch). */
export function interpolate(x: Tensor, options: InterpolateOptions): Tensor {
  requireFloat(x, 'interpolate');
  if (x.ndim !== 4) throw new ShapeError(`interpolate: input must be 4-d [N, C, H, W], got ${shapeStr(x.shape)}`);
  const mode = options.mode ?? 'nearest';
  if (mode !== 'nearest' && mode !== 'bilinear') {
    throw new InvalidArgumentError(`interpolate: mode must be 'nearest' or 'bilinear', got '${String(mode)}'`);
  }
  if (options.alignCorners !== undefined && mode === 'nearest') {
    throw new InvalidArgumentError(
      `interpolate: alignCorners only applies to 'bilinear'; leave it unset for 'nearest'`,
    );
  }
  if ((options.size === undefined) === (options.scaleFactor === undefined)) {
    throw new InvalidArgumentError('interpolate: give exactly one of size and scaleFactor');
  }
  const inSize = [x.shape[2]!, x.shape[3]!];
  let size: [number, number];
  let scales: [number, number];
  if (options.size !== undefined) {
    size = pair(options.size, 'size');
    if (size.some((s) => !Number.isInteger(s) || s < 1)) {
      throw new InvalidArgumentError(
        `interpolate: size must be positive integers, got ${JSON.stringify(options.size)}`,
      );
    }
    scales = [Math.fround(inSize[0]! / size[0]), Math.fround(inSize[1]! / size[1])];
  } else {
    const sf = pair(options.scaleFactor!, 'scaleFactor');
    if (sf.some((s) => !(Number.isFinite(s) && s > 0))) {
      throw new InvalidArgumentError(
        `interpolate: scaleFactor must be positive, got ${JSON.stringify(options.scaleFactor)}`,
      );
    }
    size = [Math.floor(inSize[0]! * sf[0]), Math.floor(inSize[1]! * sf[1])];
    if (size.some((s) => s < 1)) {
      throw new ShapeError(
        `interpolate: scaleFactor ${JSON.stringify(options.scaleFactor)} gives an empty output for input ${shapeStr(x.shape)}`,
      );
    }
    scales = [Math.fround(1 / sf[0]), Math.fround(1 / sf[1])];
  }
  if (inSize[0] === 0 || inSize[1] === 0)
    throw new ShapeError(`interpolate: input ${shapeStr(x.shape)} has an empty spatial dim`);
  return run1<ResizeAttrs>('Resize', [x], { size, mode, alignCorners: options.alignCorners ?? false, scales });
}
