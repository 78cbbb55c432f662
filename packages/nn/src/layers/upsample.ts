import { interpolate, type InterpolateMode, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { Module } from '../module.js';
import { parseOptions, positiveInt } from '../options.js';

export interface UpsampleOptions {
  /** Output [H, W] (or one number for both); give this or scaleFactor. */
  size?: number | readonly [number, number];
  scaleFactor?: number | readonly [number, number];
  mode?: InterpolateMode;
  alignCorners?: boolean;
}

const positive = z.number().positive().finite();
const schema = z
  .object({
    size: z.union([positiveInt, z.tuple([positiveInt, positiveInt])]).optional(),
    scaleFactor: z.union([positive, z.tuple([positive, positive])]).optional(),
    mode: z.enum(['nearest', 'bilinear']).default('nearest'),
    alignCorners: z.boolean().optional(),
  })
  .strict()
  .refine((o) => (o.size === undefined) !== (o.scaleFactor === undefined), {
    message: 'give exactly one of size and scaleFactor',
    path: ['size'],
  })
  .refine((o) => o.alignCorners === undefined || o.mode === 'bilinear', {
    message: "alignCorners only applies to mode 'bilinear'",
    path: ['alignCorners'],
  });

/** Resizes [N, C, H, W] inputs (nearest or bilinear), like PyTorch's nn.Upsample. */
export class Upsample extends Module {
  readonly size: number | readonly [number, number] | undefined;
  readonly scaleFactor: number | readonly [number, number] | undefined;
  readonly mode: InterpolateMode;
  readonly alignCorners: boolean | undefined;

  constructor(options: UpsampleOptions) {
    super();
    const o = parseOptions('Upsample', schema, options);
    this.size = o.size;
    this.scaleFactor = o.scaleFactor;
    this.mode = o.mode;
    this.alignCorners = o.alignCorners;
  }

  forward(x: Tensor): Tensor {
    return interpolate(x, {
      size: this.size,
      scaleFactor: this.scaleFactor,
      mode: this.mode,
      alignCorners: this.alignCorners,
    });
  }

  override extraRepr(): string {
    return `${this.size !== undefined ? `size=${JSON.stringify(this.size)}` : `scaleFactor=${JSON.stringify(this.scaleFactor)}`}, mode='${this.mode}'`;
  }
}
