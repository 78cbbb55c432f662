// The fused fake-quant op `QtkFakeQuantize`: x̂ = sat(R(x / s), [qmin, qmax]) · s, per tensor (one
// scale) or per channel (one scale per index of `chAxis`), with a straight-through gradient for x
// and, when the scale requires a gradient, the LSQ gradient for s.
import {
  channelLayout,
  fakeQuantizeSymmetric,
  fakeQuantizeSymmetricBackward,
  InvalidArgumentError,
  registerGradient,
  registerKernel,
  roundingFunction,
  run1,
  Tensor,
  type FakeQuantizeSymmetricAttrs,
  type Saved,
  type RoundingMode,
} from '@qtk/tensor';

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

const symmetricAttrs = (a: FakeQuantAttrs): FakeQuantizeSymmetricAttrs => ({
  quantMin: a.quantMin,
  quantMax: a.quantMax,
  chAxis: a.chAxis,
  rounding: a.rounding,
});

// The values come from @qtk/tensor's FakeQuantizeSymmetric (cpu reference and wasm kernels); this op adds
// autograd. The gradient recomputes R(x/s) from x instead of keeping it: an array saved per activation
// costs more (a fresh array's page faults) than dividing again.
registerKernel<(inputs: Tensor[], attrs: FakeQuantAttrs, saved: Saved) => Tensor>({
  op: FAKE_QUANT_OP,
  backend: 'cpu',
  fn: ([x, s], attrs) => fakeQuantizeSymmetric(x!, s!, symmetricAttrs(attrs)),
});

registerGradient<FakeQuantAttrs>(FAKE_QUANT_OP, ({ inputs: [x, s], attrs }, [g]) => {
  if (!s!.requiresGrad) {
    return [x!.requiresGrad ? fakeQuantizeSymmetricBackward(x!, s!, g!, symmetricAttrs(attrs)) : null, null];
  }
  const gv = g!.values();
  const xv = x!.values();
  const sv = s!.values();
  const { quantMin: lo, quantMax: hi } = attrs;
  const round = roundingFunction(attrs.rounding);
  const [outer, ch, inner] = channelLayout(x!.shape, attrs.chAxis);
  const gx = x!.requiresGrad ? new Float32Array(gv.length) : null;
  const gs = new Float64Array(sv.length);
  for (let o = 0, i = 0; o < outer; o++) {
    for (let c = 0; c < ch; c++) {
      const scale = sv[c]!;
      let acc = 0;
      for (let k = 0; k < inner; k++, i++) {
        const r = round(xv[i]! / scale);
        // STE: pass inside [qmin·s, qmax·s] (i.e. R(x/s) within [qmin, qmax]), zero outside
        if (r < lo) acc += lo * gv[i]!;
        else if (r > hi) acc += hi * gv[i]!;
        else {
          if (gx) gx[i] = gv[i]!;
          // LSQ: d x̂ / d s = R(x/s) - x/s inside the range, qmin / qmax outside
          acc += (r - xv[i]! / scale) * gv[i]!;
        }
      }
      gs[c] = gs[c]! + acc;
    }
  }
  const gradScale = attrs.gradScale ?? 1;
  return [
    gx ? new Tensor({ data: gx, shape: x!.shape, dtype: 'float32' }) : null,
    new Tensor({ data: Float32Array.from(gs, (v) => v * gradScale), shape: s!.shape, dtype: 'float32' }),
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
