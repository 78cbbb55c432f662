import '@qtk/observers'; // the constants below check their options against the registered observers
import { QConfigError, type ObserverDType } from '@qtk/spec';
import { nestFakeQuantKwargs, type FakeQuantKwargs } from './fake-quant-kwargs.js';
import { qconfig, withArgsAt, type QConfig } from './qconfig.js';

export type FakeQuantKind = 'fake_quant' | 'lsq' | null;

/** getDefaultQconfig's arguments by name (horizon_plugin_pytorch's keyword arguments, camelCase). */
export interface DefaultQconfigOptions {
  /** 'fake_quant' (default), 'lsq', or null for no activation fake-quant (a high-precision output). */
  readonly activationFakeQuant?: FakeQuantKind;
  readonly weightFakeQuant?: FakeQuantKind;
  /** Registered observer name; 'min_max' by default (null only with no activation fake-quant). */
  readonly activationObserver?: string | null;
  readonly weightObserver?: string | null;
  /** FakeQuantize and observer options, flat or nested (see withArgs); they win over the arguments above. */
  readonly activationQkwargs?: FakeQuantKwargs | null;
  readonly weightQkwargs?: FakeQuantKwargs | null;
}

const DEFAULT_QCONFIG_KEYS = [
  'activationFakeQuant',
  'weightFakeQuant',
  'activationObserver',
  'weightObserver',
  'activationQkwargs',
  'weightQkwargs',
];

/** Rejects argument names a function does not take; `why` explains horizon_plugin_pytorch names that do not apply. */
function checkArgs(fn: string, given: object, valid: readonly string[], why: Record<string, string> = {}): void {
  for (const k of Object.keys(given)) {
    if (valid.includes(k)) continue;
    throw new QConfigError(`${fn}: ${why[k] ?? `unknown argument '${k}'`}; it takes ${valid.join(', ')}`);
  }
}

const BACKEND =
  "'backend' does not apply: QTK has one implementation per march (choose the march with setMarch or prepareQatFx's march)";

/**
 * horizon_plugin_pytorch's get_default_qconfig: activation / weight fake-quant kind ('fake_quant',
 * 'lsq' or null for none), their observer names, and extra options for each (flat or nested, as
 * withArgs takes them). Activations per tensor; weights per channel along axis 0 unless the weight
 * qkwargs ask for `qscheme: 'per_tensor_symmetric'` (then axis -1) or set `chAxis`; qint8 unless the
 * qkwargs say otherwise. Takes its arguments by position or by name (one object).
 */
export function getDefaultQconfig(options: DefaultQconfigOptions): QConfig;
export function getDefaultQconfig(
  activationFakeQuant?: FakeQuantKind,
  weightFakeQuant?: FakeQuantKind,
  activationObserver?: string | null,
  weightObserver?: string | null,
  activationQkwargs?: FakeQuantKwargs | null,
  weightQkwargs?: FakeQuantKwargs | null,
): QConfig;
export function getDefaultQconfig(
  first?: FakeQuantKind | DefaultQconfigOptions,
  weightFakeQuant: FakeQuantKind = 'fake_quant',
  activationObserver: string | null = 'min_max',
  weightObserver: string | null = 'min_max',
  activationQkwargs: FakeQuantKwargs | null = null,
  weightQkwargs: FakeQuantKwargs | null = null,
): QConfig {
  if (typeof first === 'object' && first !== null) {
    checkArgs('getDefaultQconfig', first, DEFAULT_QCONFIG_KEYS);
    const o = first;
    return getDefaultQconfig(
      o.activationFakeQuant === undefined ? 'fake_quant' : o.activationFakeQuant,
      o.weightFakeQuant === undefined ? 'fake_quant' : o.weightFakeQuant,
      o.activationObserver === undefined ? 'min_max' : o.activationObserver,
      o.weightObserver === undefined ? 'min_max' : o.weightObserver,
      o.activationQkwargs ?? null,
      o.weightQkwargs ?? null,
    );
  }
  const activationFakeQuant = first === undefined ? 'fake_quant' : first;
  const activation = factory('activation', activationFakeQuant, activationObserver, -1, activationQkwargs);
  const wq = weightQkwargs === null ? null : nestFakeQuantKwargs(weightQkwargs, 'getDefaultQconfig weightQkwargs');
  const weightAxis = wq?.observerOptions?.qscheme === 'per_tensor_symmetric' ? -1 : 0;
  const weight = factory('weight', weightFakeQuant, weightObserver, weightAxis, wq);
  return qconfig(activation, weight);
}

function factory(
  what: 'activation' | 'weight',
  kind: FakeQuantKind,
  observer: string | null,
  chAxis: number,
  qkwargs: FakeQuantKwargs | null,
) {
  if (kind !== 'fake_quant' && kind !== 'lsq' && kind !== null) {
    throw new QConfigError(
      `getDefaultQconfig: ${what} fake quant '${String(kind)}' is not one of 'fake_quant', 'lsq', null`,
    );
  }
  if (kind === null) return null;
  if (observer === null && qkwargs?.observer === undefined) {
    throw new QConfigError(
      `getDefaultQconfig: ${what} observer null needs ${what}FakeQuant null too (or an observer in ${what}Qkwargs)`,
    );
  }
  return withArgsAt(`getDefaultQconfig ${what}`, {
    observer: observer ?? undefined,
    dtype: 'qint8',
    chAxis,
    learnable: kind === 'lsq',
    ...qkwargs,
  });
}

