// The fused fake-quant op `QtkFakeQuantize`: x̂ = sat(R(x / s), [qmin, qmax]) · s, per tensor (one
// scale) or per channel (one scale per index of `chAxis`), with a straight-through gradient for x
// and, when the scale requires a gradient, the LSQ gradient for s.
import { InvalidArgumentError, registerGradient, registerKernel, run1, Tensor, type Saved } from '@qtk/tensor';
import type { RoundingMode } from '@qtk/spec';

export const FAKE_QUANT_OP = 'QtkFakeQuantize';

export interface FakeQuantAttrs {
  quantMin: number;
  quantMax: number;
  /** -1: per tensor (scale has one element); otherwise the channel axis of x. */
  chAxis: number;
  rounding: RoundingMode;
  /** Multiplies the scale's gradient (LSQ: 1 / sqrt(numel · qmax)); 1 when not given. */
  gradScale?: number;
}

/** Round half up: floor(v + 0.5) (the marches' bpu_round). */
export function roundHalfUp(v: number): number {
  return Math.floor(v + 0.5);
}

/** Round half to even (banker's rounding). */
export function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** (outer, channels, inner) of x along chAxis, for per-channel loops. */
function channelLayout(shape: readonly number[], chAxis: number): [number, number, number] {
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

registerKernel<(inputs: Tensor[], attrs: FakeQuantAttrs, saved: Saved) => Tensor>({
  op: FAKE_QUANT_OP,
  backend: 'cpu',
  fn: ([x, s], attrs, saved) => {
    const xv = x!.values();
    const sv = s!.values();
    const { quantMin: lo, quantMax: hi } = attrs;
    const round = attrs.rounding === 'half_even' ? roundHalfEven : roundHalfUp;
    const [outer, ch, inner] = channelLayout(x!.shape, attrs.chAxis);
    const out = new Float32Array(xv.length);
    // per element: the unclamped q = R(x/s) saved as float, for both gradients
    const q = new Float32Array(xv.length);
    for (let o = 0, i = 0; o < outer; o++) {
      for (let c = 0; c < ch; c++) {
        const scale = sv[c]!;
        for (let k = 0; k < inner; k++, i++) {
          const r = round(xv[i]! / scale);
          q[i] = r;
          out[i] = (r < lo ? lo : r > hi ? hi : r) * scale;
        }
      }
    }
    saved.q = q;
    return new Tensor({ data: out, shape: x!.shape, dtype: 'float32' });
  },
});

registerGradient<FakeQuantAttrs>(FAKE_QUANT_OP, ({ inputs: [x, s], attrs, saved }, [g]) => {
  const gv = g!.values();
  const xv = x!.values();
  const sv = s!.values();
  const q = saved.q as Float32Array;
  const { quantMin: lo, quantMax: hi } = attrs;
  const [outer, ch, inner] = channelLayout(x!.shape, attrs.chAxis);
  const gx = x!.requiresGrad ? new Float32Array(gv.length) : null;
  const gs = s!.requiresGrad ? new Float64Array(sv.length) : null;
  for (let o = 0, i = 0; o < outer; o++) {
    for (let c = 0; c < ch; c++) {
      const scale = sv[c]!;
      let acc = 0;
      for (let k = 0; k < inner; k++, i++) {
        const r = q[i]!;
        // STE: pass inside [qmin·s, qmax·s] (i.e. R(x/s) within [qmin, qmax]), zero outside
        if (r < lo) acc += lo * gv[i]!;
        else if (r > hi) acc += hi * gv[i]!;
        else {
          if (gx) gx[i] = gv[i]!;
          // LSQ: d x̂ / d s = R(x/s) - x/s inside the range, qmin / qmax outside
          acc += (r - xv[i]! / scale) * gv[i]!;
        }
      }
      if (gs) gs[c] = gs[c]! + acc;
    }
  }
  const gradScale = attrs.gradScale ?? 1;
  return [
    gx ? new Tensor({ data: gx, shape: x!.shape, dtype: 'float32' }) : null,
    gs ? new Tensor({ data: Float32Array.from(gs, (v) => v * gradScale), shape: s!.shape, dtype: 'float32' }) : null,
  ];
});

/**
 * Fake-quantizes `x` with `scale` (one element per tensor, or one per channel along `chAxis`).
 * Differentiable in x (straight-through inside the range) and in scale (LSQ).
 */
export function fakeQuantize(x: Tensor, scale: Tensor, attrs: FakeQuantAttrs): Tensor {
  if (x.dtype !== 'float32') throw new InvalidArgumentError(`fakeQuantize: x must be float32, got ${x.dtype}`);
  if (!(attrs.quantMin < 0 && attrs.quantMax > 0)) {
    throw new InvalidArgumentError(
      `fakeQuantize: need quantMin < 0 < quantMax, got [${attrs.quantMin}, ${attrs.quantMax}]`,
    );
  }
  const expected = attrs.chAxis < 0 ? 1 : x.shape[attrs.chAxis];
  if (attrs.chAxis >= x.shape.length || scale.size !== expected) {
    throw new InvalidArgumentError(
      `fakeQuantize: ${attrs.chAxis < 0 ? 'per-tensor' : `per-channel (chAxis ${attrs.chAxis})`} fake quantization of shape [${x.shape.join(', ')}] needs ${expected ?? '?'} scale(s), got ${scale.size}`,
    );
  }
  return run1(FAKE_QUANT_OP, [x, scale], attrs);
}
