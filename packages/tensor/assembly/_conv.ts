// Convolution per image, Caffe style, entirely in linear memory: for each image the columns of a
// band of output rows (cols [K, rows·OW], K = C/groups·KD·KH·KW per group) are built in a small
// per-thread buffer that stays in cache, and the packed gemm runs on it in place:
//   forward   y_n[co, p] = W · cols (+ bias), written straight into NCHW;
//   backward  dW_chunk += gy_n · colsᵀ   and   dcols = Wᵀ · gy_n, added back into dx_n (col2im).
// Columns are copied from a zero-padded copy of the image (so no tap needs a bounds check) and
// col2im adds into a padded gradient that is cropped at the end. 1×1 stride-1 unpadded convs use
// the image itself as its columns. Geometry is 3-d (1-d and 2-d convs have leading dims of 1). The host fills a job descriptor (i32 fields below);
// images are grouped into chunks, and each chunk owns one partial dW so the sum over the batch
// has the same order however chunks are spread over threads.
import { gemm, gemmPackedA, packAWhole, packedABytes } from './_gemm';
import { intConvImage } from './_int-conv';
import { ACT_RELU6 as ACTIVATION_RELU6, apply1, apply4, CANONICAL_NAN } from './_activation';
import { N, C, ID, IH, IW, KD, KH, KW, OD, OH, OW, SD, SH, SW, PD, PH, PW, DD, DH, DW, COUT, GROUPS, X, WEIGHT, Y, TILE, COLS_LEN, SCRATCH, PAD_D, PAD_H, PAD_W, PAD_LEN, field, groupReduction, inputPlane, outputRows } from './_conv-job';

// @ts-ignore: decorator
@inline export const JOB_NEXT: usize = 0;
// @ts-ignore: decorator
@inline export const JOB_KIND: usize = 4;
// @ts-ignore: decorator
@inline export const KIND_CONV_FORWARD: i32 = 1;
// @ts-ignore: decorator
@inline export const KIND_CONV_BACKWARD: i32 = 2;
// @ts-ignore: decorator
@inline export const KIND_INT_CONV: i32 = 3; // ConvInteger forward, assembly/_int-conv.ts

// @ts-ignore: decorator
@inline const BIAS: usize = 104; // 0: no bias
// @ts-ignore: decorator
@inline const GY: usize = 112; // backward: gradient of the output
// @ts-ignore: decorator
@inline const DX: usize = 116; // 0: input gradient not needed
// @ts-ignore: decorator
@inline const DWP: usize = 120; // 0: weight gradient not needed; else one weight-sized partial per chunk
// @ts-ignore: decorator
@inline const CHUNK: usize = 124; // images per chunk
// @ts-ignore: decorator
@inline export const CONV_CHUNKS: usize = 128;
// @ts-ignore: decorator
@inline const POINTWISE: usize = 136;
// @ts-ignore: decorator
@inline export const CONV_STAGED: usize = 168; // images whose inputs the host has copied in so far (atomic)
// @ts-ignore: decorator
@inline const EPI_ADD: usize = 212; // forward: a tensor [N, COUT, P] added to the output; 0: none
// @ts-ignore: decorator
@inline const EPI_ACT: usize = 216; // forward: ACT_NONE, ACT_RELU or ACT_RELU6 on the output after the add
// @ts-ignore: decorator
@inline const WPACK: usize = 220; // forward: the weights packed by convPackWeights (per group); 0: packed per call to gemm
// @ts-ignore: decorator
@inline export const CONV_N: usize = 8;
// @ts-ignore: decorator
@inline export const CONV_CHUNK: usize = 124;

const JOB_BYTES: usize = 256;

/** Bytes of one job descriptor. */
export function jobBytes(): usize {
  return JOB_BYTES;
}

/** Copies n floats (any alignment), four at a time. */
// @ts-ignore: decorator
@inline function copyRun(dst: usize, src: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(dst + (<usize>i << 2), v128.load(src + (<usize>i << 2)));
  for (; i < n; i++) store<f32>(dst + (<usize>i << 2), load<f32>(src + (<usize>i << 2)));
}

