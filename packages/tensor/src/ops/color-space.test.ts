import { describe, expect, it } from 'vitest';
import {
  bgr2CenteredYuv,
  centeredYuv2Bgr,
  centeredYuv2Rgb,
  rand,
  rgb2CenteredYuv,
  sum,
  Generator,
  ShapeError,
  tensor,
  yuvColorSpace,
  type Tensor,
} from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';

const pixel = (r: number, g: number, b: number): Tensor => tensor([r, g, b], [1, 3, 1, 1]);
const vals = (t: Tensor): number[] => Array.from(t.values());

/** The channels of an [N, 3, H, W] tensor in reverse order. */
function flipChannels(t: Tensor): Tensor {
  const [n, , h, w] = t.shape as number[];
  const plane = h! * w!;
  const src = t.values();
  const out = new Float32Array(src.length);
  for (let b = 0; b < n!; b++)
    for (let c = 0; c < 3; c++)
      out.set(src.subarray((b * 3 + 2 - c) * plane, (b * 3 + 3 - c) * plane) as Float32Array, (b * 3 + c) * plane);
  return tensor(out, [...t.shape]);
}

/** Random 0..255 integer RGB images, plus the eight corners of the RGB cube. */
function images(seed: number, n: number): Tensor {
  const x = rand([1, 3, 1, n], { low: 0, high: 256, generator: new Generator(seed) }).floor();
  const v = x.values() as Float32Array;
  for (let k = 0; k < 8; k++) {
    v[k] = k & 1 ? 255 : 0;
    v[n + k] = k & 2 ? 255 : 0;
    v[2 * n + k] = k & 4 ? 255 : 0;
  }
  return x;
}

describe('BT.601 colour spaces', () => {
  it('toRgb inverts toYuv, and full swing has the JPEG coefficients', () => {
    for (const swing of ['studio', 'full'] as const) {
      const s = yuvColorSpace(swing);
      for (let r = 0; r < 3; r++)
        for (let c = 0; c < 3; c++) {
          let dot = 0;
          for (let k = 0; k < 3; k++) dot += s.toRgb[3 * r + k]! * s.toYuv[3 * k + c]!;
          expect(dot).toBeCloseTo(r === c ? 1 : 0, 12);
        }
    }
    const full = yuvColorSpace('full');
    expect(full.toRgb[2]).toBeCloseTo(1.402, 12); // R = Y + 1.402 V
    expect(full.toRgb[7]).toBeCloseTo(1.772, 12); // B = Y + 1.772 U
    expect(full.toRgb[4]).toBeCloseTo(-0.344136, 6);
    expect(full.toRgb[5]).toBeCloseTo(-0.714136, 6);
  });
});

describe('rgb2CenteredYuv / bgr2CenteredYuv', () => {
  it('gives the centered bytes of black, white and pure red (rounded half up, clamped to the swing)', () => {
    expect(vals(rgb2CenteredYuv(pixel(0, 0, 0), 'full'))).toEqual([-128, 0, 0]);
    expect(vals(rgb2CenteredYuv(pixel(255, 255, 255), 'full'))).toEqual([127, 0, 0]);
    // Y 76.245, U 84.97, V 255.5 (clamped to 255)
    expect(vals(rgb2CenteredYuv(pixel(255, 0, 0), 'full'))).toEqual([76 - 128, 85 - 128, 127]);
    expect(vals(rgb2CenteredYuv(pixel(0, 0, 0), 'studio'))).toEqual([-112, 0, 0]);
    expect(vals(rgb2CenteredYuv(pixel(255, 255, 255), 'studio'))).toEqual([107, 0, 0]);
    // Y 16 + 219/255 · 76.245 = 81.48, U 128 − 37.80 = 90.2, V 128 + 112 = 240
    expect(vals(rgb2CenteredYuv(pixel(255, 0, 0), 'studio'))).toEqual([81 - 128, 90 - 128, 112]);
    // out-of-range RGB stays inside the swing's byte range
    expect(vals(rgb2CenteredYuv(pixel(400, -50, 300), 'studio')).every((v) => v >= -112 && v <= 112)).toBe(true);
  });

  it('has integer outputs inside the documented ranges on random images', () => {
    const x = images(1, 4096);
    const ranges = {
      full: [
        [-128, 127],
        [-128, 127],
        [-128, 127],
      ],
      studio: [
        [-112, 107],
        [-112, 112],
        [-112, 112],
      ],
    };
    for (const swing of ['full', 'studio'] as const) {
      const y = rgb2CenteredYuv(x, swing).values();
      for (let c = 0; c < 3; c++) {
        const [lo, hi] = ranges[swing][c]!;
        const bad = Array.from(y.subarray(c * 4096, (c + 1) * 4096) as Float32Array).filter(
          (v) => !Number.isInteger(v) || v < lo! || v > hi!,
        );
        expect(bad).toEqual([]);
      }
    }
  });

  it('bgr2CenteredYuv of a BGR image equals rgb2CenteredYuv of the RGB image', () => {
    const rgb = images(2, 512);
    const bgr = flipChannels(rgb);
    for (const swing of ['full', 'studio'] as const)
      expect(vals(bgr2CenteredYuv(bgr, swing))).toEqual(vals(rgb2CenteredYuv(rgb, swing)));
  });

  it('passes the gradient straight through the rounding: d(sum Y)/dR = 0.299 (full swing)', () => {
    const x = pixel(100, 50, 200);
    x.requiresGrad = true;
    const y = rgb2CenteredYuv(x, 'full');
    sum(y.mul(tensor([1, 0, 0], [1, 3, 1, 1]))).backward();
    const g = vals(x.grad!);
    expect(g[0]).toBeCloseTo(0.299, 6);
    expect(g[1]).toBeCloseTo(0.587, 6);
    expect(g[2]).toBeCloseTo(0.114, 6);
    // clamped outputs pass no gradient: V of pure red is clamped
    const red = pixel(255, 0, 0);
    red.requiresGrad = true;
    sum(rgb2CenteredYuv(red, 'full').mul(tensor([0, 0, 1], [1, 3, 1, 1]))).backward();
    expect(vals(red.grad!)).toEqual([0, 0, 0]);
  });

  it('rejects a tensor that is not an NCHW image with 3 channels', () => {
    expect(() => rgb2CenteredYuv(tensor([1, 2, 3], [3, 1, 1]), 'full')).toThrow(ShapeError);
    expect(() => rgb2CenteredYuv(tensor([1, 2, 3, 4], [1, 4, 1, 1]), 'full')).toThrow(/3 channels/);
    expect(() => centeredYuv2Rgb(pixel(0, 0, 0), 'wide' as 'full')).toThrow(/swing must be 'studio' or 'full'/);
  });
});

