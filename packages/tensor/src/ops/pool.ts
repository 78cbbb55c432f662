import { isGradEnabled, registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel, type Saved } from '../registry.js';
import type { Tensor } from '../tensor.js';
import { perDim, shapeStr, windowOutSize } from './conv-args.js';
import { f32, make, requireFloat } from './util.js';

/** Output length of a pooling window, PyTorch's rule: ceil mode never starts a window inside the right padding. */
export function poolOutSize(size: number, k: number, s: number, p: number, d: number, ceilMode: boolean): number {
  let out = windowOutSize(size + (ceilMode ? s - 1 : 0), k, s, p, p, d);
  if (ceilMode && (out - 1) * s >= size + p) out--;
  return out;
}

interface Planes {
  planes: number;
  h: number;
  w: number;
  lead: number[];
}

function planesOf(x: Tensor): Planes {
  const h = x.shape[x.ndim - 2]!;
  const w = x.shape[x.ndim - 1]!;
  return { planes: x.size / (h * w || 1), h, w, lead: x.shape.slice(0, -2) };
}

export interface MaxPoolAttrs {
  kernel: number[];
  stride: number[];
  padding: number[];
  dilation: number[];
  ceilMode: boolean;
}

/** The taps a..aEnd of a window starting at `start` (stride already applied) that fall inside [0, size). */
function validTaps(start: number, k: number, d: number, size: number): [number, number] {
  const from = start < 0 ? Math.ceil(-start / d) : 0;
  const to = Math.min(k, Math.floor((size - 1 - start) / d) + 1);
  return [from, Math.max(from, to)];
}

registerKernel<(i: Tensor[], a: MaxPoolAttrs, s: Saved) => Tensor>({
  op: 'MaxPool',
  backend: 'cpu',
  fn: ([x], { kernel: [kh, kw], stride: [sh, sw], padding: [ph, pw], dilation: [dh, dw], ceilMode }, saved) => {
    const { planes, h: H, w: W, lead } = planesOf(x!);
    const OH = poolOutSize(H, kh!, sh!, ph!, dh!, ceilMode);
    const OW = poolOutSize(W, kw!, sw!, pw!, dw!, ceilMode);
    const xv = f32(x!);
    const out = new Float32Array(planes * OH * OW);
    // The argmax is only for the gradient: evaluation and calibration skip it.
    const arg = isGradEnabled() && x!.requiresGrad ? new Int32Array(out.length) : null;
    // Each output column's valid taps and first input column, computed once instead of per window.
    const colFrom = new Int32Array(OW);
    const colTo = new Int32Array(OW);
    for (let ox = 0; ox < OW; ox++) [colFrom[ox], colTo[ox]] = validTaps(ox * sw! - pw!, kw!, dw!, W);
    let o = 0;
    for (let pl = 0; pl < planes; pl++) {
      const base = pl * H * W;
      for (let oy = 0; oy < OH; oy++) {
        const y0 = oy * sh! - ph!;
        const [aFrom, aTo] = validTaps(y0, kh!, dh!, H);
        for (let ox = 0; ox < OW; ox++, o++) {
          const x0 = ox * sw! - pw!;
          const eFrom = colFrom[ox]!;
          const eTo = colTo[ox]!;
          let best = -Infinity;
          let bi = -1;
          for (let a = aFrom; a < aTo; a++) {
            const row = (y0 + a * dh!) * W;
            for (let e = eFrom; e < eTo; e++) {
              const at = row + x0 + e * dw!;
              const v = xv[base + at]!;
              // NaN propagates (the last NaN wins), as in PyTorch.
              if (v > best || Number.isNaN(v)) {
                best = v;
                bi = at;
              }
            }
          }
          out[o] = best;
          if (arg) arg[o] = bi;
        }
      }
    }
    if (arg) saved.argmax = arg;
    return make(out, [...lead, OH, OW]);
  },
});

