// The smallest and largest non-NaN value per channel of x [outer, channels, inner] (f32), as the
// observers' loops compute them (`x < lo`, `x > hi`: a NaN never replaces anything; no value at all leaves
// +Infinity and −Infinity). pmin / pmax are exactly those comparisons, four lanes at a time; a zero's sign
// in the result may differ from a sequential scan's. Results as f64 pairs (min, max) per channel at out.

function runMinMax(x: usize, n: i32, lo: f32, hi: f32, out: usize): void {
  // Accumulators only ever take a value as pmin / pmax's second operand, which a NaN never wins as.
  let l = f32x4.splat(lo);
  let h = f32x4.splat(hi);
  let l2 = l;
  let h2 = h;
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const p = x + (<usize>i << 2);
    const a = v128.load(p);
    const b = v128.load(p, 16);
    l = f32x4.pmin(l, a);
    h = f32x4.pmax(h, a);
    l2 = f32x4.pmin(l2, b);
    h2 = f32x4.pmax(h2, b);
  }
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(x + (<usize>i << 2));
    l = f32x4.pmin(l, v);
    h = f32x4.pmax(h, v);
  }
  l = f32x4.pmin(l, l2);
  h = f32x4.pmax(h, h2);
  let ls = lo;
  let hs = hi;
  for (let k = 0; k < 4; k++) {
    const lk = f32x4.extract_lane(l, 0);
    const hk = f32x4.extract_lane(h, 0);
    if (lk < ls) ls = lk;
    if (hk > hs) hs = hk;
    l = v128.shuffle<f32>(l, l, 1, 2, 3, 0);
    h = v128.shuffle<f32>(h, h, 1, 2, 3, 0);
  }
  for (; i < n; i++) {
    const v = load<f32>(x + (<usize>i << 2));
    if (v < ls) ls = v;
    if (v > hs) hs = v;
  }
  store<f64>(out, <f64>ls);
  store<f64>(out, <f64>hs, 8);
}

/** Per channel min and max of x [outer, channels, inner] into out [channels][2] f64 (byte addresses). */
export function channelMinMax(x: usize, outer: i32, channels: i32, inner: i32, out: usize): void {
  for (let c = 0; c < channels; c++) {
    store<f64>(out + (<usize>c << 4), Infinity);
    store<f64>(out + (<usize>c << 4), -Infinity, 8);
  }
  let p = x;
  for (let o = 0; o < outer; o++) {
    for (let c = 0; c < channels; c++) {
      const at = out + (<usize>c << 4);
      runMinMax(p, inner, <f32>load<f64>(at), <f32>load<f64>(at, 8), at);
      p += <usize>inner << 2;
    }
  }
}
