// RequantizeInt32 (src/ops/requantize-int32.ts has the reference): the integer epilogue of a
// quantized conv over an int32 accumulator [outer, channels, inner], per channel c
//   v = sat32(acc + bias); v = sat32(v + term(e)); t = shr(v, pre) (sat16 under the int16 rule);
//   v = shrR(t·m, n); y = clamp(v, lo, hi)
// four values at a time on SIMD (rounding shifts in f64, exact like the cpu kernel's), the rest and
// the fused add's plain-multiplier branch on a scalar loop in i64. The host keeps |multipliers| <= 2^16
// and shifts <= 1000, so with values within int32 every product stays below 2^48; the scalar loop
// clamps shifts where a larger one cannot change the result.
// PARAMS holds 7 i32 vectors of `channels` values: bias, sumin m, n, k, plan pre, m, n.

// @ts-ignore: decorator
@inline const I32_MIN: i64 = -2147483648;
// @ts-ignore: decorator
@inline const I32_MAX: i64 = 2147483647;
/** |term| beyond this saturates v + term for every int32 v, and 2^31 times it still fits i64. */
// @ts-ignore: decorator
@inline const TERM_CAP: i64 = 4294967295;

export const FLAG_SUMIN: i32 = 1;
export const FLAG_PLAN: i32 = 2;
export const FLAG_INT16: i32 = 4;

// @ts-ignore: decorator
@inline function clamp64(v: i64, lo: i64, hi: i64): i64 {
  return v < lo ? lo : v > hi ? hi : v;
}

/** floor((x + 2^(n−1)) / 2^n) for |x| < 2^48; n >= 62 gives the same as 62. */
// @ts-ignore: decorator
@inline function shrR(x: i64, n: i32): i64 {
  if (n == 0) return x;
  const s = min(n, 62);
  return (x + (<i64>1 << <i64>(s - 1))) >> <i64>s;
}

function channelRun<E, O>(
  acc: usize, other: usize, out: usize, len: i32, flags: i32,
  bias: i64, sm: i64, sn: i32, sk: i32, pre: i32, m: i64, n: i32, lo: i64, hi: i64,
): void {
  const sumin = (flags & FLAG_SUMIN) != 0;
  const plan = (flags & FLAG_PLAN) != 0;
  const int16 = (flags & FLAG_INT16) != 0;
  const preS = <i64>min(pre, 63);
  const kS = <i64>min(sk, 31);
  for (let i = 0; i < len; i++) {
    let v = clamp64(<i64>load<i32>(acc + (<usize>i << 2)) + bias, I32_MIN, I32_MAX);
    if (sumin) {
      const e = <i64>load<E>(other + (<usize>i * sizeof<E>()));
      let term: i64;
      if (sk < 0) {
        term = shrR(e * sm, sn);
      } else {
        const p = clamp64(e * sm, -TERM_CAP, TERM_CAP);
        term = sk >= 32 ? (p > 0 ? TERM_CAP : p < 0 ? -TERM_CAP : 0) : p << kS;
      }
      v = clamp64(v + term, I32_MIN, I32_MAX);
    }
    if (plan) {
      let t = v >> preS;
      if (int16) t = clamp64(t, -32768, 32767);
      v = shrR(t * m, n);
    }
    store<O>(out + (<usize>i * sizeof<O>()), <O>clamp64(v, lo, hi));
  }
}

/** 2^k as f64, for -1022 <= k <= 1023. */
// @ts-ignore: decorator
@inline function pow2(k: i32): f64 {
  return reinterpret<f64>(<i64>(1023 + k) << 52);
}

/** Two f64 lanes (already floored) to int32 with saturation, a's in lanes 0-1 and b's in 2-3. */
// @ts-ignore: decorator
@inline function toI32x4(a: v128, b: v128): v128 {
  return v128.shuffle<i64>(i32x4.trunc_sat_f64x2_s_zero(a), i32x4.trunc_sat_f64x2_s_zero(b), 0, 2);
}

/** Lanes 2-3 of an i32x4 moved to lanes 0-1. */
// @ts-ignore: decorator
@inline function high2(v: v128): v128 {
  return v128.shuffle<i64>(v, v, 1, 0);
}

/** Four values of E widened to i32x4. */
// @ts-ignore: decorator
@inline function loadE4<E>(p: usize): v128 {
  if (sizeof<E>() == 1) return i32x4.extend_low_i16x8_s(i16x8.extend_low_i8x16_s(v128.load32_zero(p)));
  if (sizeof<E>() == 2) return i32x4.extend_low_i16x8_s(v128.load64_zero(p));
  return v128.load(p);
}

/** Stores four values (already within O's range) as O. */
// @ts-ignore: decorator
@inline function storeO4<O>(p: usize, r: v128): void {
  if (sizeof<O>() == 4) {
    v128.store(p, r);
  } else {
    const h = i16x8.narrow_i32x4_s(r, r);
    if (sizeof<O>() == 2) v128.store64_lane(p, h, 0);
    else v128.store32_lane(p, i8x16.narrow_i16x8_s(h, h), 0);
  }
}

/**
 * The same as channelRun for the first len & ~3 values, four at a time (every case except the
 * fused add's plain-multiplier branch k >= 0). x64 has no 64-bit arithmetic shift, so the rounding
 * shifts are taken in f64, exactly as the cpu kernel does: floor((x·m + 2^(n−1))·2^−n) with every
 * product below 2^48; truncating to int32 with saturation is then the int32 saturation.
 */