/** dst[i] += src[i] for n floats. */
// @ts-ignore: decorator
@inline function addRun(dst: usize, src: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(dst + o, f32x4.add(v128.load(dst + o), v128.load(src + o)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    store<f32>(dst + o, load<f32>(dst + o) + load<f32>(src + o));
  }
}

/** Floats past a column buffer that the whole-vector row copies may write into. */
// @ts-ignore: decorator
@inline export const COLS_SLACK: i32 = 16;

/**
 * Where one image's columns are read from, and its input gradient accumulated: a zero-padded copy
 * [C, DP, HP, WP] in the thread's scratch when the conv pads, else the image itself (pads 0).
 * Padded coordinates turn every tap into an in-bounds read, so rows copy without bounds checks.
 */
function padImage(job: usize, xn: usize, pad: usize): void {
  const c = field(job, C), dp = field(job, PAD_D), hp = field(job, PAD_H), wp = field(job, PAD_W);
  memory.fill(pad, 0, <usize>c * <usize>(dp * hp * wp) << 2);
  copyInterior(job, xn, pad, true);
}

/** Copies the interior of a padded image back to an image (the input gradient). */
function cropImage(job: usize, pad: usize, dxn: usize): void {
  copyInterior(job, dxn, pad, false);
}

/** The rows of an image and the interior of its padded copy, copied one way (`toPadded`) or the other. */
@inline function copyInterior(job: usize, image: usize, pad: usize, toPadded: bool): void {
  const c = field(job, C), id = field(job, ID), ih = field(job, IH), iw = field(job, IW);
  const dp = field(job, PAD_D), hp = field(job, PAD_H), wp = field(job, PAD_W);
  const pd = field(job, PD), ph = field(job, PH), pw = field(job, PW);
  let row = image;
  for (let ch = 0; ch < c; ch++) {
    for (let z = 0; z < id; z++) {
      let padded = pad + (<usize>(((ch * dp + z + pd) * hp + ph) * wp + pw) << 2);
      for (let y = 0; y < ih; y++) {
        if (toPadded) copyRun(padded, row, iw);
        else copyRun(row, padded, iw);
        row += <usize>iw << 2;
        padded += <usize>wp << 2;
      }
    }
  }
}

/**
 * Columns of output rows r0..r1 (row r = z·OH + y) of the (padded) image at img into cols
 * [C·KD·KH·KW, (r1 − r0)·OW]. Rows are copied in whole vectors: a row may spill up to 3 floats
 * into the next one (overwritten next) or into the buffer's slack, and read past its end.
 * With add set it is the adjoint (col2im): cols are added onto the image, exactly in range.
 */
function bandColumns(job: usize, img: usize, r0: i32, r1: i32, cols: usize, add: bool): void {
  const c = field(job, C);
  const kd = field(job, KD), kh = field(job, KH), kw = field(job, KW);
  const oh = field(job, OH), ow = field(job, OW);
  const sd = field(job, SD), sh = field(job, SH), sw = field(job, SW);
  const dd = field(job, DD), dh = field(job, DH), dw = field(job, DW);
  const dp = field(job, PAD_D), hp = field(job, PAD_H), wp = field(job, PAD_W);
  const owB = <usize>ow << 2;
  const zero = f32x4.splat(0);
  let dst = cols;
  for (let ch = 0; ch < c; ch++) {
    for (let a = 0; a < kd; a++) {
      for (let b = 0; b < kh; b++) {
        for (let e = 0; e < kw; e++) {
          let z = r0 / oh;
          let y = r0 - z * oh;
          for (let r = r0; r < r1; r++) {
            const s = img + (<usize>(((ch * dp + z * sd + a * dd) * hp + y * sh + b * dh) * wp + e * dw) << 2);
            if (!add) {
              if (sw == 1) {
                for (let i = 0; i < ow; i += 4) v128.store(dst + (<usize>i << 2), v128.load(s + (<usize>i << 2)));
              } else if (sw == 2) {
                for (let i = 0; i < ow; i += 4) {
                  const v0 = v128.load(s + (<usize>i << 3));
                  const v1 = v128.load(s + (<usize>i << 3), 16);
                  v128.store(dst + (<usize>i << 2), v128.shuffle<f32>(v0, v1, 0, 2, 4, 6));
                }
              } else {
                for (let i = 0; i < ow; i++) store<f32>(dst + (<usize>i << 2), load<f32>(s + (<usize>(i * sw) << 2)));
              }
            } else if (sw == 1) {
              addRun(s, dst, ow);
            } else {
              let i = 0;
              if (sw == 2) {
                // Only whole 8-float windows strictly inside the row: the image may be another thread's neighbour.
                for (; i + 4 < ow; i += 4) {
                  const v = v128.load(dst + (<usize>i << 2));
                  const t = s + (<usize>i << 3);
                  v128.store(t, f32x4.add(v128.load(t), v128.shuffle<f32>(v, zero, 0, 4, 1, 4)));
                  v128.store(t, f32x4.add(v128.load(t, 16), v128.shuffle<f32>(v, zero, 2, 4, 3, 4)), 16);
                }
              }
              for (; i < ow; i++) {
                const t = s + (<usize>(i * sw) << 2);
                store<f32>(t, load<f32>(t) + load<f32>(dst + (<usize>i << 2)));
              }
            }
            dst += owB;
            if (++y == oh) {
              y = 0;
              z++;
            }
          }
        }
      }
    }
  }
}

/** Byte address of a thread's scratch areas (see SCRATCH): 0 cols, 1 dcols, 2 pad, 3 dpad. */
function scratchArea(job: usize, scratch: usize, area: i32): usize {
  const cols = <usize>(field(job, COLS_LEN) + COLS_SLACK) << 2;
  if (area < 3) return scratch + <usize>area * cols;
  return scratch + 2 * cols + (<usize>field(job, PAD_LEN) << 2);
}

/**
 * Packs every group's weights once at WPACK (group g at g · packedABytes) for the forward's gemms, which
 * otherwise repack them for every image and band.
 */
export function convPackWeights(job: usize): void {
  const wpack = <usize>field(job, WPACK);
  if (!wpack) return;
  const coutG = field(job, COUT) / field(job, GROUPS);
  const kg = groupReduction(job);
  const w = <usize>field(job, WEIGHT);
  const stride = packedABytes(coutG, kg);
  for (let g = 0; g < field(job, GROUPS); g++) packAWhole(w + (<usize>(g * coutG * kg) << 2), kg, coutG, kg, wpack + <usize>g * stride);
}

/** Bytes `convPackWeights` writes. */
export function convPackedWeightBytes(coutG: i32, kg: i32, groups: i32): usize {
  return <usize>groups * packedABytes(coutG, kg);
}

/** Byte address of image n in the f32 tensor [N, channels, plane] at base. */
// @ts-ignore: decorator
@inline function imageAt(base: usize, n: i32, channels: i32, plane: i32): usize {
  return base + (<usize>(n * channels) * <usize>plane << 2);
}

/** One group's weight times B: from the packed weights when the job has them. */
// @ts-ignore: decorator
@inline function weightGemm(job: usize, g: i32, coutG: i32, kg: i32, n: i32, k: i32, b: usize, ldb: i32, c: usize, ldc: i32, work: usize): void {
  const wpack = <usize>field(job, WPACK);
  if (wpack) gemmPackedA(coutG, n, k, wpack + <usize>g * packedABytes(coutG, kg), b, ldb, c, ldc, 0, work);
  else gemm(0, 0, coutG, n, k, <usize>field(job, WEIGHT) + (<usize>(g * coutG * kg) << 2), kg, b, ldb, c, ldc, 0, work);
}

/** y_n = W·cols_n (+ bias) for image n, band by band. */
function forwardImage(job: usize, n: i32, work: usize, scratch: usize): void {
  const c = field(job, C), cout = field(job, COUT), groups = field(job, GROUPS);
  const ow = field(job, OW), rows = outputRows(job), p = rows * ow;
  const cg = c / groups, coutG = cout / groups, kg = groupReduction(job);
  const xn = imageAt(<usize>field(job, X), n, c, inputPlane(job));
  const yn = imageAt(<usize>field(job, Y), n, cout, p);
  if (field(job, POINTWISE)) {
    for (let g = 0; g < groups; g++) {
      weightGemm(job, g, coutG, kg, p, cg, xn + (<usize>(g * cg) * <usize>p << 2), p, yn + (<usize>(g * coutG) * <usize>p << 2), p, work);
    }
  } else {
    let img = xn;
    if (field(job, PAD_LEN)) {
      img = scratchArea(job, scratch, 2);
      padImage(job, xn, img);
    }
    const tile = field(job, TILE);
    for (let r0 = 0; r0 < rows; r0 += tile) {
      const r1 = min(rows, r0 + tile);
      const tw = (r1 - r0) * ow;
      bandColumns(job, img, r0, r1, scratch, false);
      for (let g = 0; g < groups; g++) {
        weightGemm(job, g, coutG, kg, tw, kg, scratch + (<usize>(g * kg) * <usize>tw << 2), tw,
          yn + ((<usize>(g * coutG) * <usize>p + <usize>(r0 * ow)) << 2), p, work);
      }
    }
  }
  const add = <usize>field(job, EPI_ADD);
  epilogue(yn, cout, p, <usize>field(job, BIAS), add ? imageAt(add, n, cout, p) : 0, field(job, EPI_ACT));
}

// @ts-ignore: decorator
@inline const ACT_RELU: i32 = 1;
// @ts-ignore: decorator
@inline const ACT_RELU6: i32 = 2;

/**
 * One image's output y [cout, p] += bias (per channel), then += add (same layout), then the activation, in
 * one pass, with the same operations as the separate kernels: Add's f32 add, Relu's max(v, 0) (_pointwise.ts)
 * and Relu6's (_activation.ts, with a NaN stored as JavaScript stores it).
 */
function epilogue(y: usize, cout: i32, p: i32, bias: usize, add: usize, act: i32): void {
  if (!bias && !add && !act) return;
  const zero = f32x4.splat(0);
  const nan = i32x4.splat(CANONICAL_NAN);
  for (let co = 0; co < cout; co++) {
    const row = y + (<usize>co * <usize>p << 2);
    const other = add + (<usize>co * <usize>p << 2);
    const b = bias ? load<f32>(bias + (<usize>co << 2)) : 0;
    const bv = f32x4.splat(b);
    let i = 0;
    for (; i + 4 <= p; i += 4) {
      const o = <usize>i << 2;
      let v = v128.load(row + o);
      if (bias) v = f32x4.add(v, bv);
      if (add) v = f32x4.add(v, v128.load(other + o));
      if (act == ACT_RELU) v = f32x4.max(v, zero);
      else if (act == ACT_RELU6) {
        v = apply4(ACTIVATION_RELU6, v, 0, 0);
        v = v128.bitselect(nan, v, f32x4.ne(v, v));
      }
      v128.store(row + o, v);
    }
    for (; i < p; i++) {
      const o = <usize>i << 2;
      let v = load<f32>(row + o);
      if (bias) v = v + b;
      if (add) v = v + load<f32>(other + o);
      if (act == ACT_RELU) v = max<f32>(v, 0);
      else if (act == ACT_RELU6) v = apply1(ACTIVATION_RELU6, v, 0, 0);
      if (act == ACT_RELU6 && v != v) store<i32>(row + o, CANONICAL_NAN);
      else store<f32>(row + o, v);
    }
  }
}

/** dwp += gy_n·cols_nᵀ (when dwp is set) and dx_n = col2im(Wᵀ·gy_n) (when DX is set) for image n. */
function backwardImage(job: usize, n: i32, work: usize, scratch: usize, dwp: usize): void {
  const c = field(job, C), cout = field(job, COUT), groups = field(job, GROUPS);
  const ow = field(job, OW), rows = outputRows(job), p = rows * ow;
  const cg = c / groups, coutG = cout / groups, kg = groupReduction(job);
  const plane = inputPlane(job);
  const w = <usize>field(job, WEIGHT);
  const xn = imageAt(<usize>field(job, X), n, c, plane);
  const gyn = imageAt(<usize>field(job, GY), n, cout, p);
  const dx = <usize>field(job, DX);
  const dxn = imageAt(dx, n, c, plane);
  if (field(job, POINTWISE)) {
    for (let g = 0; g < groups; g++) {
      const wg = w + (<usize>(g * coutG * kg) << 2);
      const gyg = gyn + (<usize>(g * coutG) * <usize>p << 2);
      const xg = xn + (<usize>(g * cg) * <usize>p << 2);
      if (dwp) gemm(0, 1, coutG, cg, p, gyg, p, xg, p, dwp + (<usize>(g * coutG * kg) << 2), kg, 1, work);
      if (dx) gemm(1, 0, cg, p, coutG, wg, kg, gyg, p, dxn + (<usize>(g * cg) * <usize>p << 2), p, 0, work);
    }
    return;
  }
  const cols = scratch;
  const dcols = scratchArea(job, scratch, 1);
  const padded = field(job, PAD_LEN) != 0;
  let img = xn;
  let dimg = dxn;
  if (padded) {
    img = scratchArea(job, scratch, 2);
    dimg = scratchArea(job, scratch, 3);
    if (dwp) padImage(job, xn, img);
    if (dx) memory.fill(dimg, 0, <usize>c * <usize>(field(job, PAD_D) * field(job, PAD_H) * field(job, PAD_W)) << 2);
  } else if (dx) {
    memory.fill(dxn, 0, <usize>c * <usize>plane << 2);
  }
  const tile = field(job, TILE);
  for (let r0 = 0; r0 < rows; r0 += tile) {
    const r1 = min(rows, r0 + tile);
    const tw = (r1 - r0) * ow;
    if (dwp) bandColumns(job, img, r0, r1, cols, false);
    for (let g = 0; g < groups; g++) {
      const wg = w + (<usize>(g * coutG * kg) << 2);
      const gyg = gyn + ((<usize>(g * coutG) * <usize>p + <usize>(r0 * ow)) << 2);
      const band = <usize>(g * kg) * <usize>tw << 2;
      if (dwp) gemm(0, 1, coutG, kg, tw, gyg, p, cols + band, tw, dwp + (<usize>(g * coutG * kg) << 2), kg, 1, work);
      if (dx) gemm(1, 0, kg, tw, coutG, wg, kg, gyg, p, dcols + band, tw, 0, work);
    }
    if (dx) bandColumns(job, dimg, r0, r1, dcols, true);
  }
  if (padded && dx) cropImage(job, dimg, dxn);
}

/** Computes chunk i of the job at `job` with this thread's scratch (thread 0 or 1) and gemm work area. */
export function convChunk(job: usize, i: i32, work: usize, thread: i32): void {
  const chunk = field(job, CHUNK);
  const n0 = i * chunk;
  const n1 = min(field(job, N), n0 + chunk);
  const scratch = <usize>load<i32>(job + SCRATCH + (<usize>thread << 2));
  if (field(job, JOB_KIND) == KIND_CONV_FORWARD) {
    for (let n = n0; n < n1; n++) forwardImage(job, n, work, scratch);
    return;
  }
  if (field(job, JOB_KIND) == KIND_INT_CONV) {
    for (let n = n0; n < n1; n++) intConvImage(job, n, scratch);
    return;
  }
  let dwp = <usize>field(job, DWP);
  if (dwp) {
    const wsize = <usize>field(job, COUT) * <usize>(field(job, C) / field(job, GROUPS)) *
      <usize>(field(job, KD) * field(job, KH) * field(job, KW));
    dwp += <usize>i * wsize << 2;
    memory.fill(dwp, 0, wsize << 2);
  }
  for (let n = n0; n < n1; n++) backwardImage(job, n, work, scratch, dwp);
}

/** Every chunk of the job on this thread (thread 0's scratch). */
export function convRun(job: usize, work: usize): void {
  const chunks = field(job, CONV_CHUNKS);
  for (let i = 0; i < chunks; i++) convChunk(job, i, work, 0);
}

/** dst[j] = Σ_i src[i·len + j] over i = 0..count−1, added in that order (the dW partials of the chunks). */
export function sumPartials(dst: usize, src: usize, count: i32, len: i32): void {
  const lenB = <usize>len << 2;
  memory.copy(dst, src, lenB);
  for (let i = 1; i < count; i++) addRun(dst, src + <usize>i * lenB, len);
}
