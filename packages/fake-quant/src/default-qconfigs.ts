import { QConfigError } from '@qtk/spec';
import type { FakeQuantizeOptions } from './fake-quantize.js';
import { qconfig, withArgs, type QConfig } from './qconfig.js';

export type FakeQuantKind = 'fake_quant' | 'lsq' | null;

/**
 * horizon_plugin_pytorch's get_default_qconfig: activation / weight fake-quant kind ('fake_quant', 'lsq' or null
 * for none), their observer names, and extra options for each. Activations per tensor, weights per
 * channel along axis 0, qint8 unless the qkwargs say otherwise.
 */
export function getDefaultQconfig(
  activationFakeQuant: FakeQuantKind = 'fake_quant',
  weightFakeQuant: FakeQuantKind = 'fake_quant',
  activationObserver = 'min_max',
  weightObserver = 'min_max',
  activationQkwargs: FakeQuantizeOptions = {},
  weightQkwargs: FakeQuantizeOptions = {},
): QConfig {
  const kind = (k: FakeQuantKind, what: string): boolean => {
    if (k !== 'fake_quant' && k !== 'lsq' && k !== null) {
      throw new QConfigError(`getDefaultQconfig: ${what} fake quant '${String(k)}' is not one of 'fake_quant', 'lsq', null`);
    }
    return k === 'lsq';
  };
  const aLsq = kind(activationFakeQuant, 'activation');
  const wLsq = kind(weightFakeQuant, 'weight');
  const activation =
    activationFakeQuant === null ? null : withArgs({ observer: activationObserver, dtype: 'qint8', chAxis: -1, learnable: aLsq, ...activationQkwargs });
  const weight = weightFakeQuant === null ? null : withArgs({ observer: weightObserver, dtype: 'qint8', chAxis: 0, learnable: wLsq, ...weightQkwargs });
  return qconfig(activation, weight);
}

/** qat 8-bit: min-max activation (moving average 0.01) and per-channel weight fake-quants. */
export const defaultQatQconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max', {
  observerOptions: { averagingConstant: 0.01 },
});
/** qat 8-bit "out": no activation fake-quant (high-precision int32 output). */
export const defaultQatOutQconfig = getDefaultQconfig(null, 'fake_quant', 'min_max', 'min_max');
/** calibration 8-bit: min-max observers, fake-quants created in the CALIBRATION state. */
export const defaultCalibQconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max', { state: 'CALIBRATION' }, { state: 'CALIBRATION' });
/** calibration 8-bit "out". */
export const defaultCalibOutQconfig = getDefaultQconfig(null, 'fake_quant', 'min_max', 'min_max', {}, { state: 'CALIBRATION' });
/** LSQ 8-bit activations and weights. */
export const defaultLsqQconfig = getDefaultQconfig('lsq', 'lsq');
/** 16-bit activations, 8-bit weights. */
export const defaultQat16bitQconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max', {
  dtype: 'qint16',
  observerOptions: { averagingConstant: 0.01 },
});
