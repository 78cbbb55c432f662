import {
  conv1d,
  conv2d,
  conv3d,
  convTranspose1d,
  convTranspose2d,
  convWithEpilogue,
  type ConvEpilogue,
  type Generator,
  type Tensor,
  zeros,
} from '@qtk/tensor';
import { z } from 'zod';
import { resetLinearLike } from '../init.js';
import { Module } from '../module.js';
import { expand, generatorSchema, intOrTuple, parseOptions, positiveInt } from '../options.js';
import { Parameter } from '../parameter.js';

type IntOrTuple = number | readonly number[];

export interface ConvLayerOptions {
  stride?: IntOrTuple;
  /** Zero padding per side; 'same' keeps the spatial size (stride 1), 'valid' is none. */
  padding?: IntOrTuple | 'same' | 'valid';
  dilation?: IntOrTuple;
  groups?: number;
  bias?: boolean;
  /** Only zero padding is supported. */
  paddingMode?: 'zeros';
  generator?: Generator;
}

export interface ConvTransposeLayerOptions {
  stride?: IntOrTuple;
  padding?: IntOrTuple;
  outputPadding?: IntOrTuple;
  dilation?: IntOrTuple;
  groups?: number;
  bias?: boolean;
  generator?: Generator;
}

/** What every conv layer's constructor takes after its name and rank: `new Conv2d(3, 8, 3, { padding: 1 })`. */
type ConvLayerArgs = [inChannels: number, outChannels: number, kernelSize: IntOrTuple, options?: ConvLayerOptions];
type ConvTransposeLayerArgs = [
  inChannels: number,
  outChannels: number,
  kernelSize: IntOrTuple,
  options?: ConvTransposeLayerOptions,
];

function baseShape(rank: number) {
  return {
    inChannels: positiveInt,
    outChannels: positiveInt,
    kernelSize: intOrTuple(rank, 1),
    stride: intOrTuple(rank, 1).default(1),
    dilation: intOrTuple(rank, 1).default(1),
    groups: positiveInt.default(1),
    bias: z.boolean().default(true),
    generator: generatorSchema,
  };
}

function groupsDivide(o: { inChannels: number; outChannels: number; groups: number }, ctx: z.RefinementCtx): void {
  for (const key of ['inChannels', 'outChannels'] as const) {
    if (o[key] % o.groups !== 0) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `${key} (${o[key]}) must be divisible by groups (${o.groups})`,
        path: ['groups'],
      });
    }
  }
}

function convSchema(rank: number) {
  return z
    .object({
      ...baseShape(rank),
      padding: z.union([intOrTuple(rank, 0), z.enum(['same', 'valid'])]).default(0),
      paddingMode: z.literal('zeros').default('zeros'),
    })
    .strict()
    .superRefine(groupsDivide)
    .refine((o) => !(o.padding === 'same' && expand(o.stride, rank).some((s) => s !== 1)), {
      message: "padding 'same' needs stride 1",
      path: ['padding'],
    });
}

function convTransposeSchema(rank: number) {
  return z
    .object({
      ...baseShape(rank),
      padding: intOrTuple(rank, 0).default(0),
      outputPadding: intOrTuple(rank, 0).default(0),
    })
    .strict()
    .superRefine(groupsDivide);
}

/**
 * What conv and transposed conv layers share: channels, kernel, stride, dilation, groups, and a weight and bias
 * with PyTorch's initialisation. The weight is [out, in/groups, ...kernel], transposed [in, out/groups, ...kernel].
 */
abstract class ConvLayerBase extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: number[];
  readonly stride: number[];
  readonly dilation: number[];
  readonly groups: number;
  weight: Parameter;
  bias: Parameter | null;

  protected constructor(
    o: {
      inChannels: number;
      outChannels: number;
      kernelSize: IntOrTuple;
      stride: IntOrTuple;
      dilation: IntOrTuple;
      groups: number;
      bias: boolean;
      generator?: Generator | undefined;
    },
    rank: number,
    transposed: boolean,
  ) {
    super();
    this.inChannels = o.inChannels;
    this.outChannels = o.outChannels;
    this.kernelSize = expand(o.kernelSize, rank);
    this.stride = expand(o.stride, rank);
    this.dilation = expand(o.dilation, rank);
    this.groups = o.groups;
    const [lead, grouped] = transposed ? [o.inChannels, o.outChannels] : [o.outChannels, o.inChannels];
    this.weight = new Parameter(zeros([lead, grouped / o.groups, ...this.kernelSize]));
    this.bias = o.bias ? new Parameter(zeros([o.outChannels])) : null;
    resetLinearLike(this.weight, this.bias, o.generator);
  }
}

/** Shared body of Conv1d/2d/3d: weight [out, in/groups, ...kernel], bias [out]. */
abstract class ConvNd extends ConvLayerBase {
  readonly padding: number[] | 'same' | 'valid';
  readonly paddingMode = 'zeros' as const;

