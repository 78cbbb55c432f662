// Row-major f32 GEMM with 128-bit SIMD: C = op(A)·op(B) + beta·C, op(X) = Xᵀ when trans is set.
//
// Blocked the BLIS way: a KC×NC block of op(B) is packed into NR-wide column panels and an
// MC×KC block of op(A) into MR-tall row panels, zero-padded to whole panels, so the MR×NR
// register-blocked micro-kernel reads both with contiguous loads whatever the transposes were.
// All pointers are byte addresses in linear memory and leading dimensions count elements.
// The host copies operands in above dataStart(), passes a scratch area, and grows the memory itself.

// @ts-ignore: decorator
@inline const MR: i32 = 4;
// @ts-ignore: decorator
@inline const NR: i32 = 8;
// @ts-ignore: decorator
@inline const KC: i32 = 256;
// @ts-ignore: decorator
@inline const MC: i32 = 128;
// @ts-ignore: decorator
@inline const NC: i32 = 2048;

// A caller's work area (see workBytes) holds the packed A block, the packed B block and a tile.
const B_PACK_AT: usize = <usize>(MC * KC * 4);
const TILE_AT: usize = B_PACK_AT + <usize>(KC * NC * 4);
const WORK_BYTES: usize = (TILE_AT + <usize>(MR * NR * 4) + 63) & ~(<usize>63);

/** First byte the host may use (64-byte aligned); everything below is static data. */
export function dataStart(): usize {
  return (<usize>__heap_base + 63) & ~(<usize>63);
}

/** Bytes of packing space one concurrent gemm call needs at its `work` address. */
export function workBytes(): usize {
  return WORK_BYTES;
}

/** Transposes the 4×4 block at src (rows `ld` bytes apart) and stores its rows `dstStride` bytes apart. */
// @ts-ignore: decorator
@inline function transpose4(src: usize, ld: usize, dst: usize, dstStride: usize): void {
  const r0 = v128.load(src);
  const r1 = v128.load(src + ld);
  const r2 = v128.load(src + 2 * ld);
  const r3 = v128.load(src + 3 * ld);
  const t0 = v128.shuffle<f32>(r0, r1, 0, 4, 1, 5);
  const t1 = v128.shuffle<f32>(r0, r1, 2, 6, 3, 7);
  const t2 = v128.shuffle<f32>(r2, r3, 0, 4, 1, 5);
  const t3 = v128.shuffle<f32>(r2, r3, 2, 6, 3, 7);
  v128.store(dst, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
  v128.store(dst + dstStride, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7));
  v128.store(dst + 2 * dstStride, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5));
  v128.store(dst + 3 * dstStride, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7));
}

/**
 * Packs kc steps (pc..pc+kc) of `extent` lines (from `first` on) into panels of `width` lines laid out
 * p-major: panel r holds line first+r·width+i at step pc+p at (r·kc + p)·width + i, zero past the last line.
 * `alongLines`: step p of line i is at src[p·ld + i], so each step of a panel is one contiguous run;
 * otherwise it is at src[i·ld + p] and the panel is transposed 4×4 at a time. Called with a constant
 * width (MR or NR), so asc folds the width tests and the per-width copies stay straight-line.
 */
// @ts-ignore: decorator
@inline function packPanels(width: i32, alongLines: bool, src: usize, ld: i32, first: i32, extent: i32, pc: i32, kc: i32, dst: usize): void {
  const ldB = <usize>ld << 2;
  const panelB = <usize>width << 2;
  for (let r = 0; r < extent; r += width) {
    const w = min(width, extent - r);
    let d = dst + (<usize>(r * kc) << 2);
    if (alongLines) {
      let s = src + ((<usize>pc * ld + <usize>(first + r)) << 2);
      if (w == width) {
        for (let p = 0; p < kc; p++) {
          v128.store(d, v128.load(s));
          if (width == 8) v128.store(d, v128.load(s, 16), 16);
          s += ldB;
          d += panelB;
        }
      } else {
        for (let p = 0; p < kc; p++) {
          for (let i = 0; i < width; i++) store<f32>(d + (<usize>i << 2), i < w ? load<f32>(s + (<usize>i << 2)) : 0);
          s += ldB;
          d += panelB;
        }
      }
    } else {
      const s = src + ((<usize>(first + r) * ld + <usize>pc) << 2);
      if (w == width) {
        let p = 0;
        for (; p + 4 <= kc; p += 4) {
          transpose4(s + (<usize>p << 2), ldB, d + <usize>p * panelB, panelB);
          if (width == 8) transpose4(s + 4 * ldB + (<usize>p << 2), ldB, d + <usize>p * panelB + 16, panelB);
        }
        for (; p < kc; p++) {
          for (let i = 0; i < width; i++) store<f32>(d + (<usize>(p * width + i) << 2), load<f32>(s + <usize>i * ldB + (<usize>p << 2)));
        }
      } else {
        for (let p = 0; p < kc; p++) {
          for (let i = 0; i < width; i++) {
            store<f32>(d + (<usize>(p * width + i) << 2), i < w ? load<f32>(s + <usize>i * ldB + (<usize>p << 2)) : 0);
          }
        }
      }
    }
  }
}