function channelRunSimd<E, O>(
  acc: usize, other: usize, out: usize, len: i32, flags: i32,
  bias: i32, sm: i32, sn: i32, pre: i32, m: i32, n: i32, lo: i32, hi: i32,
): void {
  const sumin = (flags & FLAG_SUMIN) != 0;
  const plan = (flags & FLAG_PLAN) != 0;
  const int16 = (flags & FLAG_INT16) != 0;
  const b = i32x4.splat(bias);
  const bSat = i32x4.splat(bias < 0 ? <i32>I32_MIN : <i32>I32_MAX);
  const smF = f64x2.splat(<f64>sm);
  const sHalf = f64x2.splat(sn == 0 ? 0 : pow2(sn - 1));
  const sInv = f64x2.splat(pow2(-sn));
  const preS = <i32>min(pre, 31);
  const mF = f64x2.splat(<f64>m);
  const half = f64x2.splat(n == 0 ? 0 : pow2(n - 1));
  const inv = f64x2.splat(pow2(-n));
  const lo32 = i32x4.splat(lo);
  const hi32 = i32x4.splat(hi);
  const s16Lo = i32x4.splat(-32768);
  const s16Hi = i32x4.splat(32767);
  const end = len & ~3;
  for (let i = 0; i < end; i += 4) {
    const a = v128.load(acc + (<usize>i << 2));
    // sat32(a + bias): the sum overflowed when its sign differs from both operands'; it then saturates on the bias's side.
    const s = i32x4.add(a, b);
    const ovf = i32x4.shr_s(v128.and(v128.xor(a, s), v128.xor(b, s)), 31);
    let v = v128.bitselect(bSat, s, ovf);
    if (sumin) {
      const e = loadE4<E>(other + <usize>i * sizeof<E>());
      const t0 = f64x2.floor(f64x2.mul(f64x2.add(f64x2.mul(f64x2.convert_low_i32x4_s(e), smF), sHalf), sInv));
      const t1 = f64x2.floor(f64x2.mul(f64x2.add(f64x2.mul(f64x2.convert_low_i32x4_s(high2(e)), smF), sHalf), sInv));
      v = toI32x4(f64x2.add(f64x2.convert_low_i32x4_s(v), t0), f64x2.add(f64x2.convert_low_i32x4_s(high2(v)), t1));
    }
    if (plan) {
      let t = i32x4.shr_s(v, preS);
      if (int16) t = i32x4.min_s(i32x4.max_s(t, s16Lo), s16Hi);
      const y0 = f64x2.floor(f64x2.mul(f64x2.add(f64x2.mul(f64x2.convert_low_i32x4_s(t), mF), half), inv));
      const y1 = f64x2.floor(f64x2.mul(f64x2.add(f64x2.mul(f64x2.convert_low_i32x4_s(high2(t)), mF), half), inv));
      v = toI32x4(y0, y1);
    }
    storeO4<O>(out + <usize>i * sizeof<O>(), i32x4.min_s(i32x4.max_s(v, lo32), hi32));
  }
}

function runAll<E, O>(
  acc: usize, other: usize, out: usize, outer: i32, channels: i32, inner: i32, params: usize, flags: i32, lo: i64, hi: i64,
): void {
  const cv = <usize>channels << 2;
  for (let o = 0; o < outer; o++) {
    for (let c = 0; c < channels; c++) {
      const q = params + (<usize>c << 2);
      const at = <usize>(o * channels + c) * <usize>inner;
      const bias = load<i32>(q), sm = load<i32>(q + cv), sn = load<i32>(q + 2 * cv), sk = load<i32>(q + 3 * cv);
      const pre = load<i32>(q + 4 * cv), m = load<i32>(q + 5 * cv), n = load<i32>(q + 6 * cv);
      const a = acc + (at << 2), e = other + at * sizeof<E>(), y = out + at * sizeof<O>();
      // The plain-multiplier branch of the fused add (k >= 0, rare) runs on the scalar loop only.
      const vec = (flags & FLAG_SUMIN) == 0 || sk < 0 ? inner & ~3 : 0;
      if (vec > 0) channelRunSimd<E, O>(a, e, y, vec, flags, bias, sm, sn, pre, m, n, <i32>lo, <i32>hi);
      channelRun<E, O>(
        a + (<usize>vec << 2), e + <usize>vec * sizeof<E>(), y + <usize>vec * sizeof<O>(), inner - vec, flags,
        <i64>bias, <i64>sm, sn, sk, pre, <i64>m, n, lo, hi,
      );
    }
  }
}

function runOut<O>(
  acc: usize, other: usize, otherBytes: i32, out: usize, outer: i32, channels: i32, inner: i32, params: usize, flags: i32, lo: i64, hi: i64,
): void {
  if (otherBytes == 1) runAll<i8, O>(acc, other, out, outer, channels, inner, params, flags, lo, hi);
  else if (otherBytes == 2) runAll<i16, O>(acc, other, out, outer, channels, inner, params, flags, lo, hi);
  else runAll<i32, O>(acc, other, out, outer, channels, inner, params, flags, lo, hi);
}

/**
 * The epilogue over acc (int32) into out (outBytes 1, 2 or 4 per value); other (otherBytes per
 * value) is read only with FLAG_SUMIN. Byte addresses.
 */
export function requantizeInt32(
  acc: usize, other: usize, otherBytes: i32, out: usize, outBytes: i32,
  outer: i32, channels: i32, inner: i32, params: usize, flags: i32, lo: i32, hi: i32,
): void {
  if (outBytes == 1) runOut<i8>(acc, other, otherBytes, out, outer, channels, inner, params, flags, lo, hi);
  else if (outBytes == 2) runOut<i16>(acc, other, otherBytes, out, outer, channels, inner, params, flags, lo, hi);
  else runOut<i32>(acc, other, otherBytes, out, outer, channels, inner, params, flags, lo, hi);
}
