import { Generator, randn, roundHalfEven, roundHalfUp, sum, tensor, Tensor, mul } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { fakeQuantize, type FakeQuantAttrs } from './fake-quant-op.js';

const A8: FakeQuantAttrs = { quantMin: -128, quantMax: 127, chAxis: -1, rounding: 'half_up' };

/** The float path: divide, round, clamp, multiply, one element at a time in float64. */
function reference(x: number[], shape: readonly number[], scales: number[], attrs: FakeQuantAttrs): number[] {
  const R = attrs.rounding === 'half_even' ? roundHalfEven : roundHalfUp;
  const inner = attrs.chAxis < 0 ? x.length : shape.slice(attrs.chAxis + 1).reduce((a, b) => a * b, 1);
  const ch = attrs.chAxis < 0 ? 1 : shape[attrs.chAxis]!;
  return x.map((v, i) => {
    const s = scales[attrs.chAxis < 0 ? 0 : Math.floor(i / inner) % ch]!;
    const q = Math.min(attrs.quantMax, Math.max(attrs.quantMin, R(Math.fround(v / s))));
    return Math.fround(q * s);
  });
}

describe('rounding', () => {
  it('half up and half to even differ exactly on .5 cases', () => {
    expect([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5].map(roundHalfUp)).toEqual([-2, -1, 0, 1, 2, 3]);
    expect([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5].map(roundHalfEven)).toEqual([-2, -2, 0, 0, 2, 2]);
    expect([1.4999, 1.5001, -1.4999, -1.5001].map(roundHalfUp)).toEqual([1, 2, -1, -2]);
  });
  it('the op rounds x/s = k + 0.5 by the selected mode', () => {
    const x = tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5]);
    const s = tensor([1]);
    expect(fakeQuantize(x, s, A8).toArray()).toEqual([1, 2, 3, 0, -1, -2]);
    expect(fakeQuantize(x, s, { ...A8, rounding: 'half_even' }).toArray()).toEqual([0, 2, 2, 0, -2, -2]);
  });
});

describe('fakeQuantize forward', () => {
  it('per tensor equals the float path and saturates at qmin·s / qmax·s', () => {
    const g = new Generator(1);
    const x = randn([4, 3, 5], { generator: g }).mul(3);
    const s = 0.02;
    const got = fakeQuantize(x, tensor([s]), A8).toArray();
    const want = reference(x.toArray(), x.shape, [Math.fround(s)], A8);
    expect(got).toEqual(want);
    expect(Math.max(...got)).toBeCloseTo(127 * s, 6);
    expect(Math.min(...got)).toBeCloseTo(-128 * s, 6);
  });
  it('per channel (axis 0 and axis 1) equals the float path', () => {
    const g = new Generator(2);
    const x = randn([3, 4, 2, 2], { generator: g });
    for (const chAxis of [0, 1]) {
      const scales = Array.from({ length: x.shape[chAxis]! }, (_, i) => Math.fround(0.005 * (i + 1)));
      const attrs = { ...A8, chAxis };
      expect(fakeQuantize(x, tensor(scales), attrs).toArray()).toEqual(reference(x.toArray(), x.shape, scales, attrs));
    }
  });
  it('rejects a scale of the wrong size', () => {
    expect(() => fakeQuantize(randn([2, 3]), tensor([1, 1]), { ...A8, chAxis: 1 })).toThrow(/needs 3 scale/);
  });
});

/** Sum of w · f(x) as a float64 number, for finite differences. */
function weighted(values: number[], w: number[]): number {
  return values.reduce((a, v, i) => a + v * w[i]!, 0);
}

describe('fakeQuantize gradients', () => {
  it('STE: dL/dx = dL/dx̂ inside [qmin·s, qmax·s], 0 outside (hand values)', () => {
    const x = new Tensor({
      data: Float32Array.of(-3, -1.27, 0.3, 1.26, 1.28, 5),
      shape: [6],
      dtype: 'float32',
      requiresGrad: true,
    });
    const s = tensor([0.01]);
    const w = tensor([1, 2, 3, 4, 5, 6]);
    sum(mul(fakeQuantize(x, s, A8), w)).backward();
    // 1.28/0.01 = 128 > 127: saturated; -1.27/0.01 = -127 inside; -3 outside
    expect(Array.from(x.grad!.values())).toEqual([0, 2, 3, 4, 0, 0]);
  });

  it('LSQ scale gradient equals finite differences of the LSQ surrogate, per tensor and per channel', () => {
    // LSQ treats R(v/s) - v/s as a constant c and the clamp decision as fixed:
    // x̂(s') = v + c·s' where qmin <= R(v/s) <= qmax, qmin·s' / qmax·s' where it saturates
    const g = new Generator(5);
    for (const chAxis of [-1, 1]) {
      const x = randn([2, 3, 4], { generator: g }).mul(2);
      const nCh = chAxis < 0 ? 1 : 3;
      const s0 = Array.from({ length: nCh }, (_, i) => Math.fround(0.25 + 0.125 * i));
      const s = new Tensor({ data: Float32Array.from(s0), shape: [nCh], dtype: 'float32', requiresGrad: true });
      const wv = randn(x.shape, { generator: g }).toArray();
      const attrs: FakeQuantAttrs = { quantMin: -8, quantMax: 7, chAxis, rounding: 'half_up', gradScale: 0.37 };
      sum(mul(fakeQuantize(x, s, attrs), tensor(wv, x.shape))).backward();
      const xs = x.toArray();
      const inner = chAxis < 0 ? xs.length : 4;
      const chOf = (i: number) => (chAxis < 0 ? 0 : Math.floor(i / inner) % 3);
      const c = xs.map((v, i) => roundHalfUp(v / s0[chOf(i)]!) - v / s0[chOf(i)]!);
      const r = xs.map((v, i) => roundHalfUp(v / s0[chOf(i)]!));
      const surrogate = (ss: number[]) =>
        weighted(
          xs.map((v, i) => (r[i]! > 7 ? 7 * ss[chOf(i)]! : r[i]! < -8 ? -8 * ss[chOf(i)]! : v + c[i]! * ss[chOf(i)]!)),
          wv,
        );
      const eps = 1e-6;
      for (let k = 0; k < nCh; k++) {
        const up = [...s0];
        const dn = [...s0];
        up[k] = up[k]! + eps;
        dn[k] = dn[k]! - eps;
        const numeric = (0.37 * (surrogate(up) - surrogate(dn))) / (2 * eps);
        expect(s.grad!.values()[k]).toBeCloseTo(numeric, 3);
      }
    }
  });

  it('LSQ scale gradient by hand: qmin/qmax outside, R(v/s) - v/s inside', () => {
    const s = new Tensor({ data: Float32Array.of(1), shape: [1], dtype: 'float32', requiresGrad: true });
    // v/s = 0.3 → R = 0 → -0.3; 2.6 → 3 - 2.6 = 0.4; 100 → qmax 7; -100 → qmin -8
    sum(
      fakeQuantize(tensor([0.3, 2.6, 100, -100]), s, { quantMin: -8, quantMax: 7, chAxis: -1, rounding: 'half_up' }),
    ).backward();
    expect(s.grad!.item()).toBeCloseTo(-0.3 + 0.4 + 7 - 8, 5);
  });
});
