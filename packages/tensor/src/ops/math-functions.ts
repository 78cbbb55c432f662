// Elementwise functions that imported models use outside of activations: erf (the decomposed GELU
// of PyTorch's exports), sin / cos (position encodings), ceil, and the boolean ops of mask arithmetic.
import { broadcastBinary } from './binary.js';
import { erfc } from './activations.js';
import { run1 } from '../dispatch.js';
import { DTypeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { Tensor } from '../tensor.js';
import { defineUnary } from './unary.js';
import { make } from './util.js';

const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);

/** The error function; exactly odd, relative error below 1.2e-7 (the erfc fit GELU uses). */
export const erf = defineUnary({
  op: 'Erf',
  f: (x) => (x >= 0 ? 1 - erfc(x) : erfc(-x) - 1),
  df: (x) => TWO_OVER_SQRT_PI * Math.exp(-x * x),
});

export const sin = defineUnary({ op: 'Sin', f: Math.sin, df: (x) => Math.cos(x) });
export const cos = defineUnary({ op: 'Cos', f: Math.cos, df: (x) => -Math.sin(x) });
/** Gradient 0. */
export const ceil = defineUnary({ op: 'Ceil', f: Math.ceil, df: () => 0, keepsIntegerDtype: true });

function requireBool(op: string, ...xs: Tensor[]): void {
  for (const x of xs) {
    if (x.dtype !== 'bool') {
      throw new DTypeError(
        `${op}: operands must be bool, got ${x.dtype}; build them with a comparison such as x.gt(0)`,
      );
    }
  }
}

registerKernel<(i: Tensor[]) => Tensor>({
  op: 'Not',
  backend: 'cpu',
  fn: ([x]) => {
    const v = x!.values();
    const out = new Uint8Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = v[i] ? 0 : 1;
    return make(out, x!.shape, 'bool');
  },
});
registerKernel({ op: 'And', backend: 'cpu', fn: ([a, b]) => broadcastBinary(a!, b!, 'bool', (x, y) => +(!!x && !!y)) });
registerKernel({ op: 'Or', backend: 'cpu', fn: ([a, b]) => broadcastBinary(a!, b!, 'bool', (x, y) => +(!!x || !!y)) });
registerKernel({ op: 'Xor', backend: 'cpu', fn: ([a, b]) => broadcastBinary(a!, b!, 'bool', (x, y) => +(!x !== !y)) });

/** Elementwise logical not of a bool tensor. */
export function logicalNot(x: Tensor): Tensor {
  requireBool('logicalNot', x);
  return run1('Not', [x], {});
}

/** Elementwise logical and of two bool tensors (broadcast). */
export function logicalAnd(a: Tensor, b: Tensor): Tensor {
  requireBool('logicalAnd', a, b);
  return run1('And', [a, b], {});
}

/** Elementwise logical or of two bool tensors (broadcast). */
export function logicalOr(a: Tensor, b: Tensor): Tensor {
  requireBool('logicalOr', a, b);
  return run1('Or', [a, b], {});
}

/** Elementwise logical exclusive or of two bool tensors (broadcast). */
export function logicalXor(a: Tensor, b: Tensor): Tensor {
  requireBool('logicalXor', a, b);
  return run1('Xor', [a, b], {});
}

declare module '../tensor.js' {
  interface Tensor {
    erf(): Tensor;
    sin(): Tensor;
    cos(): Tensor;
    ceil(): Tensor;
  }
}

Tensor.prototype.erf = function () {
  return erf(this);
};
Tensor.prototype.sin = function () {
  return sin(this);
};
Tensor.prototype.cos = function () {
  return cos(this);
};
Tensor.prototype.ceil = function () {
  return ceil(this);
};