registerGradient<MaxPoolAttrs>('MaxPool', ({ inputs: [x], outputs: [y], saved }, [g]) => {
  const { planes, h, w } = planesOf(x!);
  const arg = saved.argmax as Int32Array;
  const per = y!.shape[y!.ndim - 2]! * y!.shape[y!.ndim - 1]!;
  const gv = f32(g!);
  const dx = new Float32Array(x!.size);
  for (let pl = 0, o = 0; pl < planes; pl++) {
    const base = pl * h * w;
    for (let i = 0; i < per; i++, o++) {
      const j = arg[o]!;
      if (j >= 0) dx[base + j]! += gv[o]!;
    }
  }
  return [make(dx, x!.shape)];
});

export interface AvgPoolAttrs {
  kernel: number[];
  stride: number[];
  padding: number[];
  ceilMode: boolean;
  countIncludePad: boolean;
  divisorOverride: number | null;
}

/** Visits every pooling window with its clipped bounds and divisor (PyTorch's avg_pool2d rules). */
export function forEachAvgWindow(
  H: number,
  W: number,
  a: AvgPoolAttrs,
  visit: (o: number, y0: number, y1: number, x0: number, x1: number, div: number) => void,
): [number, number] {
  const [kh, kw] = a.kernel as [number, number];
  const [sh, sw] = a.stride as [number, number];
  const [ph, pw] = a.padding as [number, number];
  const OH = poolOutSize(H, kh, sh, ph, 1, a.ceilMode);
  const OW = poolOutSize(W, kw, sw, pw, 1, a.ceilMode);
  let o = 0;
  for (let oy = 0; oy < OH; oy++) {
    let y0 = oy * sh - ph;
    let y1 = Math.min(y0 + kh, H + ph);
    const hSize = y1 - y0;
    y0 = Math.max(y0, 0);
    y1 = Math.min(y1, H);
    for (let ox = 0; ox < OW; ox++, o++) {
      let x0 = ox * sw - pw;
      let x1 = Math.min(x0 + kw, W + pw);
      const poolSize = hSize * (x1 - x0);
      x0 = Math.max(x0, 0);
      x1 = Math.min(x1, W);
      const div = a.divisorOverride ?? (a.countIncludePad ? poolSize : (y1 - y0) * (x1 - x0));
      visit(o, y0, y1, x0, x1, div);
    }
  }
  return [OH, OW];
}

registerKernel<(i: Tensor[], a: AvgPoolAttrs) => Tensor>({
  op: 'AveragePool',
  backend: 'cpu',
  fn: ([x], attrs) => {
    const { planes, h: H, w: W, lead } = planesOf(x!);
    const xv = f32(x!);
    const OH = poolOutSize(H, attrs.kernel[0]!, attrs.stride[0]!, attrs.padding[0]!, 1, attrs.ceilMode);
    const OW = poolOutSize(W, attrs.kernel[1]!, attrs.stride[1]!, attrs.padding[1]!, 1, attrs.ceilMode);
    const out = new Float32Array(planes * OH * OW);
    for (let pl = 0; pl < planes; pl++) {
      const base = pl * H * W;
      const obase = pl * OH * OW;
      forEachAvgWindow(H, W, attrs, (o, y0, y1, x0, x1, div) => {
        if (y0 >= y1 || x0 >= x1) return;
        let s = 0;
        for (let iy = y0; iy < y1; iy++) for (let ix = x0; ix < x1; ix++) s += xv[base + iy * W + ix]!;
        out[obase + o] = s / div;
      });
    }
    return make(out, [...lead, OH, OW]);
  },
});

registerGradient<AvgPoolAttrs>('AveragePool', ({ inputs: [x], attrs }, [g]) => {
  const { planes, h: H, w: W } = planesOf(x!);
  const gv = f32(g!);
  const dx = new Float32Array(x!.size);
  const per = g!.shape[g!.ndim - 2]! * g!.shape[g!.ndim - 1]!;
  for (let pl = 0; pl < planes; pl++) {
    const base = pl * H * W;
    const obase = pl * per;
    forEachAvgWindow(H, W, attrs, (o, y0, y1, x0, x1, div) => {
      const v = gv[obase + o]! / div;
      for (let iy = y0; iy < y1; iy++) for (let ix = x0; ix < x1; ix++) dx[base + iy * W + ix]! += v;
    });
  }
  return [make(dx, x!.shape)];
});

export interface AdaptiveAvgPoolAttrs {
  outputSize: number[];
}

