import { defaultGenerator, Generator, mul, type Tensor, tensor } from '@qtk/tensor';
import { z } from 'zod';
import { Module } from '../module.js';
import { generatorSchema, parseOptions } from '../options.js';

export interface DropoutOptions {
  /** Probability of zeroing an element (default 0.5). */
  p?: number;
  /** Seed of a private generator for the masks. */
  seed?: number;
  /** Generator for the masks (default: the shared default generator). */
  generator?: Generator;
}

const schema = z
  .object({ p: z.number().min(0).max(1).default(0.5), seed: z.number().int().optional(), generator: generatorSchema })
  .strict()
  .refine((o) => o.seed === undefined || o.generator === undefined, {
    message: 'pass either seed or generator, not both',
    path: ['seed'],
  });

/** Inverted dropout: `x * mask / (1 - p)` in training, `x` in eval. Gradients flow through the mask. */
export function dropout(x: Tensor, p = 0.5, training = true, generator: Generator = defaultGenerator): Tensor {
  if (!training || p === 0) return x;
  const n = x.size;
  const mask = new Float32Array(n);
  if (p < 1) {
    const keep = 1 / (1 - p);
    for (let i = 0; i < n; i++) mask[i] = generator.uniform() < p ? 0 : keep;
  }
  return mul(x, tensor(mask, x.shape));
}

export class Dropout extends Module {
  readonly p: number;
  readonly generator: Generator;

  constructor(options: DropoutOptions | number = {}) {
    super();
    const o = parseOptions('Dropout', schema, typeof options === 'number' ? { p: options } : options);
    this.p = o.p;
    this.generator = o.generator ?? (o.seed !== undefined ? new Generator(o.seed) : defaultGenerator);
  }

  forward(x: Tensor): Tensor {
    return dropout(x, this.p, this.training, this.generator);
  }

  override extraRepr(): string {
    return `p=${this.p}`;
  }
}
