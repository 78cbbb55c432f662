// Symmetric fake quantization (src/ops/fake-quantize-symmetric.ts has the reference) over x
// [outer, channels, inner] with one scale per channel:
//   r = R(x / s), forward y = clamp(r, lo, hi) · s, STE backward dx = g where lo <= r <= hi, else 0,
// with x / s, the rounding and the product in f64 as the reference computes them, so the results are
// the same bits: R is floor(v + 0.5) (half up) or round-half-even (f64x2.nearest, plus 0 so that a
// value in [−½, 0) rounds to +0 as the reference's floor-based rounding gives, while −0 stays −0).
// Four values per step.

/** The NaN JavaScript stores into a Float32Array; x64's arithmetic makes the negative one. */
// @ts-ignore: decorator
@inline const CANONICAL_NAN: i32 = 0x7fc00000;

/** Lanes 2-3 of an f32x4 moved to lanes 0-1. */
// @ts-ignore: decorator
@inline function high2(v: v128): v128 {
  return v128.shuffle<i64>(v, v, 1, 0);
}

/** R(v / s) of two f64 lanes. */
// @ts-ignore: decorator
@inline function roundQuotient(v: v128, s: v128, halfEven: bool): v128 {
  const q = f64x2.div(v, s);
  if (halfEven) return v128.bitselect(q, f64x2.add(f64x2.nearest(q), f64x2.splat(0)), f64x2.eq(q, f64x2.splat(0)));
  return f64x2.floor(f64x2.add(q, f64x2.splat(0.5)));
}

/** Scalar R(v / s), the same operations as one lane. */
// @ts-ignore: decorator
@inline function roundQuotient1(v: f64, s: f64, halfEven: bool): f64 {
  const q = v / s;
  return halfEven ? (q == 0 ? q : nearest(q) + 0) : floor(q + 0.5);
}

/** y = clamp(R(x / s), lo, hi) · s for n values of x at `x` into `y`, f32 in and out. */
function forwardRun(x: usize, y: usize, n: i32, scale: f64, lo: f64, hi: f64, halfEven: bool): void {
  const s = f64x2.splat(scale);
  const loV = f64x2.splat(lo);
  const hiV = f64x2.splat(hi);
  const nan = i32x4.splat(CANONICAL_NAN);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(x + (<usize>i << 2));
    const r0 = f64x2.min(f64x2.max(roundQuotient(f64x2.promote_low_f32x4(v), s, halfEven), loV), hiV);
    const r1 = f64x2.min(f64x2.max(roundQuotient(f64x2.promote_low_f32x4(high2(v)), s, halfEven), loV), hiV);
    const y0 = f32x4.demote_f64x2_zero(f64x2.mul(r0, s));
    const y1 = f32x4.demote_f64x2_zero(f64x2.mul(r1, s));
    const y4 = v128.shuffle<i64>(y0, y1, 0, 2);
    v128.store(y + (<usize>i << 2), v128.bitselect(nan, y4, f32x4.ne(y4, y4)));
  }
  for (; i < n; i++) {
    const r = roundQuotient1(<f64>load<f32>(x + (<usize>i << 2)), scale, halfEven);
    // NaN stays NaN through both comparisons, as in the reference's ternaries
    const out = <f32>((r < lo ? lo : r > hi ? hi : r) * scale);
    if (out != out) store<i32>(y + (<usize>i << 2), CANONICAL_NAN);
    else store<f32>(y + (<usize>i << 2), out);
  }
}

/** dx = g where lo <= R(x / s) <= hi, else 0, for n values. */
function steRun(x: usize, g: usize, dx: usize, n: i32, scale: f64, lo: f64, hi: f64, halfEven: bool): void {
  const s = f64x2.splat(scale);
  const loV = f64x2.splat(lo);
  const hiV = f64x2.splat(hi);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(x + (<usize>i << 2));
    const r0 = roundQuotient(f64x2.promote_low_f32x4(v), s, halfEven);
    const r1 = roundQuotient(f64x2.promote_low_f32x4(high2(v)), s, halfEven);
    const in0 = v128.and(f64x2.ge(r0, loV), f64x2.le(r0, hiV));
    const in1 = v128.and(f64x2.ge(r1, loV), f64x2.le(r1, hiV));
    // each 64-bit mask is all ones or all zeros: its low halves make the four 32-bit lane masks
    const mask = v128.shuffle<i32>(in0, in1, 0, 2, 4, 6);
    v128.store(dx + (<usize>i << 2), v128.and(v128.load(g + (<usize>i << 2)), mask));
  }
  for (; i < n; i++) {
    const r = roundQuotient1(<f64>load<f32>(x + (<usize>i << 2)), scale, halfEven);
    store<f32>(dx + (<usize>i << 2), r >= lo && r <= hi ? load<f32>(g + (<usize>i << 2)) : 0);
  }
}

/**
 * Fake quantization of x [outer, channels, inner] (f32, byte addresses) with scales[channels] (f32):
 * forward into y when g is 0, else the straight-through gradient of g into y.
 */
export function fakeQuantizeSymmetric(
  x: usize, g: usize, y: usize, scales: usize, outer: i32, channels: i32, inner: i32, lo: i32, hi: i32, halfEven: i32,
): void {
  let at: usize = 0;
  const bytes = <usize>inner << 2;
  for (let o = 0; o < outer; o++) {
    for (let c = 0; c < channels; c++) {
      const scale = <f64>load<f32>(scales + (<usize>c << 2));
      if (g == 0) forwardRun(x + at, y + at, inner, scale, <f64>lo, <f64>hi, halfEven != 0);
      else steRun(x + at, g + at, y + at, inner, scale, <f64>lo, <f64>hi, halfEven != 0);
      at += bytes;
    }
  }
}
