// The real functions that the marches tabulate (march-semantics.md §1 "Nonlinear functions"),
// evaluated in float64 with the same definitions as the float ops of @qtk/tensor that QAT
// simulates (ops/activations.ts, ops/unary.ts, Pow in ops/binary.ts).
//
// Outside the real domain (log, sqrt, rsqrt, pow with a non-integer exponent at x < 0, and the
// poles of log/rsqrt/reciprocal/negative powers at x = 0) every function takes its limit from the
// right at 0, lim_{t→0+} f(t), so the value is 0 or ±Infinity, never NaN. The table builders
// saturate ±Infinity to the output dtype's max/min, which is what the float op followed by
// saturation gives wherever the float op is not NaN (1/+0 = +∞, log 0 = −∞, rsqrt 0 = +∞).
// See docs/march-numerics.md, "Tables and segment tables".
import { erfc, InvalidArgumentError } from '@qtk/tensor';

/** A real function a table or segment table approximates. */
export interface NonlinearFunction {
  /** The catalogue name with its parameters, e.g. `pow(2)`, `softplus(1,20)`. */
  readonly name: string;
  readonly f: (x: number) => number;
  /** f(−x) = −f(x) exactly: segment tables fit x ≥ 0 and mirror. */
  readonly odd: boolean;
}

function def(name: string, f: (x: number) => number, odd = false): NonlinearFunction {
  return Object.freeze({ name, f, odd });
}

function finiteParam(fn: string, what: string, v: number): void {
  if (!Number.isFinite(v)) throw new InvalidArgumentError(`${fn}: ${what} must be a finite number, got ${v}`);
}

const GELU_K = Math.sqrt(2 / Math.PI);
const GELU_C = 0.044715;

export const sigmoid = def('sigmoid', (x) => {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
});

export const tanh = def('tanh', Math.tanh, true);

export const exp = def('exp', Math.exp);

/** x·sigmoid(x), in the overflow-free form of the float kernel. */
export const silu = def('silu', (x) => {
  if (x >= 0) return x / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return (x * e) / (1 + e);
});

/** erf via the float path's erfc (relative error < 1.2e-7), made exactly odd. */
export const erf = def('erf', (x) => (x >= 0 ? 1 - erfc(x) : erfc(-x) - 1), true);

/** GELU, x·Φ(x) = ½·x·erfc(−x/√2) as the float Gelu kernel, or PyTorch's tanh approximation. */
export function gelu(approximate: 'none' | 'tanh' = 'none'): NonlinearFunction {
  if (approximate === 'tanh')
    return def('gelu(tanh)', (x) => 0.5 * x * (1 + Math.tanh(GELU_K * (x + GELU_C * x * x * x))));
  if (approximate !== 'none')
    throw new InvalidArgumentError(`gelu: approximate must be 'none' or 'tanh', got '${String(approximate)}'`);
  return def('gelu', (x) => 0.5 * x * erfc(-x * Math.SQRT1_2));
}

/** 1/x; odd; 1/0 = +Infinity (the integer input 0 is +0). */
export const reciprocal = def('reciprocal', (x) => (x === 0 ? Infinity : 1 / x), true);

/** √x; 0 for x < 0 (the limit at 0+; the float op gives NaN there). */
export const sqrt = def('sqrt', (x) => (x <= 0 ? 0 : Math.sqrt(x)));

/** 1/√x; +Infinity for x ≤ 0 (the limit at 0+). */
export const rsqrt = def('rsqrt', (x) => (x <= 0 ? Infinity : 1 / Math.sqrt(x)));

/** ln x; −Infinity for x ≤ 0 (the limit at 0+). */
export const log = def('log', (x) => (x <= 0 ? -Infinity : Math.log(x)));

/**
 * x^e as Math.pow (the float Pow kernel). An integer exponent is defined for every x (odd when e is
 * odd; 0^e = +Infinity for e < 0, the limit at 0+). A non-integer exponent at x ≤ 0 takes the limit
 * at 0+: 0 for e > 0, +Infinity for e < 0.
 */
export function pow(exponent: number): NonlinearFunction {
  finiteParam('pow', 'exponent', exponent);
  const e = exponent;
  if (Number.isInteger(e)) {
    const odd = Math.abs(e % 2) === 1;
    return def(`pow(${e})`, (x) => (x === 0 && e < 0 ? Infinity : x ** e), odd);
  }
  return def(`pow(${e})`, (x) => (x <= 0 ? (e > 0 ? 0 : Infinity) : x ** e));
}

export const sin = def('sin', Math.sin, true);
export const cos = def('cos', Math.cos);

/** log(1 + exp(βx))/β, exactly x where βx > threshold (PyTorch's Softplus). */
export function softplus(beta = 1, threshold = 20): NonlinearFunction {
  finiteParam('softplus', 'beta', beta);
  if (beta === 0) throw new InvalidArgumentError('softplus: beta must be non-zero');
  finiteParam('softplus', 'threshold', threshold);
  return def(`softplus(${beta},${threshold})`, (x) =>
    x * beta > threshold ? x : Math.log1p(Math.exp(beta * x)) / beta,
  );
}

/** x for x > 0, α·(eˣ − 1) otherwise. */
export function elu(alpha = 1): NonlinearFunction {
  finiteParam('elu', 'alpha', alpha);
  return def(`elu(${alpha})`, (x) => (x > 0 ? x : alpha * Math.expm1(x)));
}

/** x for x > 0, slope·x otherwise; odd when slope is 1. */
export function leakyRelu(slope = 0.01): NonlinearFunction {
  finiteParam('leakyRelu', 'slope', slope);
  return def(`leaky_relu(${slope})`, (x) => (x > 0 ? x : x * slope), slope === 1);
}

/** PyTorch's hard sigmoid clamp(x/6 + 1/2, 0, 1), as the float HardSigmoid kernel. */
export const hardsigmoid = def('hardsigmoid', (x) => (x <= -3 ? 0 : x >= 3 ? 1 : x / 6 + 0.5));

/**
 * ONNX's HardSigmoid max(0, min(1, alpha·x + beta)) with any alpha / beta (paddle2onnx writes 0.2 and
 * 0.5; PyTorch's 1/6 and 1/2 is `hardsigmoid`), with float32 parameters as the importer computes it.
 */
export function hardSigmoidAffine(alpha: number, beta: number): NonlinearFunction {
  finiteParam('hardSigmoidAffine', 'alpha', alpha);
  finiteParam('hardSigmoidAffine', 'beta', beta);
  const a = Math.fround(alpha);
  const b = Math.fround(beta);
  return def(`hard_sigmoid(${a},${b})`, (x) => Math.min(1, Math.max(0, Math.fround(Math.fround(a * x) + b))));
}

/** x·hardsigmoid(x), as the float HardSwish kernel. */
export const hardswish = def('hardswish', (x) => (x <= -3 ? 0 : x >= 3 ? x : (x * (x + 3)) / 6));

/** Every catalogue entry with its default parameters, for tests and listings. */
export const NONLINEAR_FUNCTIONS: readonly NonlinearFunction[] = Object.freeze([
  sigmoid,
  tanh,
  exp,
  silu,
  gelu(),
  gelu('tanh'),
  reciprocal,
  sqrt,
  rsqrt,
  log,
  pow(2),
  sin,
  cos,
  erf,
  softplus(),
  elu(),
  leakyRelu(),
  hardsigmoid,
  hardswish,
]);
