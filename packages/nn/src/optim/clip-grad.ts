// Gradient clipping with PyTorch's semantics (torch.nn.utils.clip_grad_norm_ / clip_grad_value_),
// called between backward() and optimizer.step().
import { InvalidArgumentError, QtkError, Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { parseOptions } from '../options.js';

/** The total gradient norm is NaN or infinite and `errorIfNonfinite` was set. */
export class NonfiniteGradientError extends QtkError {
  static readonly code = 'E_NONFINITE_GRADIENT';
  readonly totalNorm: number;
  readonly normType: number;
  /** Indices (in the order given) of the parameters whose gradient holds a NaN or an infinity. */
  readonly parameters: readonly number[];
  constructor(totalNorm: number, normType: number, parameters: readonly number[]) {
    super(
      'E_NONFINITE_GRADIENT',
      `clipGradNorm: the total ${normType} norm of the gradients is ${totalNorm}` +
        (parameters.length ? ` (non-finite values in the gradients of parameters ${parameters.join(', ')})` : '') +
        '; check the data and labels for NaN/inf, lower the learning rate or add a warmup, or pass { errorIfNonfinite: false } to clip anyway',
    );
    this.totalNorm = totalNorm;
    this.normType = normType;
    this.parameters = parameters;
  }
}

export interface ClipGradNormOptions {
  /** Throw a NonfiniteGradientError when the total norm is NaN or infinite (default false, as in PyTorch). */
  errorIfNonfinite?: boolean;
}

const optionsSchema = z.object({ errorIfNonfinite: z.boolean().default(false) }).strict();

function listParams(who: string, parameters: Tensor | Iterable<Tensor>): Tensor[] {
  const list = parameters instanceof Tensor ? [parameters] : [...parameters];
  list.forEach((p, i) => {
    if (!(p instanceof Tensor)) throw new InvalidArgumentError(`${who}: parameters[${i}] is not a Tensor`);
  });
  return list;
}

/** The gradient's values as float64, checked against the parameter's size. */
function gradValues(who: string, p: Tensor, i: number): Float64Array {
  const g = p.grad!;
  if (g.size !== p.size) {
    throw new InvalidArgumentError(
      `${who}: the gradient of parameters[${i}] is [${g.shape.join(', ')}], the parameter [${p.shape.join(', ')}]`,
    );
  }
  return Float64Array.from(g.values() as ArrayLike<number>);
}

/**
 * Gradients are replaced, not written in place: QTK's autograd may hand the same gradient tensor to
 * two parameters (an add's backward), and scaling shared storage twice would be wrong.
 */
function setGrad(p: Tensor, values: Float64Array): void {
  p.grad = new Tensor({ data: Float32Array.from(values), shape: [...p.grad!.shape], dtype: 'float32' });
}

function vectorNorm(v: Float64Array, p: number): number {
  let acc = 0;
  if (p === Infinity) {
    // Math.max returns NaN once any entry is NaN, as PyTorch's max does
    for (let i = 0; i < v.length; i++) acc = Math.max(acc, Math.abs(v[i]!));
    return acc;
  }
  for (let i = 0; i < v.length; i++) acc += Math.abs(v[i]!) ** p;
  return acc ** (1 / p);
}

/**
 * Scales the gradients of `parameters` so that their total `normType`-norm (the norm of the vector
 * of every gradient's norm, i.e. of all gradient entries together) is at most `maxNorm`: each
 * gradient is multiplied by `maxNorm / (total + 1e-6)` when that is below 1. Parameters without a
 * gradient are skipped. Returns the total norm before clipping. `normType` is a positive number or
 * Infinity (the largest absolute entry). A NaN or infinite total scales every gradient to NaN or 0,
 * as in PyTorch, unless `errorIfNonfinite` asks for a NonfiniteGradientError instead.
 */
export function clipGradNorm(
  parameters: Tensor | Iterable<Tensor>,
  maxNorm: number,
  normType = 2,
  options: ClipGradNormOptions = {},
): number {
  const who = 'clipGradNorm';
  if (typeof maxNorm !== 'number' || !(maxNorm >= 0))
    throw new InvalidArgumentError(`${who}: maxNorm must be a number >= 0, got ${String(maxNorm)}`);
  if (typeof normType !== 'number' || !(normType > 0)) {
    throw new InvalidArgumentError(`${who}: normType must be a positive number or Infinity, got ${String(normType)}`);
  }
  const { errorIfNonfinite } = parseOptions(who, optionsSchema, options);
  const withGrad = listParams(who, parameters)
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => p.grad !== null);
  if (withGrad.length === 0) return 0;
  const values = withGrad.map(({ p, i }) => gradValues(who, p, i));
  const norms = Float64Array.from(values, (v) => vectorNorm(v, normType));
  const total = vectorNorm(norms, normType);
  if (!Number.isFinite(total) && errorIfNonfinite) {
    const bad = withGrad.filter((_, k) => values[k]!.some((x) => !Number.isFinite(x))).map(({ i }) => i);
    throw new NonfiniteGradientError(total, normType, bad);
  }
  const coef = maxNorm / (total + 1e-6);
  // NaN < 1 is false: a NaN total must still scale (to NaN), as PyTorch's clamp(max=1) keeps NaN
  if (coef < 1 || Number.isNaN(coef)) {
    withGrad.forEach(({ p }, k) => {
      const v = values[k]!;
      for (let j = 0; j < v.length; j++) v[j] = v[j]! * coef;
      setGrad(p, v);
    });
  }
  return total;
}

/** Clamps every gradient entry of `parameters` to [−clipValue, clipValue]; parameters without a gradient are skipped. */
export function clipGradValue(parameters: Tensor | Iterable<Tensor>, clipValue: number): void {
  const who = 'clipGradValue';
  if (typeof clipValue !== 'number' || !(clipValue >= 0))
    throw new InvalidArgumentError(`${who}: clipValue must be a number >= 0, got ${String(clipValue)}`);
  listParams(who, parameters).forEach((p, i) => {
    if (!p.grad) return;
    const v = gradValues(who, p, i);
    for (let j = 0; j < v.length; j++) v[j] = Math.min(clipValue, Math.max(-clipValue, v[j]!));
    setGrad(p, v);
  });
}
