import { kernels, registerKernel, type TensorKernel } from '../registry.js';
import { type RoundingMode, roundHalfEven } from '../rounding.js';
import type { Tensor } from '../tensor.js';
import { make } from './util.js';

// FakeQuantizeSymmetric and its straight-through gradient, the arithmetic under @qtk/fake-quant's op:
//   r = R(x / s)                 x / s in float64, R = floor(v + 0.5) (half up) or round half to even
//   forward  y = clamp(r, lo, hi) · s            (rounded to float32)
//   backward dx = g where lo <= r <= hi, else 0
// with one scale per tensor or per channel of `chAxis`. The cpu kernels are the reference; the wasm
// kernels (assembly/_fake-quant.ts) give the same bits.

export interface FakeQuantizeSymmetricAttrs {
  quantMin: number;
  quantMax: number;
  /** -1: one scale for the tensor; otherwise the axis of x the scales run along. */
  chAxis: number;
  rounding: RoundingMode;
}

/** (outer, channels, inner) of a shape around chAxis ((1, 1, size) per tensor). */
export function channelLayout(shape: readonly number[], chAxis: number): [number, number, number] {
  if (chAxis < 0) {
    let n = 1;
    for (const d of shape) n *= d;
    return [1, 1, n];
  }
  let outer = 1;
  let inner = 1;
  for (let i = 0; i < chAxis; i++) outer *= shape[i]!;
  for (let i = chAxis + 1; i < shape.length; i++) inner *= shape[i]!;
  return [outer, shape[chAxis]!, inner];
}

/** R(v): the two roundings, half up inlined (it is the default and runs per element). */
function rounded(v: number, halfEven: boolean): number {
  return halfEven ? roundHalfEven(v) : Math.floor(v + 0.5);
}

registerKernel<TensorKernel<FakeQuantizeSymmetricAttrs>>({
  op: 'FakeQuantizeSymmetric',
  backend: 'cpu',
  fn: ([x, s], a) => {
    const xv = x!.values();
    const sv = s!.values();
    const { quantMin: lo, quantMax: hi } = a;
    const halfEven = a.rounding === 'half_even';
    const [outer, ch, inner] = channelLayout(x!.shape, a.chAxis);
    const out = new Float32Array(xv.length);
    for (let o = 0, i = 0; o < outer; o++) {
      for (let c = 0; c < ch; c++) {
        const scale = sv[c]!;
        for (const end = i + inner; i < end; i++) {
          const r = rounded(xv[i]! / scale, halfEven);
          out[i] = (r < lo ? lo : r > hi ? hi : r) * scale;
        }
      }
    }
    return make(out, [...x!.shape]);
  },
});

registerKernel<TensorKernel<FakeQuantizeSymmetricAttrs>>({
  op: 'FakeQuantizeSymmetricBackward',
  backend: 'cpu',
  fn: ([x, s, g], a) => {
    const xv = x!.values();
    const sv = s!.values();
    const gv = g!.values();
    const { quantMin: lo, quantMax: hi } = a;
    const halfEven = a.rounding === 'half_even';
    const [outer, ch, inner] = channelLayout(x!.shape, a.chAxis);
    const dx = new Float32Array(xv.length);
    for (let o = 0, i = 0; o < outer; o++) {
      for (let c = 0; c < ch; c++) {
        const scale = sv[c]!;
        for (const end = i + inner; i < end; i++) {
          const r = rounded(xv[i]! / scale, halfEven);
          if (r >= lo && r <= hi) dx[i] = gv[i]!;
        }
      }
    }
    return make(dx, [...x!.shape]);
  },
});

/** y = clamp(R(x / s), lo, hi) · s on the best available kernel (no autograd; @qtk/fake-quant's op records it). */
export function fakeQuantizeSymmetric(x: Tensor, scale: Tensor, attrs: FakeQuantizeSymmetricAttrs): Tensor {
  const inputs = [x, scale];
  return kernels
    .resolve<TensorKernel<FakeQuantizeSymmetricAttrs>>('FakeQuantizeSymmetric', inputs, attrs)
    .fn(inputs, attrs, {}) as Tensor;
}

/** The straight-through gradient: g where lo <= R(x / s) <= hi, else 0 (no autograd). */
export function fakeQuantizeSymmetricBackward(
  x: Tensor,
  scale: Tensor,
  g: Tensor,
  attrs: FakeQuantizeSymmetricAttrs,
): Tensor {
  const inputs = [x, scale, g];
  return kernels
    .resolve<TensorKernel<FakeQuantizeSymmetricAttrs>>('FakeQuantizeSymmetricBackward', inputs, attrs)
    .fn(inputs, attrs, {}) as Tensor;
}
