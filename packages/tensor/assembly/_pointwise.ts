// Pointwise float32 kernels on 128-bit SIMD for the training step's memory-bound ops: batch
// normalisation (statistics, normalisation, backward), Relu and its gradient, same-shape Add.
// Tensors are contiguous [N, C, S] (S = product of the spatial dims); pointers are byte addresses.
// Kernels take a range (channels c0..c1, or elements i0..i1). Channel sums accumulate in f64, as
// the TypeScript kernels do, so the statistics agree with them to rounding; per-element
// arithmetic is f32.

/** The low two floats of v as f64. */
// @ts-ignore: decorator
@inline function promoteLow(v: v128): v128 {
  return f64x2.promote_low_f32x4(v);
}

// @ts-ignore: decorator
@inline function hsum(a: v128): f64 {
  return f64x2.extract_lane(a, 0) + f64x2.extract_lane(a, 1);
}

// Sums read two floats at a time with load64_zero and widen them with one conversion: widening
// the high half of a whole vector needs a shuffle, which competes with the conversions.

/** What a channel sum adds for two widened floats v: v itself, or (v − m)² when squared. */
// @ts-ignore: decorator
@inline function term2(v: v128, m: v128, squared: bool): v128 {
  if (!squared) return v;
  const d = f64x2.sub(v, m);
  return f64x2.mul(d, d);
}

/** What a channel sum adds for one float x: x itself, or (x − mu)² when squared. */
// @ts-ignore: decorator
@inline function term1(x: f64, mu: f64, squared: bool): f64 {
  if (!squared) return x;
  const d = x - mu;
  return d * d;
}

/**
 * Σ term(x) over the N planes of a channel (S floats each, planes strideB bytes apart), in f64.
 * Called with a constant `squared`, so asc folds the term to a plain sum or a squared deviation.
 */
// @ts-ignore: decorator
@inline function channelTermSum(p: usize, n: i32, strideB: usize, s: i32, mu: f64, squared: bool): f64 {
  const m = f64x2.splat(mu);
  let a0 = f64x2.splat(0);
  let a1 = f64x2.splat(0);
  let a2 = f64x2.splat(0);
  let a3 = f64x2.splat(0);
  let tail: f64 = 0;
  const s8B = <usize>(s & ~7) << 2;
  const s2 = s & ~1;
  for (let k = 0; k < n; k++, p += strideB) {
    let o: usize = 0;
    for (; o < s8B; o += 32) {
      a0 = f64x2.add(a0, term2(promoteLow(v128.load64_zero(p + o)), m, squared));
      a1 = f64x2.add(a1, term2(promoteLow(v128.load64_zero(p + o, 8)), m, squared));
      a2 = f64x2.add(a2, term2(promoteLow(v128.load64_zero(p + o, 16)), m, squared));
      a3 = f64x2.add(a3, term2(promoteLow(v128.load64_zero(p + o, 24)), m, squared));
    }
    for (let i = <i32>(o >> 2); i < s2; i += 2) {
      a0 = f64x2.add(a0, term2(promoteLow(v128.load64_zero(p + (<usize>i << 2))), m, squared));
    }
    if (s & 1) tail += term1(<f64>load<f32>(p + (<usize>(s - 1) << 2)), mu, squared);
  }
  return hsum(f64x2.add(f64x2.add(a0, a1), f64x2.add(a2, a3))) + tail;
}

/** Σ x over the N planes of channel c (S floats each, planes strideB bytes apart), in f64. */
function channelSum(p: usize, n: i32, strideB: usize, s: i32): f64 {
  return channelTermSum(p, n, strideB, s, 0, false);
}

/** Σ (x − mu)² over channel c's planes, in f64 (mu in f64 too, as the two-pass cpu kernel). */
function channelSquares(p: usize, n: i32, strideB: usize, s: i32, mu: f64): f64 {
  return channelTermSum(p, n, strideB, s, mu, true);
}

