// HistogramCounts (src/ops/histogram-counts.ts has the reference): adds each f32 value's slot of a signed
// histogram (2·bins + 1 slots, NaN last) to one of COPIES i32 count arrays laid out one after the other at
// `counts`, value i to copy i % COPIES; the host sums the copies. The reference takes y = x·inv in f64,
// exact for every finite f32 x, so y < 0 exactly when x < 0. When inv is a power of two that f32 holds
// (`pow2` set; the default bin counts are powers of two), x·inv is exact in f32 as well, or below the
// smallest normal where its whole part is 0 either way, so four slots come from one f32x4 product;
// otherwise two f64x2 products. (Scalar f64 → i32 conversions measured 3 ns each here; the f32 path is
// twice as fast as the f64 one.) The copies exist because activations repeat values (a ReLU's zeros, a few
// busy bins), and incrementing one slot again and again waits on the previous store each time. The caller
// keeps |y| < bins; a larger one lands in the outermost bin instead of outside the counts.

// @ts-ignore: decorator
@inline function bump(at: usize): void {
  store<i32>(at, load<i32>(at) + 1);
}

/** Slots of four values from their whole parts k = floor(|x·inv|). */
// @ts-ignore: decorator
@inline function slotsFrom(v: v128, k: v128, bins: v128, nanSlot: v128): v128 {
  const side = v128.bitselect(i32x4.sub(i32x4.sub(bins, i32x4.splat(1)), k), i32x4.add(bins, k), f32x4.lt(v, f32x4.splat(0)));
  return v128.bitselect(nanSlot, side, f32x4.ne(v, v));
}

/** Whole parts of |x·inv| for four values, in f64; pmin clamps to bins − 1 and keeps a NaN (0 after the conversion). */
// @ts-ignore: decorator
@inline function wholeParts64(v: v128, inv: v128, last: v128): v128 {
  const lo = f64x2.abs(f64x2.mul(f64x2.promote_low_f32x4(v), inv));
  const hi = f64x2.abs(f64x2.mul(f64x2.promote_low_f32x4(v128.shuffle<f32>(v, v, 2, 3, 2, 3)), inv));
  const kLo = i32x4.trunc_sat_f64x2_s_zero(f64x2.pmin(lo, last));
  const kHi = i32x4.trunc_sat_f64x2_s_zero(f64x2.pmin(hi, last));
  return v128.shuffle<i32>(kLo, kHi, 0, 1, 4, 5);
}

/** The same in f32, exact when inv is a power of two. */
// @ts-ignore: decorator
@inline function wholeParts32(v: v128, inv: v128, last: v128): v128 {
  return i32x4.trunc_sat_f32x4_s(f32x4.pmin(f32x4.abs(f32x4.mul(v, inv)), last));
}

export function histogramCounts(x: usize, n: i32, inv: f64, bins: i32, counts: usize, pow2: i32): void {
  const copy = <usize>(2 * bins + 1) << 2;
  const c1 = counts + copy, c2 = counts + 2 * copy, c3 = counts + 3 * copy;
  const inv64 = f64x2.splat(inv);
  const last64 = f64x2.splat(<f64>(bins - 1));
  const inv32 = f32x4.splat(<f32>inv);
  const last32 = f32x4.splat(<f32>(bins - 1));
  const binsV = i32x4.splat(bins);
  const nanV = i32x4.splat(2 * bins);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(x + (<usize>i << 2));
    const k = pow2 ? wholeParts32(v, inv32, last32) : wholeParts64(v, inv64, last64);
    const s = slotsFrom(v, k, binsV, nanV);
    bump(counts + (<usize>i32x4.extract_lane(s, 0) << 2));
    bump(c1 + (<usize>i32x4.extract_lane(s, 1) << 2));
    bump(c2 + (<usize>i32x4.extract_lane(s, 2) << 2));
    bump(c3 + (<usize>i32x4.extract_lane(s, 3) << 2));
  }
  for (; i < n; i++) {
    const v = v128.load32_zero(x + (<usize>i << 2));
    const s = slotsFrom(v, wholeParts64(v, inv64, last64), binsV, nanV);
    bump(counts + (<usize>i32x4.extract_lane(s, 0) << 2));
  }
}
