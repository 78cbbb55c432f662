import { add, cat, div, InvalidArgumentError, matmul, mean, mul, sum, sub, type Tensor } from '@qtk/tensor';
import { currentForwardPass, Module } from './module.js';

/**
 * Float stand-ins for tensor arithmetic as a module, so quantization can later swap each instance
 * for a quantized one with its own output observer. One instance should serve one call site:
 * `callsInForward` counts uses within the current top-level forward pass, and `maxCallsPerForward`
 * keeps the largest count seen, so a later pass can warn when an instance is shared.
 */
export class FloatFunctional extends Module {
  callsInForward = 0;
  maxCallsPerForward = 0;
  /** Op names used by this instance, in first-use order. */
  readonly opsUsed: string[] = [];
  private lastPass = -1;

  forward(): never {
    throw new InvalidArgumentError('FloatFunctional is not meant to be called; use its methods (add, mul, cat, ...)');
  }

  private count(op: string): void {
    const pass = currentForwardPass();
    if (pass !== this.lastPass) {
      this.lastPass = pass;
      this.callsInForward = 0;
    }
    this.callsInForward++;
    if (this.callsInForward > this.maxCallsPerForward) this.maxCallsPerForward = this.callsInForward;
    if (!this.opsUsed.includes(op)) this.opsUsed.push(op);
  }

  add(a: Tensor, b: Tensor | number): Tensor {
    this.count('add');
    return add(a, b);
  }

  sub(a: Tensor, b: Tensor): Tensor {
    this.count('sub');
    return sub(a, b);
  }

  mul(a: Tensor, b: Tensor | number): Tensor {
    this.count('mul');
    return mul(a, b);
  }

  div(a: Tensor, b: Tensor): Tensor {
    this.count('div');
    return div(a, b);
  }

  addScalar(a: Tensor, b: number): Tensor {
    this.count('addScalar');
    return add(a, b);
  }

  mulScalar(a: Tensor, b: number): Tensor {
    this.count('mulScalar');
    return mul(a, b);
  }

  matmul(a: Tensor, b: Tensor): Tensor {
    this.count('matmul');
    return matmul(a, b);
  }

  cat(tensors: Tensor[], axis = 0): Tensor {
    this.count('cat');
    return cat(tensors, axis);
  }

  sum(x: Tensor, axes?: number | readonly number[], keepdim = false): Tensor {
    this.count('sum');
    return sum(x, axes, keepdim);
  }

  mean(x: Tensor, axes?: number | readonly number[], keepdim = false): Tensor {
    this.count('mean');
    return mean(x, axes, keepdim);
  }
}
