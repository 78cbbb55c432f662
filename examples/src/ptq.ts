import { calibrate, convertFx, type PrepareQatFxOptions, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { takeBatch } from './batches.js';
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
  prepare?: Omit<PrepareQatFxOptions, 'march'>;
  onBatch?: () => void;
}

export interface PtqResult {
  /** The calibrated fake-quant model. */
  calibrated: GraphModule;
  /** The march's fixed-point model converted from it. */
  fixedPoint: GraphModule;
}

/**
 * Post-training quantization as the demo does it: prepare with the demo's calibration qconfig (the
 * chosen activation observer, min-max per-channel weights, a high-precision output for the last
 * Linear), calibrate on the given batches, convert to the march's fixed point.
 */
export function postTrainingQuantize(float: Module, options: PtqOptions): PtqResult {
  float.eval();
  const observer = options.observer ?? 'mse';
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max');
  const byDtype = Object.fromEntries(
    Object.entries(options.dtypes ?? {}).map(([name, dtype]) => [
      name,
      getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max', { dtype }),
    ]),
  );
  const calibrated = prepareQatFx(
    float,
    { global: qconfig, moduleName: { ...byDtype, [options.outputModule ?? 'fc']: defaultQatOutQconfig } },
    { onWarning: () => {}, ...options.prepare, march: options.march },
  );
  calibrate(calibrated, options.calibration, { onBatch: options.onBatch });
  const fixedPoint = convertFx(calibrated, { march: options.march, onWarning: () => {} });
  return { calibrated, fixedPoint };
}

/** The first `count` images of a dataset in batches of `batch` (calibration data). */
export function firstBatches(data: Dataset, count: number, batch = 64): Tensor[] {
  const n = Math.min(count, data.labels.size);
  const out: Tensor[] = [];
  for (let i = 0; i < n; i += batch) out.push(takeBatch(data, null, i, Math.min(batch, n - i)).images);
  return out;
}
