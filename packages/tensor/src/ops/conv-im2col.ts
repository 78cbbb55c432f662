/**
 * Column-matrix helpers shared by Conv and ConvTranspose. Every convolution is handled as 3-d
 * (1-d and 2-d ones get leading spatial dims of size 1), which costs nothing in the inner loops.
 *
 * The column matrix covers the whole batch: cols[C·KD·KH·KW, N·OD·OH·OW], row
 * ((c·KD + a)·KH + b)·KW + e, column n·P + (z·OH + y)·OW + x with P = OD·OH·OW. Rows of one
 * channel group are contiguous, so each group is one GEMM operand at an offset.
 */
export interface ConvGeometry {
  n: number;
  c: number;
  /** Image (input) spatial dims. */
  id: number;
  ih: number;
  iw: number;
  kd: number;
  kh: number;
  kw: number;
  /** Output spatial dims. */
  od: number;
  oh: number;
  ow: number;
  sd: number;
  sh: number;
  sw: number;
  /** Padding before each spatial dim (the padding after only shows in the output size). */
  pd: number;
  ph: number;
  pw: number;
  dd: number;
  dh: number;
  dw: number;
}

/** Lifts per-dim values of a 1-, 2- or 3-d convolution to 3-d, filling leading dims with `fill`. */
export function lift3(values: readonly number[], fill: number): [number, number, number] {
  const r = values.length;
  return [r >= 3 ? values[r - 3]! : fill, r >= 2 ? values[r - 2]! : fill, values[r - 1]!];
}

export function geometry(
  n: number,
  c: number,
  image: readonly number[],
  kernel: readonly number[],
  out: readonly number[],
  stride: readonly number[],
  padBegin: readonly number[],
  dilation: readonly number[],
): ConvGeometry {
  const [id, ih, iw] = lift3(image, 1);
  const [kd, kh, kw] = lift3(kernel, 1);
  const [od, oh, ow] = lift3(out, 1);
  const [sd, sh, sw] = lift3(stride, 1);
  const [pd, ph, pw] = lift3(padBegin, 0);
  const [dd, dh, dw] = lift3(dilation, 1);
  return { n, c, id, ih, iw, kd, kh, kw, od, oh, ow, sd, sh, sw, pd, ph, pw, dd, dh, dw };
}

/** True when the column matrix is just the input with channels moved first (1×1, stride 1, no padding). */
export function isPointwise(g: ConvGeometry): boolean {
  return (
    g.kd * g.kh * g.kw === 1 &&
    g.sd === 1 &&
    g.sh === 1 &&
    g.sw === 1 &&
    g.pd === 0 &&
    g.ph === 0 &&
    g.pw === 0 &&
    g.od === g.id &&
    g.oh === g.ih &&
    g.ow === g.iw
  );
}

/** First output x whose input column (x·s − p + e·d) is ≥ 0, and one past the last that is < size. */
function validRange(size: number, outSize: number, s: number, p: number, off: number): [number, number] {
  // ix = ox·s + (off − p); need 0 ≤ ix < size.
  const shift = off - p;
  let lo = shift >= 0 ? 0 : Math.ceil(-shift / s);
  let hi = size - shift <= 0 ? 0 : Math.ceil((size - shift) / s);
  if (lo > outSize) lo = outSize;
  if (hi > outSize) hi = outSize;
  if (hi < lo) hi = lo;
  return [lo, hi];
}

/**
 * Fills `cols` (zero-initialised, length C·K·N·P) from x [N, C, ID, IH, IW].
 * Only in-range positions are written, so padding stays zero.
 */
export function im2col(x: Float32Array, g: ConvGeometry, cols: Float32Array): void {
  moveColumns(x, g, cols, true);
}

/** Adds the column matrix back onto an image: dx [N, C, ID, IH, IW] += col2im(cols). The adjoint of im2col. */
export function col2im(cols: Float32Array, g: ConvGeometry, dx: Float32Array): void {
  moveColumns(dx, g, cols, false);
}

