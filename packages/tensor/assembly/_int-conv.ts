// Integer convolution (ConvInteger) per image: int16 inputs and weights, exact int32 sums that wrap
// modulo 2^32 like any int32 addition (so the order of the additions never matters). Same job
// descriptor (_conv-job.ts) and chunking as the float conv (_conv.ts), but
//   X       int16 images [N, C, ID, IH, IW] (read slack after the last), or int8 ones (X_INT8),
//   WEIGHT  per group, per block of 4 output channels, per pair of reduction rows: 4 i32 words,
//           each the int16 pair (w[co, 2q], w[co, 2q + 1]) (zero past the group's rows or channels),
//   Y       int32 output [N, COUT, P],
//   scratch cols (COLS_LEN i32 + slack), then the zero-padded int16 image (PAD_LEN int16).
// The columns of a band of output rows are stored as pairs of reduction rows interleaved,
// cols[g][q][j] = (x of row 2q, x of row 2q + 1) at output position j, so that i32x4.dot_i16x8_s
// on 4 positions against a splatted weight pair does 8 multiply-adds at once.
import { requantizeInt32 } from './_requantize';
import { N, C, ID, IH, IW, KD, KH, KW, OD, OH, OW, SD, SH, SW, PD, PH, PW, DD, DH, DW, COUT, GROUPS, X, WEIGHT, Y, TILE, COLS_LEN, SCRATCH, PAD_D, PAD_H, PAD_W, PAD_LEN, field, groupReduction, inputPlane, outputRows } from './_conv-job';

// @ts-ignore: decorator
@inline const PAIRS: usize = 172; // pairs of reduction rows per group, ceil(C/groups·KD·KH·KW / 2)
// @ts-ignore: decorator
@inline const X_INT8: usize = 176; // 1: X holds int8 images, widened while padding (PAD_LEN is then never 0)
// The optional epilogue (_requantize.ts) applied to each image's sums [COUT, P] as soon as they are computed:
// @ts-ignore: decorator
@inline const EPI_OUT: usize = 180; // output [N, COUT, P] of EPI_OUT_BYTES per value; 0: no epilogue
// @ts-ignore: decorator
@inline const EPI_OUT_BYTES: usize = 184;
// @ts-ignore: decorator
@inline const EPI_OTHER: usize = 188; // the fused add's input [N, COUT, P] of EPI_OTHER_BYTES per value
// @ts-ignore: decorator
@inline const EPI_OTHER_BYTES: usize = 192;
// @ts-ignore: decorator
@inline const EPI_PARAMS: usize = 196; // 7 vectors of COUT i32 (see _requantize.ts)
// @ts-ignore: decorator
@inline const EPI_FLAGS: usize = 200;
// @ts-ignore: decorator
@inline const EPI_LO: usize = 204;
// @ts-ignore: decorator
@inline const EPI_HI: usize = 208;

/** i32 words past a column buffer that the whole-vector row copies may write into. */
// @ts-ignore: decorator
@inline const INT_COLS_SLACK: i32 = 16;

/** Image n (int16, or int8 widened to int16), zero-padded into pad [C, DP, HP, WP]. */
function padImage16(job: usize, xn: usize, pad: usize, int8: bool): void {
  const c = field(job, C), id = field(job, ID), ih = field(job, IH), iw = field(job, IW);
  const dp = field(job, PAD_D), hp = field(job, PAD_H), wp = field(job, PAD_W);
  const pd = field(job, PD), ph = field(job, PH), pw = field(job, PW);
  memory.fill(pad, 0, <usize>c * <usize>(dp * hp * wp) << 1);
  let src = xn;
  for (let ch = 0; ch < c; ch++) {
    for (let z = 0; z < id; z++) {
      let dst = pad + (<usize>(((ch * dp + z + pd) * hp + ph) * wp + pw) << 1);
      for (let y = 0; y < ih; y++) {
        if (int8) {
          // Whole vectors only inside the row: past it lie the zero pads.
          let i = 0;
          for (; i + 8 <= iw; i += 8) v128.store(dst + (<usize>i << 1), v128.load8x8_s(src + <usize>i));
          for (; i < iw; i++) store<i16>(dst + (<usize>i << 1), <i16>load<i8>(src + <usize>i));
          src += <usize>iw;
        } else {
          memory.copy(dst, src, <usize>iw << 1);
          src += <usize>iw << 1;
        }
        dst += <usize>wp << 1;
      }
    }
  }
}

