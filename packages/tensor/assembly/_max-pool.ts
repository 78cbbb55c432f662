// MaxPool forward without the argmax (evaluation, calibration, fixed-point value ops); src/ops/pool.ts
// holds the reference. Per plane: the image is copied into a scratch padded with −Infinity on every side
// a window can reach (a tap out of range never wins, and a window with no tap in range gives −Infinity, as
// the reference's skipped taps do), then each output row takes the maximum over its kernel rows, four
// columns at a time, and each output the maximum over its kernel columns of that row. The comparisons are
// plain ones (f32x4.pmax, one instruction, where f32x4.max needs several for NaN and zero signs), so a
// plane holding a NaN takes the slow path with f32.max, which propagates NaN as the reference does. Where
// a window's maximum is a zero, its sign may differ from the reference's.

// @ts-ignore: decorator
@inline const NEG_INF: f32 = -Infinity;

/** Whether any of n floats at p is NaN. */
function hasNaN(p: usize, n: i32): bool {
  let any = i32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(p + (<usize>i << 2));
    any = v128.or(any, f32x4.ne(v, v));
  }
  for (; i < n; i++) {
    const v = load<f32>(p + (<usize>i << 2));
    if (v != v) return true;
  }
  return v128.any_true(any);
}

/**
 * Max pooling of `planes` planes [H, W] at x into y [planes, OH, OW]; f32, byte addresses. `scratch`
 * holds HP·WP + WP floats (HP, WP: the padded extent the host computed), plus 4 for whole-vector reads.
 */
export function maxPool2d(
  x: usize, y: usize, scratch: usize, planes: i32, h: i32, w: i32, oh: i32, ow: i32,
  kh: i32, kw: i32, sh: i32, sw: i32, ph: i32, pw: i32, dh: i32, dw: i32, hp: i32, wp: i32,
): void {
  const pad = scratch;
  const rowMax = scratch + (<usize>(hp * wp) << 2);
  const wpB = <usize>wp << 2;
  let out = y;
  for (let pl = 0; pl < planes; pl++) {
    const img = x + (<usize>(pl * h * w) << 2);
    const nan = hasNaN(img, h * w);
    fillPadded(img, pad, h, w, ph, pw, hp, wp);
    for (let oy = 0; oy < oh; oy++) {
      // the maximum over the kernel rows of this output row, for every padded column
      const top = pad + <usize>(oy * sh) * wpB;
      let j = 0;
      for (; j + 4 <= wp; j += 4) {
        const at = top + (<usize>j << 2);
        let m = v128.load(at);
        if (nan) for (let a = 1; a < kh; a++) m = f32x4.max(m, v128.load(at + <usize>(a * dh) * wpB));
        else for (let a = 1; a < kh; a++) m = f32x4.pmax(m, v128.load(at + <usize>(a * dh) * wpB));
        v128.store(rowMax + (<usize>j << 2), m);
      }
      for (; j < wp; j++) {
        const o = <usize>j << 2;
        let m = load<f32>(top + o);
        for (let a = 1; a < kh; a++) m = max(m, load<f32>(top + <usize>(a * dh) * wpB + o));
        store<f32>(rowMax + o, m);
      }
      // then over the kernel columns: four outputs at a time at strides 1 and 2 (no NaN in the plane)
      let ox = 0;
      if (!nan && (sw == 1 || sw == 2)) {
        for (; ox + 4 <= ow; ox += 4) {
          const at = rowMax + (<usize>(ox * sw) << 2);
          let m = tapsAt(at, sw);
          for (let e = 1; e < kw; e++) m = f32x4.pmax(m, tapsAt(at + (<usize>(e * dw) << 2), sw));
          v128.store(out, m);
          out += 16;
        }
      }
      for (; ox < ow; ox++) {
        const at = rowMax + (<usize>(ox * sw) << 2);
        let m = load<f32>(at);
        for (let e = 1; e < kw; e++) m = max(m, load<f32>(at + (<usize>(e * dw) << 2)));
        store<f32>(out, m);
        out += 4;
      }
    }
  }
}

/** Four values at p, p + s, p + 2s, p + 3s floats apart, s = 1 or 2. */
// @ts-ignore: decorator
@inline function tapsAt(p: usize, s: i32): v128 {
  if (s == 1) return v128.load(p);
  return v128.shuffle<f32>(v128.load(p), v128.load(p, 16), 0, 2, 4, 6);
}

/** n floats of −Infinity at p. */
// @ts-ignore: decorator
@inline function fill(p: usize, n: i32): void {
  const neg = f32x4.splat(NEG_INF);
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(p + (<usize>i << 2), neg);
  for (; i < n; i++) store<f32>(p + (<usize>i << 2), NEG_INF);
}

/** The image [h, w] at (ph, pw) of pad [hp, wp], −Infinity around it. */
function fillPadded(img: usize, pad: usize, h: i32, w: i32, ph: i32, pw: i32, hp: i32, wp: i32): void {
  const wpB = <usize>wp << 2;
  fill(pad, ph * wp);
  let src = img;
  let row = pad + <usize>ph * wpB;
  for (let r = 0; r < h; r++) {
    fill(row, pw);
    let i = 0;
    const dst = row + (<usize>pw << 2);
    for (; i + 4 <= w; i += 4) v128.store(dst + (<usize>i << 2), v128.load(src + (<usize>i << 2)));
    for (; i < w; i++) store<f32>(dst + (<usize>i << 2), load<f32>(src + (<usize>i << 2)));
    fill(dst + (<usize>w << 2), wp - pw - w);
    src += <usize>w << 2;
    row += wpB;
  }
  fill(row, (hp - ph - h) * wp);
}
