import type { Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { Module } from './module.js';
import { parseOptions } from './options.js';

export interface QuantStubOptions {
  /** A fixed quantization scale for the model input (used instead of an observed one when preparing). */
  scale?: number;
}

const schema = z.object({ scale: z.number().positive().finite().optional() }).strict();

/** Marks where a model's float input becomes quantized; the identity until the model is prepared. */
export class QuantStub extends Module {
  readonly scale: number | null;

  constructor(options: QuantStubOptions = {}) {
    super();
    this.scale = parseOptions('QuantStub', schema, options).scale ?? null;
  }

  forward(x: Tensor): Tensor {
    return x;
  }

  override extraRepr(): string {
    return this.scale === null ? '' : `scale=${this.scale}`;
  }
}

/** Marks where a quantized value goes back to float; the identity until the model is prepared. */
export class DeQuantStub extends Module {
  forward(x: Tensor): Tensor {
    return x;
  }
}
