import { type PostTrainingOptions, quantizePostTraining } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { batchesOf, type Module } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import type { Dataset } from './train.js';
import type { ObserverDType } from '@qtk/spec';

export interface PtqOptions {
  /** Registered march id ('bayes', 'bernoulli2', ...). */
  march: string;
  /** Calibration inputs, one tensor per batch. */
  calibration: readonly Tensor[];
  /** Activation observer (default 'mse', the demo's); weights use min-max per channel. */
  observer?: string;
  /** Name of the last Linear, kept as a high-precision output (default 'fc'). */
  outputModule?: string;
  /** Activation dtype of named modules (moduleName entries with the same observers), e.g. int16 layers on bayes. */
  dtypes?: Readonly<Record<string, ObserverDType>>;
  /** More prepare options (hybrid mode and its hybridDict, passes, ...). */
  prepare?: Pick<PostTrainingOptions, 'hybrid' | 'partitioner' | 'hybridDict' | 'passes' | 'fuse' | 'inputQuantStubs'>;
  onBatch?: () => void;
}

export interface PtqResult {
  /** The calibrated fake-quant model. */
  calibrated: GraphModule;
  /** The march's fixed-point model converted from it. */
  fixedPoint: GraphModule;
}

/**
 * Post-training quantization as the demo does it (`quantizePostTraining` with the demo's calibration qconfig:
 * the chosen activation observer, min-max per-channel weights, a high-precision output for the last Linear).
 * Only calibration's warnings are printed.
 */
export function postTrainingQuantize(float: Module, options: PtqOptions): PtqResult {
  float.eval();
  const observer = options.observer ?? 'mse';
  const qconfig = (dtype?: 'qint8' | 'qint16') =>
    getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max', dtype ? { dtype } : undefined);
  const byDtype = Object.fromEntries(Object.entries(options.dtypes ?? {}).map(([name, d]) => [name, qconfig(d)]));
  const { calibrated, fixed } = quantizePostTraining(float, {
    ...options.prepare,
    march: options.march,
    qconfig: { global: qconfig(), moduleName: { ...byDtype, [options.outputModule ?? 'fc']: defaultQatOutQconfig } },
    calibration: options.calibration,
    ...(options.onBatch ? { onBatch: options.onBatch } : {}),
    onWarning: (m, stage) => {
      if (stage === 'calibrate') console.warn(`[qtk] ${m}`);
    },
  });
  return { calibrated, fixedPoint: fixed };
}

/** The first `count` images of a dataset in batches of `batch` (calibration data). */
export function firstBatches(data: Dataset, count: number, batch = 64): Tensor[] {
  return [...batchesOf(data.images, batch, count)];
}
