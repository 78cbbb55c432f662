import { crossEntropy, l1Loss, mseLoss, type Reduction, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { Module } from './module.js';
import { parseOptions } from './options.js';

const reduction = z.enum(['mean', 'sum', 'none']).default('mean');

export interface CrossEntropyLossOptions {
  /** ε in [0, 1]: targets become (1 − ε)·onehot + ε/C. */
  labelSmoothing?: number;
  reduction?: Reduction;
  ignoreIndex?: number;
}

/** Softmax cross-entropy of logits [N, C] against int32 class indices [N] (fused op). */
export class CrossEntropyLoss extends Module {
  readonly labelSmoothing: number;
  readonly reduction: Reduction;
  readonly ignoreIndex: number | undefined;

  constructor(options: CrossEntropyLossOptions = {}) {
    super();
    const o = parseOptions(
      'CrossEntropyLoss',
      z
        .object({
          labelSmoothing: z.number().min(0).max(1).default(0),
          reduction,
          ignoreIndex: z.number().int().optional(),
        })
        .strict(),
      options,
    );
    this.labelSmoothing = o.labelSmoothing;
    this.reduction = o.reduction;
    this.ignoreIndex = o.ignoreIndex;
  }

  forward(logits: Tensor, target: Tensor): Tensor {
    return crossEntropy(logits, target, {
      labelSmoothing: this.labelSmoothing,
      reduction: this.reduction,
      ignoreIndex: this.ignoreIndex,
    });
  }

  override extraRepr(): string {
    return `labelSmoothing=${this.labelSmoothing}, reduction='${this.reduction}'`;
  }
}

export interface ReductionOptions {
  reduction?: Reduction;
}

const reductionSchema = z.object({ reduction }).strict();

/** An elementwise loss whose one option is its reduction; `name` names it in option errors. */
abstract class ReducedLoss extends Module {
  readonly reduction: Reduction;
  constructor(name: string, options: ReductionOptions) {
    super();
    this.reduction = parseOptions(name, reductionSchema, options).reduction;
  }
  abstract override forward(input: Tensor, target: Tensor): Tensor;
}

export class MSELoss extends ReducedLoss {
  constructor(options: ReductionOptions = {}) {
    super('MSELoss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return mseLoss(input, target, this.reduction);
  }
}

export class L1Loss extends ReducedLoss {
  constructor(options: ReductionOptions = {}) {
    super('L1Loss', options);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return l1Loss(input, target, this.reduction);
  }
}
