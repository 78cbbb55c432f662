import { setFakeQuantize } from '@qtk/fake-quant';
import type { Module, StateDict } from '@qtk/nn';
import { noGrad, type Tensor } from '@qtk/tensor';

export interface CalibrateOptions {
  /** Stop after this many batches. */
  numBatches?: number;
  /** Called after each batch (progress). */
  onBatch?: (index: number) => void;
}

/**
 * The calibration flow: CALIBRATION state, eval mode, forward every batch without gradients
 * (observers collect statistics, values pass unquantized), then VALIDATION. Returns the batch count.
 */
export function calibrate(model: Module, batches: Iterable<Tensor | Tensor[]>, options: CalibrateOptions = {}): number {
  model.eval();
  setFakeQuantize(model, 'CALIBRATION');
  let n = 0;
  noGrad(() => {
    for (const b of batches) {
      if (options.numBatches !== undefined && n >= options.numBatches) break;
      (model as unknown as { call(...a: Tensor[]): unknown }).call(...(Array.isArray(b) ? b : [b]));
      options.onBatch?.(n);
      n++;
    }
  });
  setFakeQuantize(model, 'VALIDATION');
  return n;
}

/**
 * The QAT flow's start: load a calibrated model's state dict (scales and weights) into a model
 * prepared with a QAT qconfig, switch its fake-quants to QAT and the model to training mode.
 */
export function startQat(model: Module, calibrationState?: StateDict): void {
  if (calibrationState) model.loadStateDict(calibrationState);
  setFakeQuantize(model, 'QAT');
  model.train();
}
