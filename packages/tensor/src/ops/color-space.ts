// BT.601 colour-space conversions between RGB / BGR images (0..255) and centered YUV444 (the YUV byte
// minus 128), per pixel of an NCHW float32 tensor with 3 channels. One kernel, 'ColorMatrix', applies a
// 3×3 matrix and an offset per pixel, optionally rounds, and clamps each output channel to a range;
// its gradient is the transposed matrix where the output was not clamped (straight through the rounding).
import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel, type Saved } from '../registry.js';
import type { Tensor } from '../tensor.js';
import { f32, make, requireFloat } from './util.js';

/** YUV studio swing (Y 16..235, U and V 16..240) or full swing (Y, U, V 0..255), both BT.601. */
export type YuvSwing = 'studio' | 'full';

/** The channel order of a 3-channel image. */
export type ColorOrder = 'rgb' | 'bgr';

/** The numbers of one BT.601 swing, in float64: rows Y, U, V over columns R, G, B, and back. */
export interface YuvColorSpace {
  readonly swing: YuvSwing;
  /** YUV byte = toYuv · RGB + yuvOffset (row-major 3×3, rows Y U V, columns R G B). */
  readonly toYuv: readonly number[];
  readonly yuvOffset: readonly number[];
  /** The inverse of `toYuv` (rows R G B, columns Y U V): RGB = toRgb · (YUV byte − yuvOffset). */
  readonly toRgb: readonly number[];
  /** The YUV byte range of each channel (Y, U, V). */
  readonly yuvMin: readonly number[];
  readonly yuvMax: readonly number[];
}

// BT.601 luma weights
const KR = 0.299;
const KB = 0.114;
const KG = 1 - KR - KB;

function invert3(m: readonly number[]): number[] {
  const [a, b, c, d, e, f, g, h, i] = m as [number, number, number, number, number, number, number, number, number];
  const A = e * i - f * h;
  const B = -(d * i - f * g);
  const C = d * h - e * g;
  const det = a * A + b * B + c * C;
  return [
    A / det,
    -(b * i - c * h) / det,
    (b * f - c * e) / det,
    B / det,
    (a * i - c * g) / det,
    -(a * f - c * d) / det,
    C / det,
    -(a * h - b * g) / det,
    (a * e - b * d) / det,
  ];
}

function buildSpace(swing: YuvSwing): YuvColorSpace {
  // luma and the two colour differences of full-range RGB, scaled to the swing's excursions
  const ys = swing === 'full' ? 1 : 219 / 255;
  const cs = swing === 'full' ? 1 : 224 / 255;
  const u = cs / (2 * (1 - KB));
  const v = cs / (2 * (1 - KR));
  const toYuv = [ys * KR, ys * KG, ys * KB, -u * KR, -u * KG, u * (1 - KB), v * (1 - KR), -v * KG, -v * KB];
  return {
    swing,
    toYuv,
    yuvOffset: [swing === 'full' ? 0 : 16, 128, 128],
    toRgb: invert3(toYuv),
    yuvMin: swing === 'full' ? [0, 0, 0] : [16, 16, 16],
    yuvMax: swing === 'full' ? [255, 255, 255] : [235, 240, 240],
  };
}

const SPACES: Record<YuvSwing, YuvColorSpace> = { studio: buildSpace('studio'), full: buildSpace('full') };

/** The BT.601 matrices and ranges of a swing (what the conversions and the fixed-point YUV input use). */
export function yuvColorSpace(swing: YuvSwing): YuvColorSpace {
  const s = SPACES[swing];
  if (!s) throw new InvalidArgumentError(`yuv: swing must be 'studio' or 'full', got '${String(swing)}'`);
  return s;
}

/** Attributes of the ColorMatrix kernel: out[c] = clamp(R(Σ_j matrix[3c+j]·x[j] + offset[c]), min[c], max[c]). */
export interface ColorMatrixAttrs {
  matrix: readonly number[];
  offset: readonly number[];
  /** Round half up to an integer before clamping. */
  round: boolean;
  min: readonly number[];
  max: readonly number[];
}

registerKernel<(i: Tensor[], a: ColorMatrixAttrs, saved: Saved) => Tensor>({
  op: 'ColorMatrix',
  backend: 'cpu',
  fn: ([x], a, saved) => {
    const [n, , h, w] = x!.shape as [number, number, number, number];
    const src = x!.values();
    const plane = h * w;
    const out = new Float32Array(src.length);
    const pass = new Uint8Array(src.length);
    const m = a.matrix;
    for (let b = 0; b < n; b++) {
      const o = b * 3 * plane;
      for (let p = 0; p < plane; p++) {
        const x0 = src[o + p]!;
        const x1 = src[o + plane + p]!;
        const x2 = src[o + 2 * plane + p]!;
        for (let c = 0; c < 3; c++) {
          let v = m[3 * c]! * x0 + m[3 * c + 1]! * x1 + m[3 * c + 2]! * x2 + a.offset[c]!;
          if (a.round) v = Math.floor(v + 0.5);
          const lo = a.min[c]!;
          const hi = a.max[c]!;
          const at = o + c * plane + p;
          if (v < lo) out[at] = lo;
          else if (v > hi) out[at] = hi;
          else {
            out[at] = v;
            pass[at] = 1;
          }
        }
      }
    }
    saved.pass = pass;
    return make(out, [...x!.shape]);
  },
});

