import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import type { TypedArray } from '../dtype.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { Tensor } from '../tensor.js';
import { roundHalfEven } from '../rounding.js';
import { defineUnary } from './unary.js';
import { f32, make, requireFloat } from './util.js';

/**
 * Registers a pointwise float op whose forward and backward are whole-array loops (no call per
 * element), for the activations that sit on hot paths.
 */
function defineLoop(
  op: string,
  forward: (x: TypedArray, y: Float32Array) => void,
  backward: (x: Float32Array, y: Float32Array, g: Float32Array, out: Float32Array) => void,
): (x: Tensor) => Tensor {
  registerKernel<(i: Tensor[]) => Tensor>({
    op,
    backend: 'cpu',
    fn: ([x]) => {
      const y = new Float32Array(x!.size);
      forward(x!.values(), y);
      return make(y, x!.shape);
    },
  });
  registerGradient(op, ({ inputs: [x], outputs: [y] }, [g]) => {
    const out = new Float32Array(x!.size);
    backward(f32(x!), f32(y!), f32(g!), out);
    return [make(out, x!.shape)];
  });
  return (x: Tensor) => run1(op, [x], {});
}

export const sigmoid = defineLoop(
  'Sigmoid',
  (x, y) => {
    for (let i = 0; i < x.length; i++) {
      const v = x[i]!;
      if (v >= 0) {
        y[i] = 1 / (1 + Math.exp(-v));
      } else {
        const e = Math.exp(v);
        y[i] = e / (1 + e);
      }
    }
  },
  (_x, y, g, out) => {
    for (let i = 0; i < y.length; i++) {
      const s = y[i]!;
      out[i] = g[i]! * s * (1 - s);
    }
  },
);

export const tanh = defineLoop(
  'Tanh',
  (x, y) => {
    for (let i = 0; i < x.length; i++) y[i] = Math.tanh(x[i]!);
  },
  (_x, y, g, out) => {
    for (let i = 0; i < y.length; i++) {
      const t = y[i]!;
      out[i] = g[i]! * (1 - t * t);
    }
  },
);

/** x·sigmoid(x) (also called swish). */
export const silu = defineLoop(
  'Silu',
  (x, y) => {
    for (let i = 0; i < x.length; i++) {
      const v = x[i]!;
      if (v >= 0) {
        y[i] = v / (1 + Math.exp(-v));
      } else {
        const e = Math.exp(v);
        y[i] = (v * e) / (1 + e);
      }
    }
  },
  (x, _y, g, out) => {
    for (let i = 0; i < x.length; i++) {
      const v = x[i]!;
      const e = Math.exp(-Math.abs(v));
      const s = v >= 0 ? 1 / (1 + e) : e / (1 + e);
      out[i] = g[i]! * s * (1 + v * (1 - s));
    }
  },
);

