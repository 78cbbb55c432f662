import '@qtk/march-bayes';
import { calibrate, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig } from '@qtk/fake-quant';
import { evaluate, loadDataset, ReferenceNet, type Dataset } from '@qtk/examples';
import { batchesOf, type Module } from '@qtk/nn';
import { loadStateDictFileSync } from '@qtk/nn/node';
import type { Tensor } from '@qtk/tensor';

export const CALIB_OBSERVERS = ['min_max', 'percentile', 'mse', 'kl', 'mix'] as const;
export type CalibObserver = (typeof CALIB_OBSERVERS)[number];

/** The reference network with float weights from a state-dict file (`pnpm train-float` writes one). */
export function loadReferenceNet(path: string): ReferenceNet {
  const model = new ReferenceNet();
  model.loadStateDict(loadStateDictFileSync(path));
  return model.eval();
}

/** Batches of 64 from the first `count` training images (the calibration protocol). */
export function calibrationBatches(train: Dataset, count: number, batch = 64): Tensor[] {
  return [...batchesOf(train.images, batch, count)];
}

/**
 * Prepares the float model with `observer` on activations (min-max per-channel weights; the
 * output Linear keeps a high-precision output, the "out" qconfig), calibrates on the batches and
 * returns the seconds the calibration took and the model, in VALIDATION state.
 */
export function calibrateWith(
  float: Module,
  observer: CalibObserver,
  batches: Tensor[],
): { seconds: number; model: Module } {
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max');
  const model = prepareQatFx(float, { global: qconfig, moduleName: { fc: defaultQatOutQconfig } }, { march: 'bayes' });
  const t0 = performance.now();
  calibrate(model, batches);
  return { seconds: (performance.now() - t0) / 1000, model };
}

export interface CalibrationBench {
  calib_1024_s: Partial<Record<CalibObserver, number>>;
  accuracy: Partial<Record<CalibObserver, number>>;
  /** The calibrated models (VALIDATION), for conversion. */
  models: Partial<Record<CalibObserver, Module>>;
}

/** The calibration protocol for each observer: 1024 training images, batch 64, then test accuracy in VALIDATION. */
export function benchCalibration(
  float: Module,
  dataDir: string,
  options: {
    images?: number;
    testLimit?: number;
    observers?: readonly CalibObserver[];
    log?: (m: string) => void;
  } = {},
): CalibrationBench {
  const train = loadDataset(dataDir, 'train', options.images ?? 1024);
  const test = loadDataset(dataDir, 'test', options.testLimit);
  const batches = calibrationBatches(train, options.images ?? 1024);
  const result: CalibrationBench = { calib_1024_s: {}, accuracy: {}, models: {} };
  options.log?.(
    `float weights: test accuracy ${(evaluate(float, test) * 100).toFixed(2)} % on the same ${test.labels.size} test images`,
  );
  for (const obs of options.observers ?? CALIB_OBSERVERS) {
    const { seconds, model } = calibrateWith(float, obs, batches);
    result.calib_1024_s[obs] = seconds;
    result.accuracy[obs] = evaluate(model, test);
    result.models[obs] = model;
    options.log?.(
      `calibration ${obs}: ${seconds.toFixed(3)} s, fake-quant test accuracy ${(result.accuracy[obs]! * 100).toFixed(2)} %`,
    );
  }
  return result;
}