/** Packs rows ic..ic+mc, columns pc..pc+kc of op(A) into MR-row panels (op(A)[i][p] = a[p·lda + i] when transA). */
function packA(transA: bool, a: usize, lda: i32, ic: i32, mc: i32, pc: i32, kc: i32, dst: usize): void {
  packPanels(MR, transA, a, lda, ic, mc, pc, kc, dst);
}

/** Packs rows pc..pc+kc, columns jc..jc+nc of op(B) into NR-column panels (op(B)[p][j] = b[j·ldb + p] when transB). */
function packB(transB: bool, b: usize, ldb: i32, pc: i32, kc: i32, jc: i32, nc: i32, dst: usize): void {
  packPanels(NR, !transB, b, ldb, jc, nc, pc, kc, dst);
}

/**
 * a·b + c per lane: one fused multiply-add in the relaxed-SIMD build (rounded once, so it may differ
 * from the plain build in the last bit), a multiply then an add otherwise.
 */
// @ts-ignore: decorator
@inline function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(c, f32x4.mul(a, b));
}

/**
 * The MR×NR = 4×8 micro-kernel: eight f32x4 accumulators, per step two loads of B and four
 * broadcasts of A. Writes (or, when acc, adds) the mr×nr valid part of the tile to C.
 */
function kernel(kc: i32, ap: usize, bp: usize, c: usize, ldcB: usize, mr: i32, nr: i32, acc: bool, tile: usize): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  for (let p = 0; p < kc; p++) {
    const b0 = v128.load(bp);
    const b1 = v128.load(bp, 16);
    let a = v128.load32_splat(ap);
    c00 = madd(a, b0, c00);
    c01 = madd(a, b1, c01);
    a = v128.load32_splat(ap, 4);
    c10 = madd(a, b0, c10);
    c11 = madd(a, b1, c11);
    a = v128.load32_splat(ap, 8);
    c20 = madd(a, b0, c20);
    c21 = madd(a, b1, c21);
    a = v128.load32_splat(ap, 12);
    c30 = madd(a, b0, c30);
    c31 = madd(a, b1, c31);
    ap += 16;
    bp += 32;
  }
  if (mr == MR && nr == NR) {
    if (acc) {
      v128.store(c, f32x4.add(c00, v128.load(c)));
      v128.store(c, f32x4.add(c01, v128.load(c, 16)), 16);
      v128.store(c + ldcB, f32x4.add(c10, v128.load(c + ldcB)));
      v128.store(c + ldcB, f32x4.add(c11, v128.load(c + ldcB, 16)), 16);
      v128.store(c + 2 * ldcB, f32x4.add(c20, v128.load(c + 2 * ldcB)));
      v128.store(c + 2 * ldcB, f32x4.add(c21, v128.load(c + 2 * ldcB, 16)), 16);
      v128.store(c + 3 * ldcB, f32x4.add(c30, v128.load(c + 3 * ldcB)));
      v128.store(c + 3 * ldcB, f32x4.add(c31, v128.load(c + 3 * ldcB, 16)), 16);
    } else {
      v128.store(c, c00);
      v128.store(c, c01, 16);
      v128.store(c + ldcB, c10);
      v128.store(c + ldcB, c11, 16);
      v128.store(c + 2 * ldcB, c20);
      v128.store(c + 2 * ldcB, c21, 16);
      v128.store(c + 3 * ldcB, c30);
      v128.store(c + 3 * ldcB, c31, 16);
    }
    return;
  }
  v128.store(tile, c00);
  v128.store(tile, c01, 16);
  v128.store(tile, c10, 32);
  v128.store(tile, c11, 48);
  v128.store(tile, c20, 64);
  v128.store(tile, c21, 80);
  v128.store(tile, c30, 96);
  v128.store(tile, c31, 112);
  for (let i = 0; i < mr; i++) {
    const row = c + <usize>i * ldcB;
    const t = tile + (<usize>(i * NR) << 2);
    for (let j = 0; j < nr; j++) {
      const o = <usize>j << 2;
      const v = load<f32>(t + o);
      store<f32>(row + o, acc ? load<f32>(row + o) + v : v);
    }
  }
}

