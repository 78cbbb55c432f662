import { flatten, InvalidArgumentError, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { Module } from '../module.js';
import { parseOptions } from '../options.js';

/** Returns its input unchanged (a placeholder that keeps module names stable). */
export class Identity extends Module {
  forward(x: Tensor): Tensor {
    return x;
  }
}

export interface FlattenOptions {
  startDim?: number;
  endDim?: number;
}

const flattenSchema = z
  .object({ startDim: z.number().int().default(1), endDim: z.number().int().default(-1) })
  .strict();

export class Flatten extends Module {
  readonly startDim: number;
  readonly endDim: number;

  constructor(options: FlattenOptions = {}) {
    super();
    const o = parseOptions('Flatten', flattenSchema, options);
    this.startDim = o.startDim;
    this.endDim = o.endDim;
  }

  forward(x: Tensor): Tensor {
    return flatten(x, this.startDim, this.endDim);
  }

  override extraRepr(): string {
    return `startDim=${this.startDim}, endDim=${this.endDim}`;
  }
}

/** Wraps a function as a module (handy in Sequential). */
export class Lambda extends Module {
  constructor(
    private readonly fn: (x: Tensor) => Tensor,
    readonly label = 'Lambda',
  ) {
    super();
    if (typeof fn !== 'function') throw new InvalidArgumentError('Lambda: expected a function');
  }

  forward(x: Tensor): Tensor {
    return this.fn(x);
  }
}
