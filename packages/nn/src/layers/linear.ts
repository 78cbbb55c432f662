import { type Generator, linear, type Tensor, zeros } from '@qtk/tensor';
import { z } from 'zod';
import { resetLinearLike } from '../init.js';
import { Module } from '../module.js';
import { generatorSchema, nonNegativeInt, parseOptions } from '../options.js';
import { Parameter } from '../parameter.js';

export interface LinearOptions {
  bias?: boolean;
  /** Generator for the initial weights (default: the shared default generator). */
  generator?: Generator;
}

const schema = z
  .object({
    inFeatures: nonNegativeInt,
    outFeatures: nonNegativeInt,
    bias: z.boolean().default(true),
    generator: generatorSchema,
  })
  .strict();

/** y = x·Wᵀ + b with W of shape [outFeatures, inFeatures]. */
export class Linear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  weight: Parameter;
  bias: Parameter | null;

  constructor(inFeatures: number, outFeatures: number, options: LinearOptions = {}) {
    super();
    const o = parseOptions('Linear', schema, { inFeatures, outFeatures, ...options });
    this.inFeatures = o.inFeatures;
    this.outFeatures = o.outFeatures;
    this.weight = new Parameter(zeros([o.outFeatures, o.inFeatures]));
    this.bias = o.bias ? new Parameter(zeros([o.outFeatures])) : null;
    resetLinearLike(this.weight, this.bias, o.generator);
  }

  forward(x: Tensor): Tensor {
    return linear(x, this.weight, this.bias);
  }

  override extraRepr(): string {
    return `inFeatures=${this.inFeatures}, outFeatures=${this.outFeatures}, bias=${this.bias !== null}`;
  }
}
