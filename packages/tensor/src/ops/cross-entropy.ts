import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { shapesEqual } from '../shape.js';
import { Tensor } from '../tensor.js';
import { sub } from './binary.js';
import { mean, sum } from './reduce.js';
import { abs } from './unary.js';
import { f32, make, requireFloat } from './util.js';

export type Reduction = 'mean' | 'sum' | 'none';

export interface CrossEntropyOptions {
  /** ε in [0, 1]: the target distribution becomes (1 − ε)·onehot + ε/C, as in PyTorch. */
  labelSmoothing?: number;
  reduction?: Reduction;
  /** Rows whose target equals this contribute nothing and are left out of the mean (PyTorch's ignore_index). */
  ignoreIndex?: number;
}

interface CrossEntropyAttrs {
  labelSmoothing: number;
  reduction: Reduction;
  ignoreIndex: number | null;
}

/**
 * One pass per row: logsumexp, then loss = lse − (1 − ε)·x[t] − (ε/C)·Σx. The row's logsumexp is
 * saved so the gradient, (softmax − q)·g, does not redo the reduction.
 */
registerKernel<(i: Tensor[], a: CrossEntropyAttrs, saved: Record<string, unknown>) => Tensor>({
  op: 'SoftmaxCrossEntropyLoss',
  backend: 'cpu',
  fn: ([logits, target], { labelSmoothing: eps, reduction, ignoreIndex }, saved) => {
    const x = f32(logits!);
    const t = target!.values();
    const [rows, classes] = logits!.shape as [number, number];
    const lse = new Float64Array(rows);
    const losses = new Float32Array(rows);
    const onTarget = 1 - eps;
    const uniform = eps / classes;
    let total = 0;
    let counted = 0;
    for (let r = 0, base = 0; r < rows; r++, base += classes) {
      const label = t[r]!;
      if (label === ignoreIndex) continue;
      let m = -Infinity;
      for (let c = base; c < base + classes; c++) if (x[c]! > m) m = x[c]!;
      let s = 0;
      let rowSum = 0;
      for (let c = base; c < base + classes; c++) {
        s += Math.exp(x[c]! - m);
        rowSum += x[c]!;
      }
      const l = m + Math.log(s);
      lse[r] = l;
      const loss = eps === 0 ? l - x[base + label]! : l - onTarget * x[base + label]! - uniform * rowSum;
      losses[r] = loss;
      total += loss;
      counted++;
    }
    saved.lse = lse;
    saved.counted = counted;
    if (reduction === 'none') return make(losses, [rows]);
    return make(Float32Array.of(reduction === 'mean' ? total / counted : total), []);
  },
});

registerGradient<CrossEntropyAttrs>('SoftmaxCrossEntropyLoss', ({ inputs: [logits, target], attrs, saved }, [g]) => {
  if (!logits!.requiresGrad) return [null, null];
  const { labelSmoothing: eps, reduction, ignoreIndex } = attrs;
  const x = f32(logits!);
  const t = target!.values();
  const gv = f32(g!);
  const lse = saved.lse as Float64Array;
  const [rows, classes] = logits!.shape as [number, number];
  const dx = new Float32Array(x.length);
  const uniform = eps / classes;
  const scale = reduction === 'mean' ? gv[0]! / (saved.counted as number) : gv[0]!;
  for (let r = 0, base = 0; r < rows; r++, base += classes) {
    const label = t[r]!;
    if (label === ignoreIndex) continue;
    const gr = reduction === 'none' ? gv[r]! : scale;
    const l = lse[r]!;
    for (let c = base; c < base + classes; c++) dx[c] = gr * (Math.exp(x[c]! - l) - uniform);
    dx[base + label]! -= gr * (1 - eps);
  }
  return [make(dx, logits!.shape), null];
});

const REDUCTIONS: readonly Reduction[] = ['mean', 'sum', 'none'];

function checkReduction(reduction: unknown, op: string): Reduction {
  if (!REDUCTIONS.includes(reduction as Reduction)) {
    throw new InvalidArgumentError(
      `${op}: reduction must be one of ${REDUCTIONS.join(', ')}, got '${String(reduction)}'`,
    );
  }
  return reduction as Reduction;
}

