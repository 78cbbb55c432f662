import { adaptiveAvgPool2d, avgPool2d, maxPool2d, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { Module } from '../module.js';
import { expand, intOrTuple, parseOptions, positiveInt } from '../options.js';

type IntOrPair = number | readonly number[];

export interface MaxPool2dLayerOptions {
  /** Defaults to the kernel size. */
  stride?: IntOrPair;
  padding?: IntOrPair;
  dilation?: IntOrPair;
  ceilMode?: boolean;
}

/** The window options both pooling layers take; the stride defaults to the kernel size. */
const poolWindowFields = {
  kernelSize: intOrTuple(2, 1),
  stride: intOrTuple(2, 1).optional(),
  padding: intOrTuple(2, 0).default(0),
};

export class MaxPool2d extends Module {
  readonly kernelSize: number[];
  readonly stride: number[];
  readonly padding: number[];
  readonly dilation: number[];
  readonly ceilMode: boolean;

  constructor(kernelSize: IntOrPair, options: MaxPool2dLayerOptions = {}) {
    super();
    const o = parseOptions(
      'MaxPool2d',
      z
        .object({
          ...poolWindowFields,
          dilation: intOrTuple(2, 1).default(1),
          ceilMode: z.boolean().default(false),
        })
        .strict()
        .refine((v) => expand(v.padding, 2).every((p, i) => p <= expand(v.kernelSize, 2)[i]! / 2), {
          message: 'padding must be at most half the kernel size',
          path: ['padding'],
        }),
      { kernelSize, ...options },
    );
    this.kernelSize = expand(o.kernelSize, 2);
    this.stride = expand(o.stride ?? o.kernelSize, 2);
    this.padding = expand(o.padding, 2);
    this.dilation = expand(o.dilation, 2);
    this.ceilMode = o.ceilMode;
  }

  forward(x: Tensor): Tensor {
    return maxPool2d(x, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      ceilMode: this.ceilMode,
    });
  }

  override extraRepr(): string {
    return `kernelSize=[${this.kernelSize}], stride=[${this.stride}], padding=[${this.padding}]`;
  }
}

export interface AvgPool2dLayerOptions {
  stride?: IntOrPair;
  padding?: IntOrPair;
  ceilMode?: boolean;
  /** Count padded zeros in the divisor (default true, as PyTorch). */
  countIncludePad?: boolean;
  divisorOverride?: number;
}

export class AvgPool2d extends Module {
  readonly kernelSize: number[];
  readonly stride: number[];
  readonly padding: number[];
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;
  readonly divisorOverride: number | undefined;

  constructor(kernelSize: IntOrPair, options: AvgPool2dLayerOptions = {}) {
    super();
    const o = parseOptions(
      'AvgPool2d',
      z
        .object({
          ...poolWindowFields,
          ceilMode: z.boolean().default(false),
          countIncludePad: z.boolean().default(true),
          divisorOverride: positiveInt.optional(),
        })
        .strict(),
      { kernelSize, ...options },
    );
    this.kernelSize = expand(o.kernelSize, 2);
    this.stride = expand(o.stride ?? o.kernelSize, 2);
    this.padding = expand(o.padding, 2);
    this.ceilMode = o.ceilMode;
    this.countIncludePad = o.countIncludePad;
    this.divisorOverride = o.divisorOverride;
  }

  forward(x: Tensor): Tensor {
    return avgPool2d(x, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      ceilMode: this.ceilMode,
      countIncludePad: this.countIncludePad,
      divisorOverride: this.divisorOverride,
    });
  }

  override extraRepr(): string {
    return `kernelSize=[${this.kernelSize}], stride=[${this.stride}], padding=[${this.padding}]`;
  }
}

/** Average pooling to a fixed [H, W] (one number for both; null keeps that input dim). */
export class AdaptiveAvgPool2d extends Module {
  readonly outputSize: number | (number | null)[];

  constructor(outputSize: number | readonly (number | null)[]) {
    super();
    this.outputSize = parseOptions(
      'AdaptiveAvgPool2d',
      z.object({ outputSize: z.union([positiveInt, z.array(positiveInt.nullable()).length(2)]) }).strict(),
      { outputSize },
    ).outputSize;
  }

  forward(x: Tensor): Tensor {
    return adaptiveAvgPool2d(x, this.outputSize);
  }

  override extraRepr(): string {
    return `outputSize=${JSON.stringify(this.outputSize)}`;
  }
}