/** getDefaultQatQconfig's arguments (horizon_plugin_pytorch's get_default_qat_qconfig, camelCase). */
export interface DefaultQatQconfigOptions {
  /** Activation dtype (default qint8). */
  readonly dtype?: ObserverDType;
  /** Weight dtype (default qint8). */
  readonly weightDtype?: ObserverDType;
  readonly activationFakeQuant?: FakeQuantKind;
  readonly weightFakeQuant?: FakeQuantKind;
  /** Activation FakeQuantize / observer options (flat or nested); a dtype here wins over `dtype`. */
  readonly activationQkwargs?: FakeQuantKwargs | null;
  readonly weightQkwargs?: FakeQuantKwargs | null;
}

/**
 * A fresh QAT qconfig: min_max activation fake-quants per tensor (moving average 0.01) and per-channel
 * min_max weight fake-quants, `dtype` / `weightDtype` bits.
 */
export function getDefaultQatQconfig(options: DefaultQatQconfigOptions = {}): QConfig {
  checkArgs(
    'getDefaultQatQconfig',
    options,
    ['dtype', 'weightDtype', 'activationFakeQuant', 'weightFakeQuant', 'activationQkwargs', 'weightQkwargs'],
    {
      backend: BACKEND,
    },
  );
  const { dtype = 'qint8', weightDtype = 'qint8' } = options;
  return getDefaultQconfig({
    activationFakeQuant: options.activationFakeQuant === undefined ? 'fake_quant' : options.activationFakeQuant,
    weightFakeQuant: options.weightFakeQuant === undefined ? 'fake_quant' : options.weightFakeQuant,
    activationQkwargs: { dtype, ...options.activationQkwargs },
    weightQkwargs: { dtype: weightDtype, ...options.weightQkwargs },
  });
}

export interface DefaultQatOutQconfigOptions {
  readonly weightDtype?: ObserverDType;
  readonly weightFakeQuant?: FakeQuantKind;
  readonly weightQkwargs?: FakeQuantKwargs | null;
}

/** A fresh QAT "out" qconfig: per-channel weight fake-quants and no output fake-quant (the output stays high precision). */
export function getDefaultQatOutQconfig(options: DefaultQatOutQconfigOptions = {}): QConfig {
  checkArgs('getDefaultQatOutQconfig', options, ['weightDtype', 'weightFakeQuant', 'weightQkwargs'], {
    dtype:
      "'dtype' (an output dtype) does not apply: an out qconfig has no output fake-quant, the output stays high precision; set the weights' dtype with weightDtype",
    backend: BACKEND,
  });
  return getDefaultQconfig({
    activationFakeQuant: null,
    activationObserver: null,
    weightFakeQuant: options.weightFakeQuant === undefined ? 'fake_quant' : options.weightFakeQuant,
    weightQkwargs: { dtype: options.weightDtype ?? 'qint8', ...options.weightQkwargs },
  });
}

export interface DefaultCalibQconfigOptions {
  /** Activation dtype (default qint8). */
  readonly dtype?: ObserverDType;
  /** Activation FakeQuantize / observer options (flat or nested), e.g. `{ observer: 'mse' }`. */
  readonly calibQkwargs?: FakeQuantKwargs | null;
}

/**
 * A fresh calibration qconfig: min_max activation and per-channel weight fake-quants created in the
 * CALIBRATION state (observe, pass values through); `calibQkwargs` changes the activation's.
 */
export function getDefaultCalibQconfig(options: DefaultCalibQconfigOptions = {}): QConfig {
  checkArgs('getDefaultCalibQconfig', options, ['dtype', 'calibQkwargs'], { backend: BACKEND });
  return getDefaultQconfig({
    activationQkwargs: { state: 'CALIBRATION', dtype: options.dtype ?? 'qint8', ...options.calibQkwargs },
    weightQkwargs: { state: 'CALIBRATION' },
  });
}

/** qat 8-bit: min-max activation (moving average 0.01) and per-channel weight fake-quants (= getDefaultQatQconfig()). */
export const defaultQatQconfig = getDefaultQatQconfig();
/** qat 8-bit "out": no activation fake-quant (high-precision int32 output) (= getDefaultQatOutQconfig()). */
export const defaultQatOutQconfig = getDefaultQatOutQconfig();
/** calibration 8-bit: min-max observers, fake-quants created in the CALIBRATION state (= getDefaultCalibQconfig()). */
export const defaultCalibQconfig = getDefaultCalibQconfig();
/** calibration 8-bit "out". */
export const defaultCalibOutQconfig = getDefaultQconfig(null, 'fake_quant', null, 'min_max', null, {
  state: 'CALIBRATION',
});
/** LSQ 8-bit activations and weights. */
export const defaultLsqQconfig = getDefaultQconfig('lsq', 'lsq');
/** 16-bit activations, 8-bit weights (= getDefaultQatQconfig({ dtype: 'qint16' })). */
export const defaultQat16bitQconfig = getDefaultQatQconfig({ dtype: 'qint16' });
