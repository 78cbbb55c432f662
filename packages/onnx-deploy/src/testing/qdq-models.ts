// Setup for the QDQ export tests (their models come from @qtk/test-models):
// BatchNorm warm-up, calibration batches, a calibrated model.
import { calibrate, prepareQatFx } from '@qtk/core';
import { getDefaultCalibQconfig, getDefaultQconfig, type QConfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { Generator, noGrad, randn, type Tensor, type RoundingMode } from '@qtk/tensor';
import type { ObserverDType } from '@qtk/spec';
import { ConvBnReluNet } from '@qtk/test-models';

/** conv-bn-relu, conv-bn + skip add + relu (one fused module), pool, linear; QuantStub / DeQuantStub around it. */
export function smallConvNet(seed: number): ConvBnReluNet {
  const generator = new Generator(seed);
  return new ConvBnReluNet({
    generator,
    inChannels: 3,
    channels: 6,
    classes: 5,
    convBias: [true, false],
    residual: true,
  });
}

/** Gives the BatchNorms running statistics (a few training-mode batches), then switches to eval. */
export function warmUp(model: Module, shape: number[], seed: number): void {
  const g = new Generator(seed);
  model.train();
  noGrad(() => {
    for (let i = 0; i < 3; i++) model.call(randn(shape, { generator: g }));
  });
  model.eval();
}

/** Random calibration batches in [-1, 1]. */
export function randomBatches(shape: number[], count: number, seed: number): Tensor[] {
  const g = new Generator(seed);
  return Array.from({ length: count }, () => randn(shape, { generator: g }).clamp(-1, 1));
}

export interface CalibratedOptions {
  march: string;
  /** Activation dtype (weights stay qint8). */
  dtype?: ObserverDType;
  /** A high-precision (no output fake-quant) qconfig for this module path. */
  outModule?: string;
  /** Activation rounding (default: the global default, half_up). */
  rounding?: RoundingMode;
}

/** Prepares `model` (fused by prepareQatFx) with min-max calibration qconfigs and calibrates it on `batches`. */
export function calibratedModel(model: Module, batches: readonly Tensor[], o: CalibratedOptions): GraphModule {
  const calib: QConfig = getDefaultCalibQconfig({
    dtype: o.dtype ?? 'qint8',
    calibQkwargs: o.rounding ? { rounding: o.rounding } : null,
  });
  const out = getDefaultQconfig(null, 'fake_quant', null, 'min_max', null, { state: 'CALIBRATION' });
  const gm = prepareQatFx(
    model,
    { global: calib, ...(o.outModule ? { moduleName: { [o.outModule]: out } } : {}) },
    { march: o.march, onWarning: () => {} },
  );
  calibrate(gm, batches, { onWarning: () => {} });
  return gm;
}
