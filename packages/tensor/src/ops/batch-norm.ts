import { noGrad, registerGradient } from '../autograd.js';
import { runOp } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { kernels, registerKernel, type Saved } from '../registry.js';
import type { Tensor } from '../tensor.js';
import { shapeStr } from './conv-args.js';
import { f32, make, requireFloat } from './util.js';

/**
 * Inputs are [x, weight?, bias?, runningMean?, runningVar?] with the flags saying which are
 * present; running stats are only passed (and read) in evaluation mode. In training the op has
 * three outputs: y, the batch mean and the biased batch variance (the caller updates running stats).
 */
export interface BatchNormAttrs {
  training: boolean;
  eps: number;
  hasWeight: boolean;
  hasBias: boolean;
}

export interface BatchNormInputs {
  x: Tensor;
  w: Tensor | null;
  b: Tensor | null;
  rm: Tensor | null;
  rv: Tensor | null;
}

/** The BatchNormalization op's inputs by name. */
export function unpackBatchNorm(inputs: readonly Tensor[], a: BatchNormAttrs): BatchNormInputs {
  let k = 1;
  const w = a.hasWeight ? inputs[k++]! : null;
  const b = a.hasBias ? inputs[k++]! : null;
  const rm = a.training ? null : inputs[k++]!;
  const rv = a.training ? null : inputs[k++]!;
  return { x: inputs[0]!, w, b, rm, rv };
}

/** Batch, channels and the size of one channel's plane (product of the spatial dims) of x [N, C, ...]. */
export function batchNormDims(x: Tensor): { n: number; c: number; s: number } {
  const n = x.shape[0]!;
  const c = x.shape[1]!;
  return { n, c, s: n * c === 0 ? 0 : x.size / (n * c) };
}

/** A BatchNormalization kernel: returns [y] (evaluation) or [y, mean, biased variance] (training); saves mean and invstd. */
export type BatchNormKernel = (inputs: Tensor[], attrs: BatchNormAttrs, saved: Saved) => Tensor[];

registerKernel<BatchNormKernel>({
  op: 'BatchNormalization',
  backend: 'cpu',
  fn: (inputs, attrs, saved) => {
    const { x, w, b, rm, rv } = unpackBatchNorm(inputs, attrs);
    const { n: N, c: C, s: S } = batchNormDims(x);
    const xv = f32(x);
    const wv = w ? f32(w) : null;
    const bv = b ? f32(b) : null;
    const mean = new Float32Array(C);
    const variance = new Float32Array(C);
    const invstd = new Float32Array(C);
    const y = new Float32Array(xv.length);
    const stride = C * S;
    const M = N * S;
    if (attrs.training) {
      for (let c = 0; c < C; c++) {
        // Two passes over the channel's planes: mean, then centred squares (stable for large offsets).
        let sum = 0;
        for (let n = 0, p = c * S; n < N; n++, p += stride) for (let i = 0; i < S; i++) sum += xv[p + i]!;
        const mu = sum / M;
        let sq = 0;
        for (let n = 0, p = c * S; n < N; n++, p += stride) {
          for (let i = 0; i < S; i++) {
            const d = xv[p + i]! - mu;
            sq += d * d;
          }
        }
        mean[c] = mu;
        variance[c] = sq / M;
      }
    } else {
      mean.set(f32(rm!));
      variance.set(f32(rv!));
    }
    for (let c = 0; c < C; c++) {
      const is = 1 / Math.sqrt(variance[c]! + attrs.eps);
      invstd[c] = is;
      const scale = wv ? wv[c]! * is : is;
      const shift = (bv ? bv[c]! : 0) - mean[c]! * scale;
      for (let n = 0, p = c * S; n < N; n++, p += stride)
        for (let i = 0; i < S; i++) y[p + i] = xv[p + i]! * scale + shift;
    }
    saved.mean = mean;
    saved.invstd = invstd;
    const out = make(y, x.shape);
    return attrs.training ? [out, make(mean, [C]), make(variance, [C])] : [out];
  },
});

/** Attributes of BatchNormalizationBackward: the forward's, plus which gradients to compute. */
export interface BatchNormBackwardAttrs extends BatchNormAttrs {
  needInput: boolean;
  needWeight: boolean;
  needBias: boolean;
}

/**
 * A BatchNormalizationBackward kernel: inputs [x, gy] plus the weight when `hasWeight`; `saved`
 * is what the forward kernel saved (mean and invstd, Float32Array per channel). Returns
 * [dx, dweight, dbias] with null for the gradients not asked for.
 */
export type BatchNormBackwardKernel = (
  inputs: Tensor[],
  attrs: BatchNormBackwardAttrs,
  saved: Saved,
) => (Tensor | null)[];