/**
 * Softmax cross-entropy of `logits` [N, C] against class indices `target` [N] (an integer
 * tensor), fused into one op: log-softmax and the negative log-likelihood in a single pass,
 * with gradient softmax − (smoothed) one-hot.
 */
export function crossEntropy(logits: Tensor, target: Tensor, options: CrossEntropyOptions = {}): Tensor {
  requireFloat(logits, 'crossEntropy', 'logits');
  const labelSmoothing = options.labelSmoothing ?? 0;
  const reduction = checkReduction(options.reduction ?? 'mean', 'crossEntropy');
  const ignoreIndex = options.ignoreIndex ?? null;
  if (logits.ndim !== 2) {
    throw new ShapeError(
      `crossEntropy: logits must be [N, C], got [${logits.shape.join(', ')}]; reshape extra dimensions into N`,
    );
  }
  if (target.dtype === 'float32' || target.dtype === 'bool') {
    throw new DTypeError(
      `crossEntropy: target must hold class indices as an integer tensor (int32), got ${target.dtype}`,
    );
  }
  const [rows, classes] = logits.shape as [number, number];
  if (target.ndim !== 1 || target.shape[0] !== rows) {
    throw new ShapeError(
      `crossEntropy: target must be [${rows}] to match logits [${rows}, ${classes}], got [${target.shape.join(', ')}]`,
    );
  }
  if (!(labelSmoothing >= 0 && labelSmoothing <= 1)) {
    throw new InvalidArgumentError(`crossEntropy: labelSmoothing must be in [0, 1], got ${labelSmoothing}`);
  }
  const t = target.values();
  for (let i = 0; i < t.length; i++) {
    const v = t[i]!;
    if ((v < 0 || v >= classes) && v !== ignoreIndex) {
      throw new InvalidArgumentError(
        `crossEntropy: target[${i}] = ${v} is out of range for ${classes} classes; class indices must be in [0, ${classes - 1}]` +
          (ignoreIndex === null ? ' (pass ignoreIndex to skip padding rows)' : ''),
      );
    }
  }
  return run1<CrossEntropyAttrs>('SoftmaxCrossEntropyLoss', [logits, target], {
    labelSmoothing,
    reduction,
    ignoreIndex,
  });
}

function reduce(x: Tensor, reduction: Reduction): Tensor {
  return reduction === 'mean' ? mean(x) : reduction === 'sum' ? sum(x) : x;
}

function checkPair(a: Tensor, b: Tensor, op: string): void {
  requireFloat(a, op, 'input');
  requireFloat(b, op, 'target');
  if (!shapesEqual(a.shape, b.shape)) {
    throw new ShapeError(
      `${op}: input [${a.shape.join(', ')}] and target [${b.shape.join(', ')}] must have the same shape; expand or reshape one first`,
    );
  }
}

/** Mean (or summed, or per-element) squared error. */
export function mseLoss(input: Tensor, target: Tensor, reduction: Reduction = 'mean'): Tensor {
  checkReduction(reduction, 'mseLoss');
  checkPair(input, target, 'mseLoss');
  const d = sub(input, target);
  return reduce(d.mul(d), reduction);
}

/** Mean (or summed, or per-element) absolute error. */
export function l1Loss(input: Tensor, target: Tensor, reduction: Reduction = 'mean'): Tensor {
  checkReduction(reduction, 'l1Loss');
  checkPair(input, target, 'l1Loss');
  return reduce(abs(sub(input, target)), reduction);
}

declare module '../tensor.js' {
  interface Tensor {
    crossEntropy(target: Tensor, options?: CrossEntropyOptions): Tensor;
    mseLoss(target: Tensor, reduction?: Reduction): Tensor;
    l1Loss(target: Tensor, reduction?: Reduction): Tensor;
  }
}

const P = Tensor.prototype;
P.crossEntropy = function (target, options) {
  return crossEntropy(this, target, options);
};
P.mseLoss = function (target, reduction) {
  return mseLoss(this, target, reduction);
};
P.l1Loss = function (target, reduction) {
  return l1Loss(this, target, reduction);
};
