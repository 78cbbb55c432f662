import { batchNorm, layerNorm, ones, ShapeError, type Tensor, zeros } from '@qtk/tensor';
import { z } from 'zod';
import { Module } from '../module.js';
import { parseOptions, positiveInt } from '../options.js';
import { Parameter } from '../parameter.js';

export interface BatchNormLayerOptions {
  eps?: number;
  /** Weight of each new batch in the running stats; null uses a cumulative average (1/numBatchesTracked). */
  momentum?: number | null;
  /** Learnable per-channel scale and shift (default true). */
  affine?: boolean;
  /** Keep running mean/var for evaluation (default true); without them eval uses batch statistics. */
  trackRunningStats?: boolean;
}

const bnSchema = z
  .object({
    numFeatures: positiveInt,
    eps: z.number().positive().default(1e-5),
    momentum: z.number().min(0).max(1).nullable().default(0.1),
    affine: z.boolean().default(true),
    trackRunningStats: z.boolean().default(true),
  })
  .strict();

/**
 * Batch normalisation over channel axis 1, after PyTorch: batch statistics in training (updating
 * the running stats in place and counting `numBatchesTracked`), running stats in eval.
 */
export abstract class BatchNormNd extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: Parameter | null;
  bias: Parameter | null;
  runningMean: Tensor | null;
  runningVar: Tensor | null;
  numBatchesTracked: Tensor | null;

  constructor(
    private readonly layerName: string,
    private readonly validDims: readonly number[],
    numFeatures: number,
    options: BatchNormLayerOptions,
  ) {
    super();
    const o = parseOptions(layerName, bnSchema, { numFeatures, ...options });
    this.numFeatures = o.numFeatures;
    this.eps = o.eps;
    this.momentum = o.momentum;
    this.affine = o.affine;
    this.trackRunningStats = o.trackRunningStats;
    this.weight = o.affine ? new Parameter(ones([o.numFeatures])) : null;
    this.bias = o.affine ? new Parameter(zeros([o.numFeatures])) : null;
    const track = o.trackRunningStats;
    this.runningMean = this.registerBuffer('runningMean', track ? zeros([o.numFeatures]) : null);
    this.runningVar = this.registerBuffer('runningVar', track ? ones([o.numFeatures]) : null);
    this.numBatchesTracked = this.registerBuffer('numBatchesTracked', track ? zeros([], { dtype: 'int32' }) : null);
  }

  /** Running mean 0, var 1, no batches seen. */
  resetRunningStats(): void {
    this.runningMean?.data.fill(0);
    this.runningVar?.data.fill(1);
    this.numBatchesTracked?.data.fill(0);
  }

  forward(x: Tensor): Tensor {
    if (!this.validDims.includes(x.ndim)) {
      throw new ShapeError(
        `${this.layerName}: expected ${this.validDims.join('-d or ')}-d input [N, C${this.validDims[0] === 2 ? '' : ', ...'}], got [${x.shape.join(', ')}]`,
      );
    }
    if (x.shape[1] !== this.numFeatures) {
      throw new ShapeError(
        `${this.layerName}: input has ${x.shape[1]} channels (axis 1), the layer was built for ${this.numFeatures}`,
      );
    }
    let factor = this.momentum ?? 0;
    if (this.training && this.trackRunningStats && this.numBatchesTracked) {
      const n = ++this.numBatchesTracked.data[this.numBatchesTracked.offset]!;
      factor = this.momentum === null ? 1 / n : this.momentum;
    }
    const useBatchStats = this.training || this.runningMean === null;
    const updateStats = !this.training || this.trackRunningStats;
    return batchNorm(
      x,
      updateStats ? this.runningMean : null,
      updateStats ? this.runningVar : null,
      this.weight,
      this.bias,
      {
        training: useBatchStats,
        momentum: factor,
        eps: this.eps,
      },
    );
  }

  override extraRepr(): string {
    return `${this.numFeatures}, eps=${this.eps}, momentum=${this.momentum}, affine=${this.affine}, trackRunningStats=${this.trackRunningStats}`;
  }
}

/** BatchNorm over [N, C] or [N, C, L]. */
export class BatchNorm1d extends BatchNormNd {
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('BatchNorm1d', [2, 3], numFeatures, options);
  }
}

/** BatchNorm over [N, C, H, W]. */
export class BatchNorm2d extends BatchNormNd {
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('BatchNorm2d', [4], numFeatures, options);
  }
}

/** BatchNorm over [N, C, D, H, W]. */
export class BatchNorm3d extends BatchNormNd {
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('BatchNorm3d', [5], numFeatures, options);
  }
}

export interface LayerNormOptions {
  eps?: number;
  /** Learnable elementwise scale (and shift, unless bias is false); default true. */
  elementwiseAffine?: boolean;
  bias?: boolean;
}

/** Normalises over the trailing `normalizedShape` dims of each sample. */
export class LayerNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number;
  readonly elementwiseAffine: boolean;
  weight: Parameter | null;
  bias: Parameter | null;

  constructor(normalizedShape: number | readonly number[], options: LayerNormOptions = {}) {
    super();
    const o = parseOptions(
      'LayerNorm',
      z
        .object({
          normalizedShape: z.union([positiveInt, z.array(positiveInt).min(1)]),
          eps: z.number().positive().default(1e-5),
          elementwiseAffine: z.boolean().default(true),
          bias: z.boolean().default(true),
        })
        .strict(),
      { normalizedShape, ...options },
    );
    this.normalizedShape = typeof o.normalizedShape === 'number' ? [o.normalizedShape] : o.normalizedShape;
    this.eps = o.eps;
    this.elementwiseAffine = o.elementwiseAffine;
    this.weight = o.elementwiseAffine ? new Parameter(ones(this.normalizedShape)) : null;
    this.bias = o.elementwiseAffine && o.bias ? new Parameter(zeros(this.normalizedShape)) : null;
  }

  forward(x: Tensor): Tensor {
    return layerNorm(x, this.normalizedShape, this.weight, this.bias, this.eps);
  }

  override extraRepr(): string {
    return `[${this.normalizedShape}], eps=${this.eps}, elementwiseAffine=${this.elementwiseAffine}`;
  }
}