/**
 * The one index walk of im2col and its adjoint: `toCols` copies image values into the columns, otherwise the
 * columns are added back onto the image. The direction is chosen per output row, outside the innermost loops.
 */
function moveColumns(image: Float32Array, g: ConvGeometry, cols: Float32Array, toCols: boolean): void {
  const { n: N, c: C, id, ih, iw, kd, kh, kw, od, oh, ow, sd, sh, sw, pd, ph, pw, dd, dh, dw } = g;
  const P = od * oh * ow;
  const NP = N * P;
  const plane = id * ih * iw;
  let row = 0;
  for (let c = 0; c < C; c++) {
    for (let a = 0; a < kd; a++) {
      for (let b = 0; b < kh; b++) {
        for (let e = 0; e < kw; e++, row++) {
          const [xlo, xhi] = validRange(iw, ow, sw, pw, e * dw);
          if (xlo === xhi) continue;
          const xshift = e * dw - pw;
          const rowBase = row * NP;
          for (let n = 0; n < N; n++) {
            const imageBase = (n * C + c) * plane;
            const colBase = rowBase + n * P;
            for (let z = 0; z < od; z++) {
              const iz = z * sd - pd + a * dd;
              if (iz < 0 || iz >= id) continue;
              for (let y = 0; y < oh; y++) {
                const iy = y * sh - ph + b * dh;
                if (iy < 0 || iy >= ih) continue;
                const img = imageBase + (iz * ih + iy) * iw + xshift;
                const col = colBase + (z * oh + y) * ow;
                if (toCols) {
                  if (sw === 1) {
                    for (let ox = xlo; ox < xhi; ox++) cols[col + ox] = image[img + ox]!;
                  } else {
                    for (let ox = xlo; ox < xhi; ox++) cols[col + ox] = image[img + ox * sw]!;
                  }
                } else if (sw === 1) {
                  for (let ox = xlo; ox < xhi; ox++) image[img + ox]! += cols[col + ox]!;
                } else {
                  for (let ox = xlo; ox < xhi; ox++) image[img + ox * sw]! += cols[col + ox]!;
                }
              }
            }
          }
        }
      }
    }
  }
}

/** [N, C, P] → [C, N·P] (batch folded into the columns). Returns the input itself when N is 1. */
export function toChannelMajor(x: Float32Array, n: number, c: number, p: number): Float32Array {
  if (n === 1) return x;
  const out = new Float32Array(n * c * p);
  const np = n * p;
  for (let b = 0; b < n; b++) {
    for (let ch = 0; ch < c; ch++) {
      const src = (b * c + ch) * p;
      out.set(x.subarray(src, src + p), ch * np + b * p);
    }
  }
  return out;
}

/** [C, N·P] → [N, C, P], adding bias[c] when given. May return the input itself when N is 1 and there is no bias. */
export function fromChannelMajor(t: Float32Array, n: number, c: number, p: number, bias?: Float32Array): Float32Array {
  if (n === 1 && !bias) return t;
  const out = new Float32Array(n * c * p);
  const np = n * p;
  for (let b = 0; b < n; b++) {
    for (let ch = 0; ch < c; ch++) {
      const src = ch * np + b * p;
      const dst = (b * c + ch) * p;
      if (bias) {
        const bv = bias[ch]!;
        for (let i = 0; i < p; i++) out[dst + i] = t[src + i]! + bv;
      } else {
        out.set(t.subarray(src, src + p), dst);
      }
    }
  }
  return out;
}

/** Per-channel sums of g [N, C, P] (the bias gradient), accumulated in float64. */
export function channelSums(g: Float32Array, n: number, c: number, p: number): Float32Array {
  const out = new Float32Array(c);
  for (let ch = 0; ch < c; ch++) {
    let s = 0;
    for (let b = 0; b < n; b++) {
      const base = (b * c + ch) * p;
      for (let i = 0; i < p; i++) s += g[base + i]!;
    }
    out[ch] = s;
  }
  return out;
}