registerGradient<ColorMatrixAttrs>('ColorMatrix', ({ inputs: [x], attrs: a, saved }, [g]) => {
  const [n, , h, w] = x!.shape as [number, number, number, number];
  const gv = f32(g!);
  const pass = saved.pass as Uint8Array;
  const plane = h * w;
  const out = new Float32Array(gv.length);
  const m = a.matrix;
  for (let b = 0; b < n; b++) {
    const o = b * 3 * plane;
    for (let p = 0; p < plane; p++) {
      const g0 = pass[o + p] ? gv[o + p]! : 0;
      const g1 = pass[o + plane + p] ? gv[o + plane + p]! : 0;
      const g2 = pass[o + 2 * plane + p] ? gv[o + 2 * plane + p]! : 0;
      for (let j = 0; j < 3; j++) out[o + j * plane + p] = m[j]! * g0 + m[3 + j]! * g1 + m[6 + j]! * g2;
    }
  }
  return [make(out, [...x!.shape])];
});

function checkImage(x: Tensor, op: string): void {
  requireFloat(x, op);
  if (x.ndim !== 4 || x.shape[1] !== 3) {
    throw new ShapeError(
      `${op}: expected an NCHW image with 3 channels, got shape [${x.shape.join(', ')}]; permute channels-last images to NCHW first`,
    );
  }
}

/** Swaps the R and B columns (input order) or rows (output order) of a matrix over RGB. */
function swapRb(m: readonly number[], side: 'rows' | 'columns'): number[] {
  const out = [...m];
  for (let k = 0; k < 3; k++) {
    if (side === 'columns') {
      out[3 * k] = m[3 * k + 2]!;
      out[3 * k + 2] = m[3 * k]!;
    } else {
      out[k] = m[6 + k]!;
      out[6 + k] = m[k]!;
    }
  }
  return out;
}

function toCenteredYuv(x: Tensor, swing: YuvSwing, order: ColorOrder, op: string): Tensor {
  checkImage(x, op);
  const s = yuvColorSpace(swing);
  return run1<ColorMatrixAttrs>('ColorMatrix', [x], {
    matrix: order === 'rgb' ? s.toYuv : swapRb(s.toYuv, 'columns'),
    offset: s.yuvOffset.map((o) => o - 128),
    round: true,
    min: s.yuvMin.map((v) => v - 128),
    max: s.yuvMax.map((v) => v - 128),
  });
}

function fromCenteredYuv(x: Tensor, swing: YuvSwing, order: ColorOrder, op: string): Tensor {
  checkImage(x, op);
  const s = yuvColorSpace(swing);
  const m = order === 'rgb' ? s.toRgb : swapRb(s.toRgb, 'rows');
  // RGB = toRgb · (centered + 128 − yuvOffset)
  const shift = s.yuvOffset.map((o) => 128 - o);
  const offset = [0, 1, 2].map((c) => m[3 * c]! * shift[0]! + m[3 * c + 1]! * shift[1]! + m[3 * c + 2]! * shift[2]!);
  return run1<ColorMatrixAttrs>('ColorMatrix', [x], {
    matrix: m,
    offset,
    round: false,
    min: [0, 0, 0],
    max: [255, 255, 255],
  });
}

/**
 * RGB (0..255, NCHW) to centered YUV444 BT.601: the YUV bytes, rounded half up and clamped to the
 * swing's range (full: 0..255; studio: Y 16..235, U and V 16..240), minus 128. The gradient passes
 * straight through the rounding (the matrix, zero where clamped).
 */
export function rgb2CenteredYuv(x: Tensor, swing: YuvSwing): Tensor {
  return toCenteredYuv(x, swing, 'rgb', 'rgb2CenteredYuv');
}

/** `rgb2CenteredYuv` for an image whose channels are B, G, R. */
export function bgr2CenteredYuv(x: Tensor, swing: YuvSwing): Tensor {
  return toCenteredYuv(x, swing, 'bgr', 'bgr2CenteredYuv');
}

/**
 * Centered YUV444 BT.601 (YUV byte − 128, NCHW) to RGB in 0..255: the exact inverse matrix, not
 * rounded, clamped to 0..255. Differentiable (the inverse matrix; zero where clamped).
 */
export function centeredYuv2Rgb(x: Tensor, swing: YuvSwing): Tensor {
  return fromCenteredYuv(x, swing, 'rgb', 'centeredYuv2Rgb');
}

/** `centeredYuv2Rgb` giving the channels in B, G, R order. */
export function centeredYuv2Bgr(x: Tensor, swing: YuvSwing): Tensor {
  return fromCenteredYuv(x, swing, 'bgr', 'centeredYuv2Bgr');
}
