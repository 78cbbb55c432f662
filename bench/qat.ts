import '@qtk/march-bayes';
import { calibrate, prepareQatFx, setFakeQuantize, startQat } from '@qtk/core';
import { defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import { evaluate, loadDataset, trainFloat } from '@qtk/examples';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { calibrationBatches } from './calibration.js';

/**
 * The QAT protocol: the float model prepared with the 8-bit QAT qconfig (the output Linear keeps a
 * high-precision output), min-max calibration on 1024 training images, then QAT from that state:
 * SGD momentum 0.9, wd 5e-4, lr 1e-3 cosine, batch 64, one epoch (or `maxSteps`). Trains the float
 * model's shared parameters, so run it last.
 */
export function benchQat(
  float: Module,
  dataDir: string,
  options: { maxSteps?: number; evaluateAccuracy?: boolean; log?: (m: string) => void } = {},
): { stepMs: number; accuracy: number | null; model: GraphModule } {
  const train = loadDataset(dataDir, 'train');
  const model = prepareQatFx(
    float,
    { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
    { march: 'bayes' },
  );
  calibrate(model, calibrationBatches(train, 1024));
  startQat(model);
  const r = trainFloat(model, train, {
    epochs: 1,
    lr: 1e-3,
    seed: 0,
    maxSteps: options.maxSteps,
    progress: options.evaluateAccuracy,
    label: 'QAT train',
  });
  options.log?.(`QAT: ${r.steps} steps, ${r.meanStepMs.toFixed(1)} ms per step, final loss ${r.finalLoss.toFixed(4)}`);
  if (!options.evaluateAccuracy) return { stepMs: r.meanStepMs, accuracy: null, model };
  setFakeQuantize(model, 'VALIDATION');
  const accuracy = evaluate(model, loadDataset(dataDir, 'test'));
  options.log?.(`QAT fake-quant test accuracy (VALIDATION) ${(accuracy * 100).toFixed(2)} %`);
  return { stepMs: r.meanStepMs, accuracy, model };
}