/** Splits extent into equal blocks of at most maxBlock, rounded up to a multiple of 4. */
function blockSize(extent: i32, maxBlock: i32): i32 {
  const blocks = (extent + maxBlock - 1) / maxBlock;
  const size = (extent + blocks - 1) / blocks;
  return min(maxBlock, (size + 3) & ~3);
}

/** Rows of op(A) rounded up to whole MR panels. */
// @ts-ignore: decorator
@inline function panelRows(m: i32): i32 {
  return (m + MR - 1) & ~(MR - 1);
}

/** Bytes `packAWhole` writes for an m × k matrix. */
export function packedABytes(m: i32, k: i32): usize {
  return <usize>(panelRows(m) * k) << 2;
}

/**
 * Packs all of A (m × k, row-major, not transposed) the way `gemm` packs it block by block: per k block
 * (blockSize(k, KC) wide), per MC rows, MR-row panels; the block of (pc, ic) starts panelRows(m)·pc + ic·kc
 * floats in. A caller that multiplies the same A many times (a conv's weights, once per image) packs it once
 * and passes it to gemmPackedA.
 */
export function packAWhole(a: usize, lda: i32, m: i32, k: i32, dst: usize): void {
  const kcMax = blockSize(k, KC);
  const rows = panelRows(m);
  for (let pc = 0; pc < k; pc += kcMax) {
    const kc = min(kcMax, k - pc);
    for (let ic = 0; ic < m; ic += MC) {
      packA(false, a, lda, ic, min(MC, m - ic), pc, kc, dst + (<usize>(rows * pc + ic * kc) << 2));
    }
  }
}

/**
 * C = op(A)·op(B) + beta·C for row-major operands at byte addresses a, b, c; beta is 0 or 1.
 * `work` is workBytes() of scratch owned by this call (one per thread sharing the memory).
 */
export function gemm(
  transA: i32, transB: i32, m: i32, n: i32, k: i32,
  a: usize, lda: i32, b: usize, ldb: i32, c: usize, ldc: i32, beta: i32, work: usize,
): void {
  gemmBlocked(transA, transB, m, n, k, a, lda, 0, b, ldb, c, ldc, beta, work);
}

/** gemm with A (not transposed) already packed by packAWhole at aPacked: the same sums, without repacking A. */
export function gemmPackedA(
  m: i32, n: i32, k: i32,
  aPacked: usize, b: usize, ldb: i32, c: usize, ldc: i32, beta: i32, work: usize,
): void {
  gemmBlocked(0, 0, m, n, k, 0, 0, aPacked, b, ldb, c, ldc, beta, work);
}

// @ts-ignore: decorator
@inline function gemmBlocked(
  transA: i32, transB: i32, m: i32, n: i32, k: i32,
  a: usize, lda: i32, aPacked: usize, b: usize, ldb: i32, c: usize, ldc: i32, beta: i32, work: usize,
): void {
  if (m <= 0 || n <= 0) return;
  const ldcB = <usize>ldc << 2;
  if (k <= 0) {
    if (beta == 0) for (let i = 0; i < m; i++) memory.fill(c + <usize>i * ldcB, 0, <usize>n << 2);
    return;
  }
  const bPack = work + B_PACK_AT;
  const tile = work + TILE_AT;
  const kcMax = blockSize(k, KC);
  const rows = panelRows(m);
  for (let jc = 0; jc < n; jc += NC) {
    const nc = min(NC, n - jc);
    for (let pc = 0; pc < k; pc += kcMax) {
      const kc = min(kcMax, k - pc);
      packB(transB != 0, b, ldb, pc, kc, jc, nc, bPack);
      const acc = pc > 0 || beta != 0;
      for (let ic = 0; ic < m; ic += MC) {
        const mc = min(MC, m - ic);
        let aPack = work;
        if (aPacked) aPack = aPacked + (<usize>(rows * pc + ic * kc) << 2);
        else packA(transA != 0, a, lda, ic, mc, pc, kc, aPack);
        for (let jr = 0; jr < nc; jr += NR) {
          const nr = min(NR, nc - jr);
          const bp = bPack + (<usize>(jr * kc) << 2);
          const cj = c + (<usize>(jc + jr) << 2);
          for (let ir = 0; ir < mc; ir += MR) {
            kernel(kc, aPack + (<usize>(ir * kc) << 2), bp, cj + <usize>(ic + ir) * ldcB, ldcB, min(MR, mc - ir), nr, acc, tile);
          }
        }
      }
    }
  }
}
