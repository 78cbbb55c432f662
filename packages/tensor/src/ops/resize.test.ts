import { describe, expect, it } from 'vitest';
import { Generator, InvalidArgumentError, ShapeError, randn, resize, tensor, type Tensor } from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';

const close = (t: Tensor, want: number[]) => {
  const v = Array.from(t.values() as Float32Array);
  expect(v.length).toBe(want.length);
  v.forEach((x, i) => {
    expect(x).toBeCloseTo(want[i]!, 5);
  });
};

describe('resize: hand-computed 1-d results', () => {
  const x = tensor([1, 2, 3, 4]);
  it('nearest: asymmetric + floor repeats, half_pixel + round_prefer_floor picks the nearest source', () => {
    close(
      resize(x, { scales: [2], coordinateTransformationMode: 'asymmetric', nearestMode: 'floor' }),
      [1, 1, 2, 2, 3, 3, 4, 4],
    );
    // half_pixel, 4 -> 3: sources (j + 0.5) * 4/3 - 0.5 = 0.167, 1.5, 2.833 -> 0, 1 (tie rounds down), 3
    close(resize(x, { sizes: [3] }), [1, 2, 4]);
    close(resize(x, { sizes: [3], nearestMode: 'round_prefer_ceil' }), [1, 3, 4]);
    close(resize(x, { sizes: [3], nearestMode: 'ceil' }), [2, 3, 4]);
  });
  it('linear: half_pixel clamps at the edges; align_corners maps the ends onto each other', () => {
    close(resize(x, { scales: [2], mode: 'linear' }), [1, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4]);
    close(
      resize(tensor([0, 3]), { sizes: [4], mode: 'linear', coordinateTransformationMode: 'align_corners' }),
      [0, 1, 2, 3],
    );
    // ONNX's reference uses the float output width scale · in (here 0.6 · 4 = 2.4) for align_corners with scales
    close(resize(x, { scales: [0.6], mode: 'linear', coordinateTransformationMode: 'align_corners' }), [
      1,
      1 + 3 / 1.4,
    ]);
    close(resize(x, { sizes: [1], mode: 'linear', coordinateTransformationMode: 'pytorch_half_pixel' }), [1]);
  });
  it('half_pixel_symmetric (opset 19): half_pixel shifted by (n / 2) · (1 − out / (scale · n))', () => {
    const ramp = tensor([0, 10, 20, 30]);
    // scale 0.6: 2 outputs of a width of 2.4, offset 2 · (1 − 2 / 2.4) = 1/3; sources 1/3 + (j + ½) / 0.6 − ½ = 2/3, 7/3
    const opts = { mode: 'linear', coordinateTransformationMode: 'half_pixel_symmetric' } as const;
    close(resize(ramp, { scales: [0.6], ...opts }), [20 / 3, 70 / 3]);
    // half_pixel would read 1/3 and 2 (10/3, 20): the symmetric form spreads the rounding over both ends
    close(resize(ramp, { scales: [0.6], mode: 'linear' }), [10 / 3, 20]);
  });
  it('sizes with their own scales (keep_aspect_ratio_policy): the output of sizes, the coordinates of scales', () => {
    const ramp = tensor([0, 1, 2, 3, 4, 5, 6, 7]);
    // scale 2/3, 5 outputs: sources (j + ½) · 1.5 − ½ = 0.25, 1.75, 3.25, 4.75, 6.25 (by sizes alone: 0.3, 1.9, ...)
    close(resize(ramp, { sizes: [5], scales: [2 / 3], mode: 'linear' }), [0.25, 1.75, 3.25, 4.75, 6.25]);
    close(resize(ramp, { sizes: [5], mode: 'linear' }), [0.3, 1.9, 3.5, 5.1, 6.7]);
  });
  it('cubic (a = -0.5): reproduces linear functions away from the edges; constants stay constant', () => {
    const ramp = tensor(Array.from({ length: 10 }, (_, i) => 2 * i + 1));
    // a = -0.5 (Keys' kernel) is the one that reproduces linear functions exactly
    const y = resize(ramp, {
      scales: [2],
      mode: 'cubic',
      coordinateTransformationMode: 'align_corners',
      cubicCoeffA: -0.5,
    }).values();
    const n = y.length;
    for (let j = 4; j < n - 4; j++) expect(y[j]).toBeCloseTo(1 + (2 * (j * 9)) / (n - 1), 4);
    close(resize(tensor([5, 5, 5]), { sizes: [7], mode: 'cubic', excludeOutside: true }), [5, 5, 5, 5, 5, 5, 5]);
  });
});

describe('resize: 2-d against a direct bilinear computation', () => {
  it('half_pixel linear on [1, 1, 3, 4] -> [1, 1, 5, 7]', () => {
    const x = randn([1, 1, 3, 4], { generator: new Generator(1) });
    const y = resize(x, { sizes: [1, 1, 5, 7], mode: 'linear' });
    const xv = x.values();
    const at = (r: number, c: number) => xv[Math.min(2, Math.max(0, r)) * 4 + Math.min(3, Math.max(0, c))]!;
    const want: number[] = [];
    for (let i = 0; i < 5; i++) {
      for (let j = 0; j < 7; j++) {
        const sy = Math.max(-1, (i + 0.5) * (3 / 5) - 0.5);
        const sx = Math.max(-1, (j + 0.5) * (4 / 7) - 0.5);
        const y0 = Math.floor(sy);
        const x0 = Math.floor(sx);
        const fy = sy - y0;
        const fx = sx - x0;
        want.push(
          (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) +
            fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1)),
        );
      }
    }
    expect(y.shape).toEqual([1, 1, 5, 7]);
    close(y, want);
  });
});

describe('resize: gradients', () => {
  for (const mode of ['nearest', 'linear', 'cubic'] as const) {
    it(`${mode} matches finite differences`, () => {
      const x = randn([1, 2, 3, 3], { generator: new Generator(2), requiresGrad: true });
      expect(gradcheck((t) => resize(t!, { scales: [1, 1, 1.7, 2], mode }), [x])).toEqual([]);
    });
  }
});

describe('resize: argument errors', () => {
  it('names the problem', () => {
    const x = randn([1, 1, 2, 2]);
    expect(() => resize(x, { scales: [2, 2] })).toThrow(ShapeError);
    expect(() => resize(x, {} as never)).toThrow(InvalidArgumentError);
    expect(() => resize(x, { scales: [1, 1, 2, 2], mode: 'area' as never })).toThrow(/mode must be one of/);
    expect(() => resize(x, { sizes: [1, 1, 0, 2] })).toThrow(/positive integers/);
  });
});
