import {
  clamp,
  elu,
  full,
  gelu,
  type GeluApproximate,
  hardsigmoid,
  hardswish,
  leakyRelu,
  logSoftmax,
  prelu,
  relu,
  relu6,
  selu,
  sigmoid,
  silu,
  softmax,
  softplus,
  tanh,
  type Tensor,
} from '@qtk/tensor';
import { z } from 'zod';
import { Module } from '../module.js';
import { parseOptions, positiveInt } from '../options.js';
import { Parameter } from '../parameter.js';

/** Options given as an object, or as the one main number (PyTorch's first positional argument). */
function opts<T extends object>(v: T | number | undefined, key: keyof T): Partial<T> {
  return typeof v === 'number' ? ({ [key]: v } as Partial<T>) : (v ?? {});
}

export class ReLU extends Module {
  forward(x: Tensor): Tensor {
    return relu(x);
  }
}

export class ReLU6 extends Module {
  forward(x: Tensor): Tensor {
    return relu6(x);
  }
}

export interface HardtanhOptions {
  minVal?: number;
  maxVal?: number;
}

export class Hardtanh extends Module {
  readonly minVal: number;
  readonly maxVal: number;
  constructor(options: HardtanhOptions = {}) {
    super();
    const o = parseOptions(
      'Hardtanh',
      z
        .object({ minVal: z.number().default(-1), maxVal: z.number().default(1) })
        .strict()
        .refine((v) => v.minVal < v.maxVal, {
          message: 'minVal must be below maxVal',
          path: ['maxVal'],
        }),
      options,
    );
    this.minVal = o.minVal;
    this.maxVal = o.maxVal;
  }
  forward(x: Tensor): Tensor {
    return clamp(x, this.minVal, this.maxVal);
  }
}

export interface LeakyReLUOptions {
  negativeSlope?: number;
}

export class LeakyReLU extends Module {
  readonly negativeSlope: number;
  constructor(options?: LeakyReLUOptions | number) {
    super();
    const o = parseOptions(
      'LeakyReLU',
      z.object({ negativeSlope: z.number().finite().default(0.01) }).strict(),
      opts(options, 'negativeSlope'),
    );
    this.negativeSlope = o.negativeSlope;
  }
  forward(x: Tensor): Tensor {
    return leakyRelu(x, this.negativeSlope);
  }
  override extraRepr(): string {
    return `negativeSlope=${this.negativeSlope}`;
  }
}

export interface PReLUOptions {
  /** 1 (a shared slope) or the number of channels (axis 1). */
  numParameters?: number;
  init?: number;
}

/** LeakyReLU with a learned slope. */
export class PReLU extends Module {
  weight: Parameter;
  constructor(options: PReLUOptions = {}) {
    super();
    const o = parseOptions(
      'PReLU',
      z.object({ numParameters: positiveInt.default(1), init: z.number().finite().default(0.25) }).strict(),
      options,
    );
    this.weight = new Parameter(full([o.numParameters], o.init));
  }
  forward(x: Tensor): Tensor {
    return prelu(x, this.weight);
  }
  override extraRepr(): string {
    return `numParameters=${this.weight.size}`;
  }
}

export class Sigmoid extends Module {
  forward(x: Tensor): Tensor {
    return sigmoid(x);
  }
}

export class Tanh extends Module {
  forward(x: Tensor): Tensor {
    return tanh(x);
  }
}

export class SiLU extends Module {
  forward(x: Tensor): Tensor {
    return silu(x);
  }
}

export interface GELUOptions {
  approximate?: GeluApproximate;
}

export class GELU extends Module {
  readonly approximate: GeluApproximate;
  constructor(options: GELUOptions = {}) {
    super();
    this.approximate = parseOptions(
      'GELU',
      z.object({ approximate: z.enum(['none', 'tanh']).default('none') }).strict(),
      options,
    ).approximate;
  }
  forward(x: Tensor): Tensor {
    return gelu(x, { approximate: this.approximate });
  }
  override extraRepr(): string {
    return `approximate='${this.approximate}'`;
  }
}

export class Hardsigmoid extends Module {
  forward(x: Tensor): Tensor {
    return hardsigmoid(x);
  }
}

export class Hardswish extends Module {
  forward(x: Tensor): Tensor {
    return hardswish(x);
  }
}

export interface ELUOptions {
  alpha?: number;
}

export class ELU extends Module {
  readonly alpha: number;
  constructor(options?: ELUOptions | number) {
    super();
    this.alpha = parseOptions(
      'ELU',
      z.object({ alpha: z.number().finite().default(1) }).strict(),
      opts(options, 'alpha'),
    ).alpha;
  }
  forward(x: Tensor): Tensor {
    return elu(x, this.alpha);
  }
  override extraRepr(): string {
    return `alpha=${this.alpha}`;
  }
}

export class SELU extends Module {
  forward(x: Tensor): Tensor {
    return selu(x);
  }
}

export interface SoftplusOptions {
  beta?: number;
  threshold?: number;
}

export class Softplus extends Module {
  readonly beta: number;
  readonly threshold: number;
  constructor(options: SoftplusOptions = {}) {
    super();
    const o = parseOptions(
      'Softplus',
      z.object({ beta: z.number().positive().default(1), threshold: z.number().default(20) }).strict(),
      options,
    );
    this.beta = o.beta;
    this.threshold = o.threshold;
  }
  forward(x: Tensor): Tensor {
    return softplus(x, this.beta, this.threshold);
  }
  override extraRepr(): string {
    return `beta=${this.beta}, threshold=${this.threshold}`;
  }
}

export interface SoftmaxOptions {
  /** The axis the probabilities sum to one along (default: the last). */
  dim?: number;
}

const dimSchema = z.object({ dim: z.number().int().default(-1) }).strict();

export class Softmax extends Module {
  readonly dim: number;
  constructor(options?: SoftmaxOptions | number) {
    super();
    this.dim = parseOptions('Softmax', dimSchema, opts(options, 'dim')).dim;
  }
  forward(x: Tensor): Tensor {
    return softmax(x, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}

export class LogSoftmax extends Module {
  readonly dim: number;
  constructor(options?: SoftmaxOptions | number) {
    super();
    this.dim = parseOptions('LogSoftmax', dimSchema, opts(options, 'dim')).dim;
  }
  forward(x: Tensor): Tensor {
    return logSoftmax(x, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}