/** Window [start, end) of output cell i: floor(i·in/out) to ceil((i+1)·in/out). */
function adaptiveBounds(inSize: number, outSize: number): Int32Array {
  const b = new Int32Array(2 * outSize);
  for (let i = 0; i < outSize; i++) {
    b[2 * i] = Math.floor((i * inSize) / outSize);
    b[2 * i + 1] = Math.ceil(((i + 1) * inSize) / outSize);
  }
  return b;
}

function forEachAdaptiveWindow(
  H: number,
  W: number,
  [OH, OW]: number[],
  visit: (o: number, y0: number, y1: number, x0: number, x1: number) => void,
): void {
  const bh = adaptiveBounds(H, OH!);
  const bw = adaptiveBounds(W, OW!);
  for (let oy = 0, o = 0; oy < OH!; oy++) {
    for (let ox = 0; ox < OW!; ox++, o++) visit(o, bh[2 * oy]!, bh[2 * oy + 1]!, bw[2 * ox]!, bw[2 * ox + 1]!);
  }
}

registerKernel<(i: Tensor[], a: AdaptiveAvgPoolAttrs) => Tensor>({
  op: 'AdaptiveAveragePool',
  backend: 'cpu',
  fn: ([x], { outputSize }) => {
    const { planes, h: H, w: W, lead } = planesOf(x!);
    const [OH, OW] = outputSize as [number, number];
    const xv = f32(x!);
    const out = new Float32Array(planes * OH * OW);
    for (let pl = 0; pl < planes; pl++) {
      const base = pl * H * W;
      const obase = pl * OH * OW;
      forEachAdaptiveWindow(H, W, outputSize, (o, y0, y1, x0, x1) => {
        let s = 0;
        for (let iy = y0; iy < y1; iy++) for (let ix = x0; ix < x1; ix++) s += xv[base + iy * W + ix]!;
        out[obase + o] = s / ((y1 - y0) * (x1 - x0));
      });
    }
    return make(out, [...lead, OH, OW]);
  },
});

registerGradient<AdaptiveAvgPoolAttrs>('AdaptiveAveragePool', ({ inputs: [x], attrs }, [g]) => {
  const { planes, h: H, w: W } = planesOf(x!);
  const [OH, OW] = attrs.outputSize as [number, number];
  const gv = f32(g!);
  const dx = new Float32Array(x!.size);
  for (let pl = 0; pl < planes; pl++) {
    const base = pl * H * W;
    const obase = pl * OH * OW;
    forEachAdaptiveWindow(H, W, attrs.outputSize, (o, y0, y1, x0, x1) => {
      const v = gv[obase + o]! / ((y1 - y0) * (x1 - x0));
      for (let iy = y0; iy < y1; iy++) for (let ix = x0; ix < x1; ix++) dx[base + iy * W + ix]! += v;
    });
  }
  return [make(dx, x!.shape)];
});

function checkInput(op: string, x: Tensor): void {
  requireFloat(x, op);
  if (x.ndim !== 3 && x.ndim !== 4) {
    throw new ShapeError(`${op}: input must be 4-d [N, C, H, W] or 3-d [C, H, W], got ${shapeStr(x.shape)}`);
  }
  if (x.shape[x.ndim - 2] === 0 || x.shape[x.ndim - 1] === 0) {
    throw new ShapeError(`${op}: input ${shapeStr(x.shape)} has an empty spatial dimension`);
  }
}

function checkWindows(
  op: string,
  x: Tensor,
  kernel: number[],
  stride: number[],
  padding: number[],
  dilation: number[],
  ceil: boolean,
): void {
  for (let i = 0; i < 2; i++) {
    const eff = dilation[i]! * (kernel[i]! - 1) + 1;
    if (padding[i]! * 2 > eff) {
      throw new InvalidArgumentError(
        `${op}: padding ${padding[i]} must be at most half the (dilated) kernel size ${eff} in dim ${i}; lower the padding`,
      );
    }
    const size = x.shape[x.ndim - 2 + i]!;
    if (poolOutSize(size, kernel[i]!, stride[i]!, padding[i]!, dilation[i]!, ceil) < 1) {
      throw new ShapeError(
        `${op}: input ${shapeStr(x.shape)} is smaller than the kernel ${shapeStr(kernel)} (with padding) in dim ${i}`,
      );
    }
  }
}