registerKernel<BatchNormBackwardKernel>({
  op: 'BatchNormalizationBackward',
  backend: 'cpu',
  fn: (inputs, attrs, saved) => {
    const [x, gy, w] = inputs as [Tensor, Tensor, Tensor | undefined];
    const { n: N, c: C, s: S } = batchNormDims(x);
    const xv = f32(x);
    const gv = f32(gy);
    const wv = w ? f32(w) : null;
    const mean = saved.mean as Float32Array;
    const invstd = saved.invstd as Float32Array;
    const stride = C * S;
    const M = N * S;
    const dx = attrs.needInput ? new Float32Array(xv.length) : null;
    const dw = new Float32Array(C);
    const db = new Float32Array(C);
    for (let c = 0; c < C; c++) {
      const mu = mean[c]!;
      const is = invstd[c]!;
      let sg = 0;
      let sgx = 0;
      for (let n = 0, p = c * S; n < N; n++, p += stride) {
        for (let i = 0; i < S; i++) {
          const g = gv[p + i]!;
          sg += g;
          sgx += g * (xv[p + i]! - mu);
        }
      }
      dw[c] = sgx * is;
      db[c] = sg;
      if (!dx) continue;
      const scale = (wv ? wv[c]! : 1) * is;
      if (attrs.training) {
        // dx = w·σ⁻¹·(g − mean(g) − x̂·mean(g·x̂)), x̂ = (x − μ)·σ⁻¹
        const meanG = sg / M;
        const k = (sgx * is * is) / M;
        for (let n = 0, p = c * S; n < N; n++, p += stride) {
          for (let i = 0; i < S; i++) dx[p + i] = scale * (gv[p + i]! - meanG - (xv[p + i]! - mu) * k);
        }
      } else {
        for (let n = 0, p = c * S; n < N; n++, p += stride) for (let i = 0; i < S; i++) dx[p + i] = scale * gv[p + i]!;
      }
    }
    return [
      dx ? make(dx, x.shape) : null,
      w && attrs.needWeight ? make(dw, w.shape) : null,
      attrs.needBias ? make(db, [C]) : null,
    ];
  },
});

// The gradient dispatches like a forward op, so backends can bring their own backward kernel.
registerGradient<BatchNormAttrs>('BatchNormalization', ({ inputs, attrs, saved }, [gy]) => {
  const { x, w, b } = unpackBatchNorm(inputs, attrs);
  const grads: (Tensor | null)[] = new Array<Tensor | null>(inputs.length).fill(null);
  if (!gy) return grads;
  const a: BatchNormBackwardAttrs = {
    ...attrs,
    needInput: x.requiresGrad,
    needWeight: !!w?.requiresGrad,
    needBias: !!b?.requiresGrad,
  };
  if (!a.needInput && !a.needWeight && !a.needBias) return grads;
  const args = w ? [x, gy, w] : [x, gy];
  const [dx, dw, db] = kernels
    .resolve<BatchNormBackwardKernel>('BatchNormalizationBackward', args, a)
    .fn(args, a, saved);
  grads[0] = dx ?? null;
  let k = 1;
  if (w) grads[k++] = dw ?? null;
  if (b) grads[k++] = db ?? null;
  return grads;
});

export interface BatchNormOptions {
  /** Normalise with batch statistics and update the running ones (default false: use running stats). */
  training?: boolean;
  /** Weight of the new batch statistic: running = (1 − momentum)·running + momentum·batch. */
  momentum?: number;
  eps?: number;
}

function checkChannelVector(name: string, t: Tensor | null | undefined, c: number): void {
  if (!t) return;
  requireFloat(t, 'batchNorm', name);
  if (t.ndim !== 1 || t.shape[0] !== c) {
    throw new ShapeError(`batchNorm: ${name} must have shape [${c}] (one value per channel), got ${shapeStr(t.shape)}`);
  }
}

/**
 * Batch normalisation over [N, C], [N, C, L], [N, C, H, W] or [N, C, D, H, W], per channel C.
 * Training normalises with the batch's biased variance and updates runningMean/runningVar in
 * place (when given) with the unbiased variance, PyTorch's convention.
 */
export function batchNorm(
  x: Tensor,
  runningMean: Tensor | null,
  runningVar: Tensor | null,
  weight?: Tensor | null,
  bias?: Tensor | null,
  options: BatchNormOptions = {},
): Tensor {
  requireFloat(x, 'batchNorm');
  if (x.ndim < 2 || x.ndim > 5) {
    throw new ShapeError(`batchNorm: input must be 2-d to 5-d [N, C, ...], got ${shapeStr(x.shape)}`);
  }
  const training = options.training ?? false;
  const momentum = options.momentum ?? 0.1;
  const eps = options.eps ?? 1e-5;
  if (!(eps > 0)) throw new InvalidArgumentError(`batchNorm: eps must be positive, got ${eps}`);
  if (!(momentum >= 0 && momentum <= 1))
    throw new InvalidArgumentError(`batchNorm: momentum must be in [0, 1], got ${momentum}`);
  if (!runningMean !== !runningVar) {
    throw new InvalidArgumentError('batchNorm: give both runningMean and runningVar or neither');
  }
  const C = x.shape[1]!;
  checkChannelVector('runningMean', runningMean, C);
  checkChannelVector('runningVar', runningVar, C);
  checkChannelVector('weight', weight, C);
  checkChannelVector('bias', bias, C);
  if (!training && !runningMean) {
    throw new InvalidArgumentError(
      'batchNorm: evaluation mode needs runningMean and runningVar; pass them or set training: true',
    );
  }
  const M = x.size / C;
  if (training && M <= 1) {
    throw new ShapeError(`batchNorm: training needs more than one value per channel, got input ${shapeStr(x.shape)}`);
  }
  const attrs: BatchNormAttrs = { training, eps, hasWeight: !!weight, hasBias: !!bias };
  const inputs = [x];
  if (weight) inputs.push(weight);
  if (bias) inputs.push(bias);
  if (!training) inputs.push(runningMean!, runningVar!);
  const [y, mean, variance] = runOp<BatchNormAttrs>('BatchNormalization', inputs, attrs);
  if (training && runningMean && runningVar) {
    noGrad(() => {
      const mv = mean!.values();
      const vv = variance!.values();
      const unbias = M / (M - 1);
      const rm = runningMean.data;
      const rv = runningVar.data;
      for (let c = 0; c < C; c++) {
        const im = runningMean.offset + c * runningMean.strides[0]!;
        const iv = runningVar.offset + c * runningVar.strides[0]!;
        rm[im] = (1 - momentum) * rm[im]! + momentum * mv[c]!;
        rv[iv] = (1 - momentum) * rv[iv]! + momentum * vv[c]! * unbias;
      }
    });
  }
  return y!;
}
