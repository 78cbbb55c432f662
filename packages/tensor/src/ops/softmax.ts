import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { registerKernel } from '../registry.js';
import { normalizeAxis } from '../shape.js';
import { Tensor } from '../tensor.js';
import { axisLayout, type AxisLayout } from './axis-layout.js';
import { f32, make, requireFloat } from './util.js';

interface SoftmaxAttrs {
  axis: number;
}

/**
 * Softmax (or log-softmax) of row-major `x` along the middle axis of `layout`, written into `y`.
 * Subtracts the maximum first so large logits do not overflow; sums in float64.
 */
function softmaxInto(x: Float32Array, y: Float32Array, { outer, n, inner }: AxisLayout, log: boolean): void {
  if (inner === 1) {
    for (let base = 0, end = outer * n; base < end; base += n) {
      let m = -Infinity;
      for (let k = base; k < base + n; k++) if (x[k]! > m) m = x[k]!;
      let s = 0;
      if (log) {
        for (let k = base; k < base + n; k++) s += Math.exp(x[k]! - m);
        const lse = m + Math.log(s);
        for (let k = base; k < base + n; k++) y[k] = x[k]! - lse;
      } else {
        for (let k = base; k < base + n; k++) {
          const e = Math.exp(x[k]! - m);
          y[k] = e;
          s += e;
        }
        const r = 1 / s;
        for (let k = base; k < base + n; k++) y[k]! *= r;
      }
    }
    return;
  }
  // Axis not last: sweep whole rows of `inner` contiguous values at a time.
  const m = new Float64Array(inner);
  const s = new Float64Array(inner);
  const block = n * inner;
  for (let o = 0; o < outer; o++) {
    const base = o * block;
    m.fill(-Infinity);
    s.fill(0);
    for (let k = 0; k < n; k++) {
      const row = base + k * inner;
      for (let j = 0; j < inner; j++) if (x[row + j]! > m[j]!) m[j] = x[row + j]!;
    }
    for (let k = 0; k < n; k++) {
      const row = base + k * inner;
      for (let j = 0; j < inner; j++) {
        const e = Math.exp(x[row + j]! - m[j]!);
        if (!log) y[row + j] = e;
        s[j]! += e;
      }
    }
    if (log) {
      for (let j = 0; j < inner; j++) m[j]! += Math.log(s[j]!);
      for (let k = 0; k < n; k++) {
        const row = base + k * inner;
        for (let j = 0; j < inner; j++) y[row + j] = x[row + j]! - m[j]!;
      }
    } else {
      for (let j = 0; j < inner; j++) s[j] = 1 / s[j]!;
      for (let k = 0; k < n; k++) {
        const row = base + k * inner;
        for (let j = 0; j < inner; j++) y[row + j]! *= s[j]!;
      }
    }
  }
}

/**
 * dx from dy for softmax (dx = y·(g − Σ g·y)) or log-softmax (dx = g − e^y·Σ g).
 */
function softmaxGradInto(
  y: Float32Array,
  g: Float32Array,
  dx: Float32Array,
  { outer, n, inner }: AxisLayout,
  log: boolean,
): void {
  if (inner === 1) {
    for (let base = 0, end = outer * n; base < end; base += n) {
      let s = 0;
      if (log) {
        for (let k = base; k < base + n; k++) s += g[k]!;
        for (let k = base; k < base + n; k++) dx[k] = g[k]! - Math.exp(y[k]!) * s;
      } else {
        for (let k = base; k < base + n; k++) s += g[k]! * y[k]!;
        for (let k = base; k < base + n; k++) dx[k] = y[k]! * (g[k]! - s);
      }
    }
    return;
  }
  const acc = new Float64Array(inner);
  const block = n * inner;
  for (let o = 0; o < outer; o++) {
    const base = o * block;
    acc.fill(0);
    for (let k = 0; k < n; k++) {
      const row = base + k * inner;
      if (log) for (let j = 0; j < inner; j++) acc[j]! += g[row + j]!;
      else for (let j = 0; j < inner; j++) acc[j]! += g[row + j]! * y[row + j]!;
    }
    for (let k = 0; k < n; k++) {
      const row = base + k * inner;
      if (log) for (let j = 0; j < inner; j++) dx[row + j] = g[row + j]! - Math.exp(y[row + j]!) * acc[j]!;
      else for (let j = 0; j < inner; j++) dx[row + j] = y[row + j]! * (g[row + j]! - acc[j]!);
    }
  }
}

for (const [op, log] of [
  ['Softmax', false],
  ['LogSoftmax', true],
] as const) {
  registerKernel<(i: Tensor[], a: SoftmaxAttrs) => Tensor>({
    op,
    backend: 'cpu',
    fn: ([x], { axis }) => {
      const y = new Float32Array(x!.size);
      softmaxInto(f32(x!), y, axisLayout(x!.shape, axis), log);
      return make(y, x!.shape);
    },
  });
  registerGradient<SoftmaxAttrs>(op, ({ inputs: [x], outputs: [y], attrs: { axis } }, [g]) => {
    const dx = new Float32Array(x!.size);
    softmaxGradInto(f32(y!), f32(g!), dx, axisLayout(x!.shape, axis), log);
    return [make(dx, x!.shape)];
  });
}

/** exp(x)/Σexp(x) along `axis` (the last by default), computed stably. */
export function softmax(x: Tensor, axis = -1): Tensor {
  requireFloat(x, 'softmax');
  return run1<SoftmaxAttrs>('Softmax', [x], { axis: normalizeAxis(axis, Math.max(x.ndim, 1), 'softmax') });
}

/** x − logΣexp(x) along `axis` (the last by default); use it rather than log(softmax(x)). */
export function logSoftmax(x: Tensor, axis = -1): Tensor {
  requireFloat(x, 'logSoftmax');
  return run1<SoftmaxAttrs>('LogSoftmax', [x], { axis: normalizeAxis(axis, Math.max(x.ndim, 1), 'logSoftmax') });
}

declare module '../tensor.js' {
  interface Tensor {
    softmax(axis?: number): Tensor;
    logSoftmax(axis?: number): Tensor;
  }
}

Tensor.prototype.softmax = function (axis) {
  return softmax(this, axis);
};
Tensor.prototype.logSoftmax = function (axis) {
  return logSoftmax(this, axis);
};