/**
 * Complementary error function with relative error below 1.2e-7 everywhere (the Chebyshev
 * fit from Numerical Recipes, §6.2), enough for float32 and accurate in the far tails where
 * GELU of a negative input is tiny.
 */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const p =
    -1.26551223 +
    t *
      (1.00002368 +
        t *
          (0.37409196 +
            t *
              (0.09678418 +
                t *
                  (-0.18628806 +
                    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const r = t * Math.exp(-z * z + p);
  return x >= 0 ? r : 2 - r;
}

const INV_SQRT2 = Math.SQRT1_2;
const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);
const GELU_K = Math.sqrt(2 / Math.PI);
const GELU_C = 0.044715;

registerKernel<(i: Tensor[], a: GeluAttrs) => Tensor>({
  op: 'Gelu',
  backend: 'cpu',
  fn: ([x], { approximate }) => {
    const v = x!.values();
    const y = new Float32Array(v.length);
    if (approximate === 'tanh') {
      for (let i = 0; i < v.length; i++) {
        const a = v[i]!;
        y[i] = 0.5 * a * (1 + Math.tanh(GELU_K * (a + GELU_C * a * a * a)));
      }
    } else {
      // x·Φ(x) = ½·x·erfc(−x/√2); the erfc form keeps relative accuracy for negative x.
      for (let i = 0; i < v.length; i++) {
        const a = v[i]!;
        y[i] = 0.5 * a * erfc(-a * INV_SQRT2);
      }
    }
    return make(y, x!.shape);
  },
});

registerGradient<GeluAttrs>('Gelu', ({ inputs: [x], attrs: { approximate } }, [g]) => {
  const v = f32(x!);
  const gv = f32(g!);
  const out = new Float32Array(v.length);
  if (approximate === 'tanh') {
    for (let i = 0; i < v.length; i++) {
      const a = v[i]!;
      const t = Math.tanh(GELU_K * (a + GELU_C * a * a * a));
      out[i] = gv[i]! * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * GELU_K * (1 + 3 * GELU_C * a * a));
    }
  } else {
    for (let i = 0; i < v.length; i++) {
      const a = v[i]!;
      out[i] = gv[i]! * (0.5 * erfc(-a * INV_SQRT2) + a * INV_SQRT_2PI * Math.exp(-0.5 * a * a));
    }
  }
  return [make(out, x!.shape)];
});

export type GeluApproximate = 'none' | 'tanh';
interface GeluAttrs {
  approximate: GeluApproximate;
}

/** GELU, x·Φ(x) with the exact normal CDF, or PyTorch's tanh approximation with `{ approximate: 'tanh' }`. */
export function gelu(x: Tensor, options: { approximate?: GeluApproximate } = {}): Tensor {
  const approximate = options.approximate ?? 'none';
  if (approximate !== 'none' && approximate !== 'tanh') {
    throw new InvalidArgumentError(`gelu: approximate must be 'none' or 'tanh', got '${String(approximate)}'`);
  }
  return run1<GeluAttrs>('Gelu', [x], { approximate });
}

interface ClipAttrs {
  min: number;
  max: number;
}
const clip = defineUnary<ClipAttrs>({
  op: 'Clip',
  f: (x, { min, max }) => {
    const lo = x < min ? min : x;
    return lo > max ? max : lo;
  },
  // Like PyTorch: the gradient passes where min ≤ x ≤ max, boundaries included.
  df: (x, _y, { min, max }) => (x >= min && x <= max ? 1 : 0),
  keepsIntegerDtype: true,
});

/** Limits values to [min, max]; either bound may be omitted (not both). NaN stays NaN. */
export function clamp(x: Tensor, min?: number | null, max?: number | null): Tensor {
  if ((min === undefined || min === null) && (max === undefined || max === null)) {
    throw new InvalidArgumentError('clamp: give at least one of min and max');
  }
  const lo = min ?? -Infinity;
  const hi = max ?? Infinity;
  if (Number.isNaN(lo) || Number.isNaN(hi))
    throw new InvalidArgumentError(`clamp: bounds must be numbers, got min=${lo}, max=${hi}`);
  return clip(x, { min: lo, max: hi });
}

/** min(max(x, 0), 6); the gradient is 1 strictly inside (0, 6) like PyTorch's hardtanh. */
export const relu6 = defineUnary({
  op: 'Relu6',
  f: (x) => (x <= 0 ? 0 : x >= 6 ? 6 : x),
  df: (x) => (x > 0 && x < 6 ? 1 : 0),
  keepsIntegerDtype: true,
});

const leaky = defineUnary<{ alpha: number }>({
  op: 'LeakyRelu',
  f: (x, { alpha }) => (x > 0 ? x : x * alpha),
  df: (x, _y, { alpha }) => (x > 0 ? 1 : alpha),
});

export function leakyRelu(x: Tensor, negativeSlope = 0.01): Tensor {
  return leaky(x, { alpha: negativeSlope });
}

const eluOp = defineUnary<{ alpha: number }>({
  op: 'Elu',
  f: (x, { alpha }) => (x > 0 ? x : alpha * Math.expm1(x)),
  df: (x, y, { alpha }) => (x > 0 ? 1 : y + alpha),
});

export function elu(x: Tensor, alpha = 1): Tensor {
  return eluOp(x, { alpha });
}

const SELU_ALPHA = 1.6732632423543772;
const SELU_SCALE = 1.0507009873554805;
export const selu = defineUnary({
  op: 'Selu',
  f: (x) => (x > 0 ? SELU_SCALE * x : SELU_SCALE * SELU_ALPHA * Math.expm1(x)),
  df: (x, y) => (x > 0 ? SELU_SCALE : y + SELU_SCALE * SELU_ALPHA),
});

/** PyTorch's hard sigmoid: clamp(x/6 + 1/2, 0, 1) (ONNX's HardSigmoid default slope differs). */
export const hardsigmoid = defineUnary({
  op: 'HardSigmoid',
  f: (x) => (x <= -3 ? 0 : x >= 3 ? 1 : x / 6 + 0.5),
  df: (x) => (x > -3 && x < 3 ? 1 / 6 : 0),
});

export const hardswish = defineUnary({
  op: 'HardSwish',
  f: (x) => (x <= -3 ? 0 : x >= 3 ? x : (x * (x + 3)) / 6),
  df: (x) => (x < -3 ? 0 : x <= 3 ? x / 3 + 0.5 : 1),
});

const softplusOp = defineUnary<{ beta: number; threshold: number }>({
  op: 'Softplus',
  f: (x, { beta, threshold }) => (x * beta > threshold ? x : Math.log1p(Math.exp(beta * x)) / beta),
  df: (x, _y, { beta, threshold }) => {
    if (x * beta > threshold) return 1;
    const e = Math.exp(beta * x);
    return e / (1 + e);
  },
});

/** log(1 + exp(βx))/β, linear above `threshold` (in units of βx) like PyTorch. */
export function softplus(x: Tensor, beta = 1, threshold = 20): Tensor {
  if (!(beta !== 0 && Number.isFinite(beta)))
    throw new InvalidArgumentError(`softplus: beta must be a finite non-zero number, got ${beta}`);
  return softplusOp(x, { beta, threshold });
}

/** Rounds half to even like torch.round (2.5 → 2, 3.5 → 4); gradient 0. */
export const round = defineUnary({ op: 'Round', f: roundHalfEven, df: () => 0, keepsIntegerDtype: true });
/** Gradient 0. */
export const floor = defineUnary({ op: 'Floor', f: Math.floor, df: () => 0, keepsIntegerDtype: true });
/** −1, 0 or 1 (NaN stays NaN); gradient 0. */
export const sign = defineUnary({
  op: 'Sign',
  f: (x) => (x > 0 ? 1 : x < 0 ? -1 : x),
  df: () => 0,
  keepsIntegerDtype: true,
});

registerKernel<(i: Tensor[]) => Tensor>({
  op: 'PRelu',
  backend: 'cpu',
  fn: ([x, w]) => {
    const v = x!.values();
    const wv = f32(w!);
    const { channels, inner } = preluLayout(x!, w!);
    const y = new Float32Array(v.length);
    for (let p = 0; p < v.length; ) {
      for (let c = 0; c < channels; c++) {
        const a = wv[c]!;
        for (let j = 0; j < inner; j++, p++) {
          const t = v[p]!;
          y[p] = t > 0 ? t : a * t;
        }
      }
    }
    return make(y, x!.shape);
  },
});

registerGradient('PRelu', ({ inputs: [x, w] }, [g]) => {
  const v = f32(x!);
  const wv = f32(w!);
  const gv = f32(g!);
  const { channels, inner } = preluLayout(x!, w!);
  const gx = x!.requiresGrad ? new Float32Array(v.length) : null;
  const gw = w!.requiresGrad ? new Float64Array(channels) : null;
  for (let p = 0; p < v.length; ) {
    for (let c = 0; c < channels; c++) {
      const a = wv[c]!;
      let acc = 0;
      for (let j = 0; j < inner; j++, p++) {
        const t = v[p]!;
        if (t > 0) {
          if (gx) gx[p] = gv[p]!;
        } else {
          if (gx) gx[p] = a * gv[p]!;
          acc += t * gv[p]!;
        }
      }
      if (gw) gw[c]! += acc;
    }
  }
  return [gx ? make(gx, x!.shape) : null, gw ? make(Float32Array.from(gw), w!.shape) : null];
});

function preluLayout(x: Tensor, w: Tensor): { channels: number; inner: number } {
  if (w.size === 1 || x.ndim < 2) return { channels: 1, inner: x.size };
  let inner = 1;
  for (let i = 2; i < x.ndim; i++) inner *= x.shape[i]!;
  return { channels: x.shape[1]!, inner };
}

/** max(0, x) + w·min(0, x) with a learned slope per channel (axis 1) or a single slope. */
export function prelu(x: Tensor, weight: Tensor): Tensor {
  requireFloat(x, 'prelu');
  requireFloat(weight, 'prelu', 'weight');
  if (weight.size !== 1) {
    const channels = x.ndim >= 2 ? x.shape[1]! : 1;
    if (weight.ndim !== 1 || weight.size !== channels) {
      throw new ShapeError(
        `prelu: weight must hold 1 value or one per channel (axis 1 of input [${x.shape.join(', ')}] is ${channels}), ` +
          `got shape [${weight.shape.join(', ')}]`,
      );
    }
  }
  return run1('PRelu', [x, weight], {});
}

declare module '../tensor.js' {
  interface Tensor {
    clamp(min?: number | null, max?: number | null): Tensor;
    relu6(): Tensor;
    leakyRelu(negativeSlope?: number): Tensor;
    prelu(weight: Tensor): Tensor;
    elu(alpha?: number): Tensor;
    selu(): Tensor;
    sigmoid(): Tensor;
    tanh(): Tensor;
    silu(): Tensor;
    gelu(options?: { approximate?: GeluApproximate }): Tensor;
    hardsigmoid(): Tensor;
    hardswish(): Tensor;
    softplus(beta?: number, threshold?: number): Tensor;
    round(): Tensor;
    floor(): Tensor;
    sign(): Tensor;
  }
}

const P = Tensor.prototype;
P.clamp = function (min, max) {
  return clamp(this, min, max);
};
P.relu6 = function () {
  return relu6(this);
};
P.leakyRelu = function (s) {
  return leakyRelu(this, s);
};
P.prelu = function (w) {
  return prelu(this, w);
};
P.elu = function (alpha) {
  return elu(this, alpha);
};
P.selu = function () {
  return selu(this);
};
P.sigmoid = function () {
  return sigmoid(this);
};
P.tanh = function () {
  return tanh(this);
};
P.silu = function () {
  return silu(this);
};
P.gelu = function (options) {
  return gelu(this, options);
};
P.hardsigmoid = function () {
  return hardsigmoid(this);
};
P.hardswish = function () {
  return hardswish(this);
};
P.softplus = function (beta, threshold) {
  return softplus(this, beta, threshold);
};
P.round = function () {
  return round(this);
};
P.floor = function () {
  return floor(this);
};
P.sign = function () {
  return sign(this);
};