/** y = (x − m)·k + b over channel c's planes, in f32. */
function channelAffine(x: usize, y: usize, n: i32, strideB: usize, s: i32, m: f32, k: f32, b: f32): void {
  const mv = f32x4.splat(m);
  const kv = f32x4.splat(k);
  const bv = f32x4.splat(b);
  const s4 = s & ~3;
  const s4B = <usize>s4 << 2;
  for (let j = 0; j < n; j++, x += strideB, y += strideB) {
    for (let o: usize = 0; o < s4B; o += 16) {
      v128.store(y + o, f32x4.add(f32x4.mul(f32x4.sub(v128.load(x + o), mv), kv), bv));
    }
    for (let i = s4; i < s; i++) {
      const o = <usize>i << 2;
      store<f32>(y + o, (load<f32>(x + o) - m) * k + b);
    }
  }
}

/**
 * Batch normalisation forward for channels c0..c1 of x [N, C, S] into y. Training: the channel's
 * mean and biased variance (two passes) are written to mean and variance; otherwise they are read
 * from there (running statistics). invstd[c] = 1/√(var + eps). w and b are 0 when absent.
 */
export function bnForward(
  x: usize, y: usize, n: i32, c: i32, s: i32, c0: i32, c1: i32, training: i32, eps: f64,
  w: usize, b: usize, mean: usize, variance: usize, invstd: usize,
): void {
  const strideB = <usize>c * <usize>s << 2;
  const count = <f64>n * <f64>s;
  for (let ch = c0; ch < c1; ch++) {
    const off = <usize>ch * <usize>s << 2;
    const at = <usize>ch << 2;
    if (training) {
      const mu = channelSum(x + off, n, strideB, s) / count;
      const sq = channelSquares(x + off, n, strideB, s, mu);
      store<f32>(mean + at, <f32>mu);
      store<f32>(variance + at, <f32>(sq / count));
    }
    const m = load<f32>(mean + at);
    const is = 1 / Math.sqrt(<f64>load<f32>(variance + at) + eps);
    store<f32>(invstd + at, <f32>is);
    const k = w ? <f64>load<f32>(w + at) * is : is;
    channelAffine(x + off, y + off, n, strideB, s, m, <f32>k, b ? load<f32>(b + at) : 0);
  }
}

/**
 * Batch normalisation backward for channels c0..c1: dw[c] = Σ g·(x − μ)·σ⁻¹ and db[c] = Σ g (f64
 * sums); when dx is not 0, training: dx = w·σ⁻¹·(g − mean(g) − (x − μ)·σ⁻²·mean(g·(x − μ))),
 * evaluation: dx = w·σ⁻¹·g. mean and invstd are the forward's; w is 0 when absent.
 */
export function bnBackward(
  x: usize, g: usize, dx: usize, n: i32, c: i32, s: i32, c0: i32, c1: i32, training: i32,
  w: usize, mean: usize, invstd: usize, dw: usize, db: usize,
): void {
  const strideB = <usize>c * <usize>s << 2;
  const count = <f64>n * <f64>s;
  const s4 = s & ~3;
  const s4B = <usize>s4 << 2;
  for (let ch = c0; ch < c1; ch++) {
    const off = <usize>ch * <usize>s << 2;
    const at = <usize>ch << 2;
    const mu = <f64>load<f32>(mean + at);
    const is = <f64>load<f32>(invstd + at);
    const m = f64x2.splat(mu);
    let g0 = f64x2.splat(0);
    let g1 = f64x2.splat(0);
    let h0 = f64x2.splat(0);
    let h1 = f64x2.splat(0);
    let gt: f64 = 0;
    let ht: f64 = 0;
    let xp = x + off;
    let gp = g + off;
    for (let j = 0; j < n; j++, xp += strideB, gp += strideB) {
      let o: usize = 0;
      for (; o < s4B; o += 16) {
        const ga = promoteLow(v128.load64_zero(gp + o));
        const gb = promoteLow(v128.load64_zero(gp + o, 8));
        g0 = f64x2.add(g0, ga);
        g1 = f64x2.add(g1, gb);
        h0 = f64x2.add(h0, f64x2.mul(ga, f64x2.sub(promoteLow(v128.load64_zero(xp + o)), m)));
        h1 = f64x2.add(h1, f64x2.mul(gb, f64x2.sub(promoteLow(v128.load64_zero(xp + o, 8)), m)));
      }
      for (let i = s4; i < s; i++) {
        const gi = <f64>load<f32>(gp + (<usize>i << 2));
        gt += gi;
        ht += gi * (<f64>load<f32>(xp + (<usize>i << 2)) - mu);
      }
    }
    const sg = hsum(f64x2.add(g0, g1)) + gt;
    const sgx = hsum(f64x2.add(h0, h1)) + ht;
    store<f32>(dw + at, <f32>(sgx * is));
    store<f32>(db + at, <f32>sg);
    if (!dx) continue;
    const scale = <f32>((w ? <f64>load<f32>(w + at) : 1) * is);
    if (training) {
      channelAffineGrad(x + off, g + off, dx + off, n, strideB, s, <f32>mu, <f32>(sg / count), <f32>((sgx * is * is) / count), scale);
    } else {
      channelAffine(g + off, dx + off, n, strideB, s, 0, scale, 0);
    }
  }
}

