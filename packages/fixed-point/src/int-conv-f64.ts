// The last-resort exact paths of intConv / intConvTranspose: plain float64 loops, used only when no
// chunking of the reduction keeps float32 partial sums exact (a single channel's kernel too large).
import type { TypedArray } from '@qtk/tensor';
import { saturateInt32 } from './exact-sum.js';

/** Pads a 1-, 2- or 3-element geometry to three (leading `fill`s), as a tuple. */
function lift3(a: readonly number[], fill: number): [number, number, number] {
  const p = [...new Array<number>(3 - a.length).fill(fill), ...a];
  return [p[0]!, p[1]!, p[2]!];
}

/** A 1-, 2- or 3-d convolution's operands and geometry, as intConv and intConvTranspose resolved them. */
export interface DirectConvShape {
  readonly n: number;
  readonly cin: number;
  readonly groups: number;
  readonly image: readonly number[];
  readonly kernel: readonly number[];
  readonly out: readonly number[];
  readonly stride: readonly number[];
  readonly pads: readonly number[];
  readonly dilation: readonly number[];
}

/** A convolution's sizes as 3-d ones (leading unit sizes, zero padding; the begin pads only). */
export function geometry3({ image, kernel, out, stride, pads, dilation }: DirectConvShape) {
  const [id, ih, iw] = lift3(image, 1);
  const [kd, kh, kw] = lift3(kernel, 1);
  const [od, oh, ow] = lift3(out, 1);
  const [sd, sh, sw] = lift3(stride, 1);
  const [pd, ph, pw] = lift3(pads.slice(0, image.length), 0);
  const [dd, dh, dw] = lift3(dilation, 1);
  return { id, ih, iw, kd, kh, kw, od, oh, ow, sd, sh, sw, pd, ph, pw, dd, dh, dw };
}

type Geometry3 = ReturnType<typeof geometry3>;

/**
 * Visits the kernel taps of position (z, y, x) that land inside a [d, h, w] grid, in kernel order: the flat
 * position they land on and the tap's flat index in the kernel. The gather (conv: input grid) and the scatter
 * (convT: output grid) walk the same taps.
 */
function forEachTap(
  g: Geometry3,
  [z, y, x]: readonly [number, number, number],
  [d, h, w]: readonly [number, number, number],
  visit: (at: number, tap: number) => void,
): void {
  for (let a = 0; a < g.kd; a++) {
    const zi = z * g.sd - g.pd + a * g.dd;
    if (zi < 0 || zi >= d) continue;
    for (let e = 0; e < g.kh; e++) {
      const yi = y * g.sh - g.ph + e * g.dh;
      if (yi < 0 || yi >= h) continue;
      for (let f = 0; f < g.kw; f++) {
        const xi = x * g.sw - g.pw + f * g.dw;
        if (xi < 0 || xi >= w) continue;
        visit((zi * h + yi) * w + xi, (a * g.kh + e) * g.kw + f);
      }
    }
  }
}

/** Direct float64 convolution, for kernels too large for even one channel to sum exactly in float32. */
export function convF64(xv: TypedArray, wv: TypedArray, shape: DirectConvShape, cout: number): Int32Array {
  const { n, cin, groups } = shape;
  const g3 = geometry3(shape);
  const { id, ih, iw, kd, kh, kw, od, oh, ow } = g3;
  const cinG = cin / groups;
  const coutG = cout / groups;
  const acc = new Float64Array(n * cout * od * oh * ow);
  let j = 0;
  for (let b = 0; b < n; b++) {
    for (let co = 0; co < cout; co++) {
      const g = Math.floor(co / coutG);
      for (let z = 0; z < od; z++)
        for (let y = 0; y < oh; y++)
          for (let xq = 0; xq < ow; xq++) {
            let s = 0;
            for (let ci = 0; ci < cinG; ci++) {
              const xBase = (b * cin + g * cinG + ci) * id * ih * iw;
              const wBase = (co * cinG + ci) * kd * kh * kw;
              forEachTap(g3, [z, y, xq], [id, ih, iw], (at, tap) => {
                s += xv[xBase + at]! * wv[wBase + tap]!;
              });
            }
            acc[j++] = s;
          }
    }
  }
  return saturateInt32(acc);
}

/** Direct float64 transposed convolution (scatter form), the fallback of intConvTranspose. */
export function convTransposeF64(xv: TypedArray, wv: TypedArray, shape: DirectConvShape, coutG: number): Int32Array {
  const { n, cin, groups } = shape;
  const g3 = geometry3(shape);
  const { id, ih, iw, kd, kh, kw, od, oh, ow } = g3;
  const cinG = cin / groups;
  const cout = coutG * groups;
  const acc = new Float64Array(n * cout * od * oh * ow);
  for (let b = 0; b < n; b++) {
    for (let ci = 0; ci < cin; ci++) {
      const g = Math.floor(ci / cinG);
      for (let z = 0; z < id; z++)
        for (let y = 0; y < ih; y++)
          for (let xq = 0; xq < iw; xq++) {
            const xval = xv[((b * cin + ci) * id + z) * ih * iw + y * iw + xq]!;
            if (xval === 0) continue;
            for (let co = 0; co < coutG; co++) {
              const oBase = (b * cout + g * coutG + co) * od * oh * ow;
              const wBase = (ci * coutG + co) * kd * kh * kw;
              forEachTap(g3, [z, y, xq], [od, oh, ow], (at, tap) => {
                const o = oBase + at;
                acc[o] = acc[o]! + xval * wv[wBase + tap]!;
              });
            }
          }
    }
  }
  return saturateInt32(acc);
}