/** Byte offset in the (padded) image of reduction row k of group g: channel, then kernel tap. */
// @ts-ignore: decorator
@inline function rowOffset(job: usize, g: i32, k: i32): i32 {
  const kd = field(job, KD), kh = field(job, KH), kw = field(job, KW);
  const hp = field(job, PAD_H), wp = field(job, PAD_W), dp = field(job, PAD_D);
  const cg = field(job, C) / field(job, GROUPS);
  const kvol = kd * kh * kw;
  const ch = g * cg + k / kvol;
  let t = k % kvol;
  const a = t / (kh * kw);
  t -= a * kh * kw;
  const b = t / kw;
  const e = t - b * kw;
  return (((ch * dp + a * field(job, DD)) * hp + b * field(job, DH)) * wp + e * field(job, DW)) << 1;
}

/**
 * Interleaved columns of output rows r0..r1 of group g into cols [PAIRS, twp] (i32 pairs). Rows are
 * built 8 positions at a time: a row may spill up to 7 pairs into the next (overwritten next) or
 * into the slack, and read up to 16 int16 (32 at stride 2) past its end.
 */
function bandPairs(job: usize, img: usize, g: i32, r0: i32, r1: i32, twp: i32, cols: usize): void {
  const pairs = field(job, PAIRS);
  const kg = groupReduction(job);
  const oh = field(job, OH), ow = field(job, OW);
  const sd = field(job, SD), sh = field(job, SH), sw = field(job, SW);
  const hp = field(job, PAD_H), wp = field(job, PAD_W);
  const zero = i16x8.splat(0);
  for (let q = 0; q < pairs; q++) {
    const k0 = 2 * q;
    const has1 = k0 + 1 < kg;
    const o0 = rowOffset(job, g, k0);
    const o1 = has1 ? rowOffset(job, g, k0 + 1) : o0;
    let dst = cols + (<usize>(q * twp) << 2);
    let z = r0 / oh;
    let y = r0 - z * oh;
    for (let r = r0; r < r1; r++) {
      const base = img + (<usize>((z * sd * hp + y * sh) * wp) << 1);
      const s0 = base + <usize>o0;
      const s1 = base + <usize>o1;
      if (sw == 1) {
        for (let i = 0; i < ow; i += 8) {
          const a = v128.load(s0 + (<usize>i << 1));
          const b = has1 ? v128.load(s1 + (<usize>i << 1)) : zero;
          v128.store(dst + (<usize>i << 2), v128.shuffle<i16>(a, b, 0, 8, 1, 9, 2, 10, 3, 11));
          v128.store(dst + (<usize>i << 2), v128.shuffle<i16>(a, b, 4, 12, 5, 13, 6, 14, 7, 15), 16);
        }
      } else if (sw == 2) {
        for (let i = 0; i < ow; i += 8) {
          const pa = s0 + (<usize>i << 2);
          const a = v128.shuffle<i16>(v128.load(pa), v128.load(pa, 16), 0, 2, 4, 6, 8, 10, 12, 14);
          let b = zero;
          if (has1) {
            const pb = s1 + (<usize>i << 2);
            b = v128.shuffle<i16>(v128.load(pb), v128.load(pb, 16), 0, 2, 4, 6, 8, 10, 12, 14);
          }
          v128.store(dst + (<usize>i << 2), v128.shuffle<i16>(a, b, 0, 8, 1, 9, 2, 10, 3, 11));
          v128.store(dst + (<usize>i << 2), v128.shuffle<i16>(a, b, 4, 12, 5, 13, 6, 14, 7, 15), 16);
        }
      } else {
        for (let i = 0; i < ow; i++) {
          const off = <usize>(i * sw) << 1;
          const lo = <u32>load<u16>(s0 + off);
          const hi = has1 ? <u32>load<u16>(s1 + off) : 0;
          store<u32>(dst + (<usize>i << 2), lo | (hi << 16));
        }
      }
      dst += <usize>ow << 2;
      if (++y == oh) {
        y = 0;
        z++;
      }
    }
  }
}

/** Stores lanes 0..count−1 of v at dst (count < 4). */
// @ts-ignore: decorator
@inline function storeLanes(dst: usize, v: v128, count: i32): void {
  if (count > 0) store<i32>(dst, i32x4.extract_lane(v, 0));
  if (count > 1) store<i32>(dst, i32x4.extract_lane(v, 1), 4);
  if (count > 2) store<i32>(dst, i32x4.extract_lane(v, 2), 8);
}

/** Stores 8 sums (a: positions 0..3, b: 4..7) of one output row, only the first `count`. */
// @ts-ignore: decorator
@inline function storeRow(dst: usize, a: v128, b: v128, count: i32): void {
  if (count >= 8) {
    v128.store(dst, a);
    v128.store(dst, b, 16);
  } else if (count >= 4) {
    v128.store(dst, a);
    storeLanes(dst + 16, b, count - 4);
  } else {
    storeLanes(dst, a, count);
  }
}