/** Checks a 2-d pool's input and resolves its kernel, stride (default: the kernel), padding and ceil mode. */
function poolWindows(
  op: string,
  x: Tensor,
  kernelSize: number | readonly number[],
  options: { stride?: number | readonly number[]; padding?: number | readonly number[]; ceilMode?: boolean },
): { kernel: number[]; stride: number[]; padding: number[]; ceilMode: boolean } {
  checkInput(op, x);
  const kernel = perDim(kernelSize, 2, op, 'kernelSize', 1);
  const stride = perDim(options.stride ?? kernel, 2, op, 'stride', 1);
  const padding = perDim(options.padding ?? 0, 2, op, 'padding', 0);
  return { kernel, stride, padding, ceilMode: options.ceilMode ?? false };
}

export interface MaxPool2dOptions {
  /** Defaults to the kernel size. */
  stride?: number | readonly number[];
  padding?: number | readonly number[];
  dilation?: number | readonly number[];
  ceilMode?: boolean;
}

/** 2-d max pooling over [N, C, H, W] (or [C, H, W]); pads with −∞. */
export function maxPool2d(x: Tensor, kernelSize: number | readonly number[], options: MaxPool2dOptions = {}): Tensor {
  const op = 'maxPool2d';
  const { kernel, stride, padding, ceilMode } = poolWindows(op, x, kernelSize, options);
  const dilation = perDim(options.dilation ?? 1, 2, op, 'dilation', 1);
  checkWindows(op, x, kernel, stride, padding, dilation, ceilMode);
  return run1<MaxPoolAttrs>('MaxPool', [x], { kernel, stride, padding, dilation, ceilMode });
}

export interface AvgPool2dOptions {
  /** Defaults to the kernel size. */
  stride?: number | readonly number[];
  padding?: number | readonly number[];
  ceilMode?: boolean;
  /** Count padded zeros in the divisor (default true, as PyTorch). */
  countIncludePad?: boolean;
  /** Divide every window by this instead. */
  divisorOverride?: number;
}

/** 2-d average pooling over [N, C, H, W] (or [C, H, W]). */
export function avgPool2d(x: Tensor, kernelSize: number | readonly number[], options: AvgPool2dOptions = {}): Tensor {
  const op = 'avgPool2d';
  const { kernel, stride, padding, ceilMode } = poolWindows(op, x, kernelSize, options);
  checkWindows(op, x, kernel, stride, padding, [1, 1], ceilMode);
  const d = options.divisorOverride;
  if (d !== undefined && !(Number.isFinite(d) && d !== 0)) {
    throw new InvalidArgumentError(`${op}: divisorOverride must be a non-zero number, got ${d}`);
  }
  return run1<AvgPoolAttrs>('AveragePool', [x], {
    kernel,
    stride,
    padding,
    ceilMode,
    countIncludePad: options.countIncludePad ?? true,
    divisorOverride: d ?? null,
  });
}

/**
 * Average pooling to a fixed output size; cell i covers input [floor(i·in/out), ceil((i+1)·in/out)).
 * A null size keeps that input dimension.
 */
export function adaptiveAvgPool2d(x: Tensor, outputSize: number | readonly (number | null)[]): Tensor {
  const op = 'adaptiveAvgPool2d';
  checkInput(op, x);
  const given = typeof outputSize === 'number' ? [outputSize, outputSize] : [...outputSize];
  if (given.length !== 2)
    throw new InvalidArgumentError(`${op}: outputSize needs 1 or 2 values, got ${JSON.stringify(outputSize)}`);
  const size = given.map((s, i) => (s === null ? x.shape[x.ndim - 2 + i]! : s));
  for (const s of size) {
    if (!Number.isInteger(s) || s < 1)
      throw new InvalidArgumentError(`${op}: outputSize must be positive integers, got ${JSON.stringify(outputSize)}`);
  }
  return run1<AdaptiveAvgPoolAttrs>('AdaptiveAveragePool', [x], { outputSize: size });
}