describe('centeredYuv2Rgb / centeredYuv2Bgr', () => {
  it('inverts rgb2CenteredYuv up to the YUV rounding (measured bounds, RGB levels)', () => {
    // |toRgb row|₁ · 0.5: full R 1.201, G 1.029, B 1.386; studio R 1.380, G 1.185, B 1.590
    const bound = { full: [1.202, 1.03, 1.387], studio: [1.381, 1.186, 1.591] };
    const n = 16384;
    const rgb = images(3, n);
    const x = rgb.values();
    for (const swing of ['full', 'studio'] as const) {
      const back = centeredYuv2Rgb(rgb2CenteredYuv(rgb, swing), swing).values();
      let meanAbs = 0;
      for (let c = 0; c < 3; c++) {
        let worst = 0;
        for (let i = 0; i < n; i++) {
          const e = Math.abs(back[c * n + i]! - x[c * n + i]!);
          worst = Math.max(worst, e);
          meanAbs += e / (3 * n);
        }
        expect(worst).toBeLessThanOrEqual(bound[swing][c]!);
      }
      expect(meanAbs).toBeLessThan(0.6);
    }
  });

  it('maps the extreme centered values into 0..255 (clamped)', () => {
    expect(vals(centeredYuv2Rgb(pixel(127, 127, 127), 'full')).every((v) => v >= 0 && v <= 255)).toBe(true);
    expect(vals(centeredYuv2Rgb(pixel(-128, 0, 0), 'full'))).toEqual([0, 0, 0]);
    expect(vals(centeredYuv2Rgb(pixel(-112, 0, 0), 'studio')).map((v) => Math.round(v * 1e4) / 1e4)).toEqual([0, 0, 0]);
    expect(vals(centeredYuv2Rgb(pixel(107, 0, 0), 'studio')).map((v) => Math.round(v * 1e3) / 1e3)).toEqual([
      255, 255, 255,
    ]);
  });

  it('centeredYuv2Bgr gives the channels of centeredYuv2Rgb reversed', () => {
    const yuv = rgb2CenteredYuv(images(4, 256), 'full');
    expect(vals(centeredYuv2Bgr(yuv, 'full'))).toEqual(vals(flipChannels(centeredYuv2Rgb(yuv, 'full'))));
  });

  it('has the gradient of finite differences w.r.t. its input (both swings, both orders)', () => {
    // away from the 0..255 clamp: Y in [-40, 40], U and V in [-30, 30]
    const g = new Generator(5);
    const x = rand([2, 3, 3, 4], { low: -30, high: 30, generator: g });
    for (const swing of ['full', 'studio'] as const) {
      expect(gradcheck((t) => centeredYuv2Rgb(t, swing), [x], { eps: 0.5, atol: 1e-2, rtol: 1e-3 })).toEqual([]);
      expect(gradcheck((t) => centeredYuv2Bgr(t, swing), [x], { eps: 0.5, atol: 1e-2, rtol: 1e-3 })).toEqual([]);
    }
  });
});
