import { InvalidArgumentError, reshape, ShapeError, type Tensor } from '@qtk/tensor';
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

const flattenSchema = z.object({ startDim: z.number().int().default(1), endDim: z.number().int().default(-1) }).strict();

/** Merges dimensions startDim..endDim into one (default: everything but the batch dimension). */
export function flattenDims(x: Tensor, startDim = 0, endDim = -1): Tensor {
  const nd = Math.max(x.ndim, 1);
  const s = startDim < 0 ? startDim + nd : startDim;
  const e = endDim < 0 ? endDim + nd : endDim;
  if (s < 0 || e >= nd || s > e) {
    throw new ShapeError(`flatten: dims ${startDim}..${endDim} are invalid for a ${x.ndim}-d input [${x.shape.join(', ')}]`);
  }
  if (x.ndim === 0) return reshape(x, [1]);
  let merged = 1;
  for (let i = s; i <= e; i++) merged *= x.shape[i]!;
  return reshape(x, [...x.shape.slice(0, s), merged, ...x.shape.slice(e + 1)]);
}

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
    return flattenDims(x, this.startDim, this.endDim);
  }

  override extraRepr(): string {
    return `startDim=${this.startDim}, endDim=${this.endDim}`;
  }
}

/** Wraps a function as a module (handy in Sequential). */
export class Lambda extends Module {
  constructor(private readonly fn: (x: Tensor) => Tensor, readonly label = 'Lambda') {
    super();
    if (typeof fn !== 'function') throw new InvalidArgumentError('Lambda: expected a function');
  }

  forward(x: Tensor): Tensor {
    return this.fn(x);
  }
}