  constructor(name: string, rank: number, ...[inChannels, outChannels, kernelSize, options = {}]: ConvLayerArgs) {
    const o = parseOptions(name, convSchema(rank), { inChannels, outChannels, kernelSize, ...options });
    super(o, rank, false);
    this.padding = typeof o.padding === 'string' ? o.padding : expand(o.padding, rank);
  }

  protected convOptions() {
    return { stride: this.stride, padding: this.padding, dilation: this.dilation, groups: this.groups };
  }

  abstract override forward(x: Tensor): Tensor;

  /**
   * Whether `forwardWithEpilogue` gives what `call(x)` followed by the epilogue would: forward is the
   * class's own convolution (not overridden) and `call` would run nothing else (`isCallPlain`).
   */
  canFuseEpilogue(): boolean {
    return STOCK_CONV_FORWARDS.has(this.forward) && this.isCallPlain();
  }

  /** activation(conv(x) + other) in one op (`convWithEpilogue`), for fused modules. */
  forwardWithEpilogue(x: Tensor, epilogue: ConvEpilogue): Tensor {
    return convWithEpilogue(x, this.weight, this.bias, this.convOptions(), epilogue);
  }

  override extraRepr(): string {
    const pad = typeof this.padding === 'string' ? `'${this.padding}'` : `[${this.padding}]`;
    return (
      `${this.inChannels}, ${this.outChannels}, kernelSize=[${this.kernelSize}], stride=[${this.stride}], padding=${pad}` +
      (this.dilation.some((d) => d !== 1) ? `, dilation=[${this.dilation}]` : '') +
      (this.groups !== 1 ? `, groups=${this.groups}` : '') +
      (this.bias ? '' : ', bias=false')
    );
  }
}

export class Conv1d extends ConvNd {
  constructor(...args: ConvLayerArgs) {
    super('Conv1d', 1, ...args);
  }

  forward(x: Tensor): Tensor {
    return conv1d(x, this.weight, this.bias, this.convOptions());
  }
}

export class Conv2d extends ConvNd {
  constructor(...args: ConvLayerArgs) {
    super('Conv2d', 2, ...args);
  }

  forward(x: Tensor): Tensor {
    return conv2d(x, this.weight, this.bias, this.convOptions());
  }
}

export class Conv3d extends ConvNd {
  constructor(...args: ConvLayerArgs) {
    super('Conv3d', 3, ...args);
  }

  forward(x: Tensor): Tensor {
    return conv3d(x, this.weight, this.bias, this.convOptions());
  }
}

/** The forward methods that are exactly conv1d/2d/3d of the layer's parameters and options. */
const STOCK_CONV_FORWARDS = new Set<unknown>([
  Conv1d.prototype.forward,
  Conv2d.prototype.forward,
  Conv3d.prototype.forward,
]);

/** Transposed convolution: weight [in, out/groups, ...kernel] (PyTorch's layout and initialisation). */
abstract class ConvTransposeNd extends ConvLayerBase {
  readonly padding: number[];
  readonly outputPadding: number[];

  constructor(
    name: string,
    rank: number,
    ...[inChannels, outChannels, kernelSize, options = {}]: ConvTransposeLayerArgs
  ) {
    const o = parseOptions(name, convTransposeSchema(rank), { inChannels, outChannels, kernelSize, ...options });
    super(o, rank, true);
    this.padding = expand(o.padding, rank);
    this.outputPadding = expand(o.outputPadding, rank);
  }

  protected convOptions() {
    return {
      stride: this.stride,
      padding: this.padding,
      outputPadding: this.outputPadding,
      dilation: this.dilation,
      groups: this.groups,
    };
  }

  abstract override forward(x: Tensor): Tensor;

  override extraRepr(): string {
    return (
      `${this.inChannels}, ${this.outChannels}, kernelSize=[${this.kernelSize}], stride=[${this.stride}], padding=[${this.padding}]` +
      (this.outputPadding.some((p) => p !== 0) ? `, outputPadding=[${this.outputPadding}]` : '') +
      (this.groups !== 1 ? `, groups=${this.groups}` : '') +
      (this.bias ? '' : ', bias=false')
    );
  }
}

export class ConvTranspose1d extends ConvTransposeNd {
  constructor(...args: ConvTransposeLayerArgs) {
    super('ConvTranspose1d', 1, ...args);
  }

  forward(x: Tensor): Tensor {
    return convTranspose1d(x, this.weight, this.bias, this.convOptions());
  }
}

export class ConvTranspose2d extends ConvTransposeNd {
  constructor(...args: ConvTransposeLayerArgs) {
    super('ConvTranspose2d', 2, ...args);
  }

  forward(x: Tensor): Tensor {
    return convTranspose2d(x, this.weight, this.bias, this.convOptions());
  }
}
