import '@qtk/march-bayes';
import { calibrateAsync, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig } from '@qtk/fake-quant';
import { evaluate, loadDataset, ReferenceNet, type Dataset } from '@qtk/examples';
import { batchesOf, type Module } from '@qtk/nn';
import { loadStateDictFileSync } from '@qtk/nn/node';
import { runtimeCalibration } from '@qtk/onnx-deploy';
import type { Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';

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

/** Where calibration's forward passes run: onnxruntime-node (the default engine) or QTK's own kernels. */
export type CalibrationEngine = 'ort' | 'qtk';

/**
 * Prepares the float model with `observer` on activations (min-max per-channel weights; the
 * output Linear keeps a high-precision output, the "out" qconfig), calibrates on the batches with `engine` and
 * returns the seconds the calibration took (the runtime's export and session included) and the model, in
 * VALIDATION state.
 */
export async function calibrateWith(
  float: Module,
  observer: CalibObserver,
  batches: Tensor[],
  engine: CalibrationEngine = 'ort',
): Promise<{ seconds: number; model: Module }> {
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max');
  const model = prepareQatFx(float, { global: qconfig, moduleName: { fc: defaultQatOutQconfig } }, { march: 'bayes' });
  const t0 = performance.now();
  const onFallback = (reason: string) => {
    throw new Error(`calibration fell back to QTK: ${reason}`);
  };
  const runBatch = engine === 'ort' ? runtimeCalibration(ort, { onFallback })(model) : undefined;
  await calibrateAsync(model, batches, runBatch ? { runBatch } : {});
  return { seconds: (performance.now() - t0) / 1000, model };
}

export interface CalibrationBench {
  /** Seconds per observer, forward passes in onnxruntime-node. */
  calib_1024_s: Partial<Record<CalibObserver, number>>;
  /** The same in QTK's own kernels. */
  calib_1024_qtk_s: Partial<Record<CalibObserver, number>>;
  /** Observers whose two engines gave models of different test accuracy. */
  engineAccuracyDiffers: CalibObserver[];
  /** Test accuracy of the model calibrated in QTK's kernels (`accuracy` is the onnxruntime-node engine's). */
  accuracyQtk: Partial<Record<CalibObserver, number>>;
  accuracy: Partial<Record<CalibObserver, number>>;
  /** The calibrated models (VALIDATION), for conversion. */
  models: Partial<Record<CalibObserver, Module>>;
}

/**
 * The calibration protocol for each observer: 1024 training images, batch 64, then test accuracy in VALIDATION;
 * timed with each engine, the accuracies of the two compared.
 */
export async function benchCalibration(
  float: Module,
  dataDir: string,
  options: {
    images?: number;
    testLimit?: number;
    observers?: readonly CalibObserver[];
    log?: (m: string) => void;
  } = {},
): Promise<CalibrationBench> {
  const train = loadDataset(dataDir, 'train', options.images ?? 1024);
  const test = loadDataset(dataDir, 'test', options.testLimit);
  const batches = calibrationBatches(train, options.images ?? 1024);
  const result: CalibrationBench = {
    calib_1024_s: {},
    calib_1024_qtk_s: {},
    engineAccuracyDiffers: [],
    accuracyQtk: {},
    accuracy: {},
    models: {},
  };
  options.log?.(
    `float weights: test accuracy ${(evaluate(float, test) * 100).toFixed(2)} % on the same ${test.labels.size} test images`,
  );
  for (const obs of options.observers ?? CALIB_OBSERVERS) {
    const qtk = await calibrateWith(float, obs, batches, 'qtk');
    const { seconds, model } = await calibrateWith(float, obs, batches, 'ort');
    result.calib_1024_s[obs] = seconds;
    result.calib_1024_qtk_s[obs] = qtk.seconds;
    result.accuracy[obs] = evaluate(model, test);
    const qtkAccuracy = evaluate(qtk.model, test);
    result.accuracyQtk[obs] = qtkAccuracy;
    if (qtkAccuracy !== result.accuracy[obs]) result.engineAccuracyDiffers.push(obs);
    result.models[obs] = model;
    options.log?.(
      `calibration ${obs}: ${seconds.toFixed(3)} s in onnxruntime-node, ${qtk.seconds.toFixed(3)} s in QTK; ` +
        `fake-quant test accuracy ${(result.accuracy[obs]! * 100).toFixed(2)} % (QTK's calibration: ${(qtkAccuracy * 100).toFixed(2)} %)`,
    );
  }
  return result;
}