/** dx = scale·((g − mg) − (x − mu)·k) over channel c's planes, in f32. */
function channelAffineGrad(
  x: usize, g: usize, dx: usize, n: i32, strideB: usize, s: i32, mu: f32, mg: f32, k: f32, scale: f32,
): void {
  const muv = f32x4.splat(mu);
  const mgv = f32x4.splat(mg);
  const kv = f32x4.splat(k);
  const sv = f32x4.splat(scale);
  const s4 = s & ~3;
  const s4B = <usize>s4 << 2;
  for (let j = 0; j < n; j++, x += strideB, g += strideB, dx += strideB) {
    for (let o: usize = 0; o < s4B; o += 16) {
      const t = f32x4.sub(f32x4.sub(v128.load(g + o), mgv), f32x4.mul(f32x4.sub(v128.load(x + o), muv), kv));
      v128.store(dx + o, f32x4.mul(t, sv));
    }
    for (let i = s4; i < s; i++) {
      const o = <usize>i << 2;
      store<f32>(dx + o, ((load<f32>(g + o) - mg) - (load<f32>(x + o) - mu) * k) * scale);
    }
  }
}

/** y[i] = max(x[i], 0) for i in i0..i1 (NaN stays NaN, −0 becomes 0, as (x + |x|)/2 does). */
export function relu(x: usize, y: usize, i0: i32, i1: i32): void {
  const zero = f32x4.splat(0);
  let i = i0;
  for (; i + 4 <= i1; i += 4) {
    const o = <usize>i << 2;
    v128.store(y + o, f32x4.max(v128.load(x + o), zero));
  }
  for (; i < i1; i++) {
    const o = <usize>i << 2;
    store<f32>(y + o, max<f32>(load<f32>(x + o), 0));
  }
}

/** dx[i] = g[i]·(y[i] > 0 ? 1 : 0) for i in i0..i1 (a product, so NaN or ∞ gradients behave as in the cpu kernel). */
export function reluBackward(y: usize, g: usize, dx: usize, i0: i32, i1: i32): void {
  const zero = f32x4.splat(0);
  const one = f32x4.splat(1);
  let i = i0;
  for (; i + 4 <= i1; i += 4) {
    const o = <usize>i << 2;
    const on = v128.and(f32x4.gt(v128.load(y + o), zero), one);
    v128.store(dx + o, f32x4.mul(v128.load(g + o), on));
  }
  for (; i < i1; i++) {
    const o = <usize>i << 2;
    store<f32>(dx + o, load<f32>(g + o) * (load<f32>(y + o) > 0 ? 1 : 0));
  }
}

/** out[i] = a[i] + b[i] for i in i0..i1. */
export function addSame(a: usize, b: usize, out: usize, i0: i32, i1: i32): void {
  let i = i0;
  for (; i + 4 <= i1; i += 4) {
    const o = <usize>i << 2;
    v128.store(out + o, f32x4.add(v128.load(a + o), v128.load(b + o)));
  }
  for (; i < i1; i++) {
    const o = <usize>i << 2;
    store<f32>(out + o, load<f32>(a + o) + load<f32>(b + o));
  }
}

