// Clip, Relu6, HardSwish and HardSigmoid forward, the same bits as the cpu kernels (src/ops/activations.ts):
// the comparisons are the reference's ternaries as lane selects (pmax / pmin are exactly `x < b ? b : x`
// and `b < x ? b : x`), the arithmetic of HardSwish and HardSigmoid in f64 as JavaScript computes it, and a
// NaN result is stored as JavaScript stores it. Four values per step, the tail one at a time.

export const ACT_CLIP: i32 = 0;
export const ACT_RELU6: i32 = 1;
export const ACT_HARDSWISH: i32 = 2;
export const ACT_HARDSIGMOID: i32 = 3;

// @ts-ignore: decorator
@inline export const CANONICAL_NAN: i32 = 0x7fc00000;

/** Lanes 2-3 of a vector moved to lanes 0-1. */
// @ts-ignore: decorator
@inline function high2(v: v128): v128 {
  return v128.shuffle<i64>(v, v, 1, 0);
}

/** The reference's middle piece of HardSwish (x·(x + 3) / 6) or HardSigmoid (x / 6 + ½) in f64 on two lanes. */
// @ts-ignore: decorator
@inline function middle2(x: v128, swish: bool): v128 {
  const six = f64x2.splat(6);
  if (swish) return f64x2.div(f64x2.mul(x, f64x2.add(x, f64x2.splat(3))), six);
  return f64x2.add(f64x2.div(x, six), f64x2.splat(0.5));
}

// @ts-ignore: decorator
@inline export function apply4(kind: i32, x: v128, a: f32, b: f32): v128 {
  if (kind == ACT_CLIP) return f32x4.pmin(f32x4.pmax(x, f32x4.splat(a)), f32x4.splat(b));
  if (kind == ACT_RELU6) {
    // x <= 0 ? 0 : x >= 6 ? 6 : x
    const six = f32x4.splat(6);
    return v128.bitselect(f32x4.splat(0), v128.bitselect(six, x, f32x4.ge(x, six)), f32x4.le(x, f32x4.splat(0)));
  }
  const swish = kind == ACT_HARDSWISH;
  const m0 = f32x4.demote_f64x2_zero(middle2(f64x2.promote_low_f32x4(x), swish));
  const m1 = f32x4.demote_f64x2_zero(middle2(f64x2.promote_low_f32x4(high2(x)), swish));
  const mid = v128.shuffle<i64>(m0, m1, 0, 2);
  // x <= -3 ? 0 : x >= 3 ? (swish ? x : 1) : middle
  const top = swish ? x : f32x4.splat(1);
  const upper = v128.bitselect(top, mid, f32x4.ge(x, f32x4.splat(3)));
  return v128.bitselect(f32x4.splat(0), upper, f32x4.le(x, f32x4.splat(-3)));
}

// @ts-ignore: decorator
@inline export function apply1(kind: i32, x: f32, a: f32, b: f32): f32 {
  if (kind == ACT_CLIP) {
    const lo = x < a ? a : x;
    return lo > b ? b : lo;
  }
  if (kind == ACT_RELU6) return x <= 0 ? 0 : x >= 6 ? 6 : x;
  const v = <f64>x;
  if (kind == ACT_HARDSWISH) return x <= -3 ? 0 : x >= 3 ? x : <f32>((v * (v + 3)) / 6);
  return x <= -3 ? 0 : x >= 3 ? 1 : <f32>(v / 6 + 0.5);
}

/** y = act(x) for n f32 values (byte addresses); a, b: Clip's min and max. */
export function activation(kind: i32, x: usize, y: usize, n: i32, a: f32, b: f32): void {
  const nan = i32x4.splat(CANONICAL_NAN);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const r = apply4(kind, v128.load(x + (<usize>i << 2)), a, b);
    v128.store(y + (<usize>i << 2), v128.bitselect(nan, r, f32x4.ne(r, r)));
  }
  for (; i < n; i++) {
    const r = apply1(kind, load<f32>(x + (<usize>i << 2)), a, b);
    if (r != r) store<i32>(y + (<usize>i << 2), CANONICAL_NAN);
    else store<f32>(y + (<usize>i << 2), r);
  }
}
