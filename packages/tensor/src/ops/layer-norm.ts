import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel, type Saved } from '../registry.js';
import { shapesEqual } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { shapeStr } from './conv-args.js';
import { f32, make, requireFloat } from './util.js';

/** Inputs [x, weight?, bias?]; each row of `size` trailing elements is normalised on its own. */
export interface LayerNormAttrs {
  size: number;
  eps: number;
  hasWeight: boolean;
  hasBias: boolean;
}

registerKernel<(i: Tensor[], a: LayerNormAttrs, s: Saved) => Tensor>({
  op: 'LayerNormalization',
  backend: 'cpu',
  fn: ([x, ...rest], { size: D, eps, hasWeight, hasBias }, saved) => {
    const xv = f32(x!);
    const wv = hasWeight ? f32(rest[0]!) : null;
    const bv = hasBias ? f32(rest[hasWeight ? 1 : 0]!) : null;
    const R = D === 0 ? 0 : xv.length / D;
    const y = new Float32Array(xv.length);
    const mean = new Float32Array(R);
    const invstd = new Float32Array(R);
    for (let r = 0, p = 0; r < R; r++, p += D) {
      let s = 0;
      for (let j = 0; j < D; j++) s += xv[p + j]!;
      const mu = s / D;
      let sq = 0;
      for (let j = 0; j < D; j++) {
        const d = xv[p + j]! - mu;
        sq += d * d;
      }
      const is = 1 / Math.sqrt(sq / D + eps);
      mean[r] = mu;
      invstd[r] = is;
      for (let j = 0; j < D; j++) {
        let v = (xv[p + j]! - mu) * is;
        if (wv) v *= wv[j]!;
        if (bv) v += bv[j]!;
        y[p + j] = v;
      }
    }
    saved.mean = mean;
    saved.invstd = invstd;
    return make(y, x!.shape);
  },
});

registerGradient<LayerNormAttrs>('LayerNormalization', ({ inputs: [x, ...rest], attrs, saved }, [gy]) => {
  const { size: D, hasWeight, hasBias } = attrs;
  const w = hasWeight ? rest[0]! : null;
  const b = hasBias ? rest[hasWeight ? 1 : 0]! : null;
  const xv = f32(x!);
  const gv = f32(gy!);
  const wv = w ? f32(w) : null;
  const mean = saved.mean as Float32Array;
  const invstd = saved.invstd as Float32Array;
  const R = D === 0 ? 0 : xv.length / D;
  const dx = x!.requiresGrad ? new Float32Array(xv.length) : null;
  const dw = w?.requiresGrad ? new Float64Array(D) : null;
  const db = b?.requiresGrad ? new Float64Array(D) : null;
  const xhat = new Float32Array(D);
  for (let r = 0, p = 0; r < R; r++, p += D) {
    const mu = mean[r]!;
    const is = invstd[r]!;
    let s1 = 0;
    let s2 = 0;
    for (let j = 0; j < D; j++) {
      const xh = (xv[p + j]! - mu) * is;
      xhat[j] = xh;
      const g = gv[p + j]!;
      const gw = wv ? g * wv[j]! : g;
      s1 += gw;
      s2 += gw * xh;
      if (dw) dw[j]! += g * xh;
      if (db) db[j]! += g;
    }
    if (!dx) continue;
    // dx = σ⁻¹·(g·w − mean(g·w) − x̂·mean(g·w·x̂))
    const m1 = s1 / D;
    const m2 = s2 / D;
    for (let j = 0; j < D; j++) {
      const gw = wv ? gv[p + j]! * wv[j]! : gv[p + j]!;
      dx[p + j] = is * (gw - m1 - xhat[j]! * m2);
    }
  }
  const grads: (Tensor | null)[] = [dx ? make(dx, x!.shape) : null];
  if (w) grads.push(dw ? make(Float32Array.from(dw), w.shape) : null);
  if (b) grads.push(db ? make(Float32Array.from(db), b.shape) : null);
  return grads;
});

/** Normalises over the trailing dims given by `normalizedShape` (biased variance), then applies weight and bias. */
export function layerNorm(
  x: Tensor,
  normalizedShape: number | readonly number[],
  weight?: Tensor | null,
  bias?: Tensor | null,
  eps = 1e-5,
): Tensor {
  requireFloat(x, 'layerNorm');
  const ns = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
  if (ns.length === 0 || ns.length > x.ndim || !shapesEqual(x.shape.slice(x.ndim - ns.length), ns)) {
    throw new ShapeError(
      `layerNorm: normalizedShape ${shapeStr(ns)} must match the trailing dims of the input ${shapeStr(x.shape)}`,
    );
  }
  if (!(eps > 0)) throw new InvalidArgumentError(`layerNorm: eps must be positive, got ${eps}`);
  for (const [name, t] of [
    ['weight', weight],
    ['bias', bias],
  ] as const) {
    if (!t) continue;
    requireFloat(t, 'layerNorm', name);
    if (!shapesEqual(t.shape, ns)) {
      throw new ShapeError(
        `layerNorm: ${name} must have the normalized shape ${shapeStr(ns)}, got ${shapeStr(t.shape)}`,
      );
    }
  }
  const size = ns.reduce((p, d) => p * d, 1);
  const inputs = [x];
  if (weight) inputs.push(weight);
  if (bias) inputs.push(bias);
  return run1<LayerNormAttrs>('LayerNormalization', inputs, { size, eps, hasWeight: !!weight, hasBias: !!bias });
}