/**
 * y[g·coutG + co, pos0 + j] = Σ_q dot(cols[q][j], w[co][q]) for j < tw, 8 positions by 4 output
 * channels at a time: the 8 positions' columns stay in L1 across the output-channel blocks.
 */
function pairGemm(w: usize, cols: usize, pairs: i32, twp: i32, tw: i32, coutG: i32, y: usize, p: i32): void {
  const blocks = (coutG + 3) >> 2;
  const rowB = <usize>twp << 2;
  for (let j = 0; j < tw; j += 8) {
    const cj = cols + (<usize>j << 2);
    const count = min(8, tw - j);
    for (let cb = 0; cb < blocks; cb++) {
      let wq = w + (<usize>(cb * pairs) << 4);
      let cq = cj;
      let a0 = i32x4.splat(0), b0 = i32x4.splat(0), a1 = i32x4.splat(0), b1 = i32x4.splat(0);
      let a2 = i32x4.splat(0), b2 = i32x4.splat(0), a3 = i32x4.splat(0), b3 = i32x4.splat(0);
      for (let q = 0; q < pairs; q++) {
        const c0 = v128.load(cq);
        const c1 = v128.load(cq, 16);
        let s = v128.load32_splat(wq);
        a0 = i32x4.add(a0, i32x4.dot_i16x8_s(c0, s));
        b0 = i32x4.add(b0, i32x4.dot_i16x8_s(c1, s));
        s = v128.load32_splat(wq, 4);
        a1 = i32x4.add(a1, i32x4.dot_i16x8_s(c0, s));
        b1 = i32x4.add(b1, i32x4.dot_i16x8_s(c1, s));
        s = v128.load32_splat(wq, 8);
        a2 = i32x4.add(a2, i32x4.dot_i16x8_s(c0, s));
        b2 = i32x4.add(b2, i32x4.dot_i16x8_s(c1, s));
        s = v128.load32_splat(wq, 12);
        a3 = i32x4.add(a3, i32x4.dot_i16x8_s(c0, s));
        b3 = i32x4.add(b3, i32x4.dot_i16x8_s(c1, s));
        wq += 16;
        cq += rowB;
      }
      const co = cb << 2;
      const yj = y + ((<usize>co * <usize>p + <usize>j) << 2);
      const pB = <usize>p << 2;
      storeRow(yj, a0, b0, count);
      if (co + 1 < coutG) storeRow(yj + pB, a1, b1, count);
      if (co + 2 < coutG) storeRow(yj + 2 * pB, a2, b2, count);
      if (co + 3 < coutG) storeRow(yj + 3 * pB, a3, b3, count);
    }
  }
}

/** y_n = W·cols_n for image n (int32, wrapping), band by band and group by group. */
export function intConvImage(job: usize, n: i32, scratch: usize): void {
  const c = field(job, C), cout = field(job, COUT), groups = field(job, GROUPS);
  const ow = field(job, OW), rows = outputRows(job);
  const plane = inputPlane(job);
  const p = rows * ow;
  const coutG = cout / groups;
  const pairs = field(job, PAIRS);
  const blocks = (coutG + 3) >> 2;
  const w = <usize>field(job, WEIGHT);
  const int8 = field(job, X_INT8) != 0;
  const xn = <usize>field(job, X) + (<usize>(n * c) * <usize>plane << (int8 ? 0 : 1));
  const yn = <usize>field(job, Y) + (<usize>(n * cout) * <usize>p << 2);
  let img = xn;
  if (field(job, PAD_LEN)) {
    img = scratch + (<usize>(field(job, COLS_LEN) + INT_COLS_SLACK) << 2);
    padImage16(job, xn, img, int8);
  }
  const tile = field(job, TILE);
  for (let r0 = 0; r0 < rows; r0 += tile) {
    const r1 = min(rows, r0 + tile);
    const tw = (r1 - r0) * ow;
    const twp = (tw + 7) & ~7;
    for (let g = 0; g < groups; g++) {
      bandPairs(job, img, g, r0, r1, twp, scratch);
      pairGemm(w + (<usize>(g * blocks * pairs) << 4), scratch, pairs, twp, tw, coutG,
        yn + ((<usize>(g * coutG) * <usize>p + <usize>(r0 * ow)) << 2), p);
    }
  }
  const epiOut = <usize>field(job, EPI_OUT);
  if (epiOut != 0) {
    const at = <usize>(n * cout) * <usize>p;
    const eBytes = field(job, EPI_OTHER_BYTES);
    requantizeInt32(yn, <usize>field(job, EPI_OTHER) + at * <usize>eBytes, eBytes, epiOut + at * <usize>field(job, EPI_OUT_BYTES),
      field(job, EPI_OUT_BYTES), 1, cout, p, <usize>field(job, EPI_PARAMS), field(job, EPI_FLAGS), field(job, EPI_LO), field(job, EPI_HI));
  }
}
