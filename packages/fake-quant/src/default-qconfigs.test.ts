import { QConfigError } from '@qtk/spec';
import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import {
  defaultCalibQconfig,
  defaultQat16bitQconfig,
  defaultQatOutQconfig,
  defaultQatQconfig,
  getDefaultCalibQconfig,
  getDefaultQatOutQconfig,
  getDefaultQatQconfig,
  getDefaultQconfig,
  type QConfig,
} from './index.js';

const optionsOf = (q: QConfig) => ({ activation: q.activation?.options ?? null, weight: q.weight?.options ?? null });

describe('getDefault*Qconfig functions', () => {
  it('return fresh qconfigs equal to the constants when called with defaults', () => {
    const pairs: [() => QConfig, QConfig][] = [
      [() => getDefaultQatQconfig(), defaultQatQconfig],
      [() => getDefaultQatOutQconfig(), defaultQatOutQconfig],
      [() => getDefaultCalibQconfig(), defaultCalibQconfig],
      [() => getDefaultQatQconfig({ dtype: 'qint16' }), defaultQat16bitQconfig],
    ];
    for (const [make, constant] of pairs) {
      const a = make();
      expect(optionsOf(a)).toEqual(optionsOf(constant));
      expect(a).not.toBe(make());
      if (a.activation) expect(a.activation).not.toBe(constant.activation);
      expect(a.weight).not.toBe(constant.weight);
    }
    expect(optionsOf(defaultQatQconfig)).toEqual({
      activation: { observer: 'min_max', dtype: 'qint8', chAxis: -1, learnable: false },
      weight: { observer: 'min_max', dtype: 'qint8', chAxis: 0, learnable: false },
    });
    expect(defaultQatOutQconfig.activation).toBeNull();
    expect(defaultCalibQconfig.activation!().fakeQuantState).toBe('CALIBRATION');
    expect(defaultCalibQconfig.weight!().fakeQuantState).toBe('CALIBRATION');
  });

  it('getDefaultQatQconfig: dtype, weightDtype, fake-quant kinds and qkwargs (flat) reach the modules', () => {
    const q = getDefaultQatQconfig({
      dtype: 'qint16',
      weightDtype: 'qint16',
      activationFakeQuant: 'lsq',
      activationQkwargs: { observer: 'percentile', percentile: 99.9, averagingConstant: 0 },
      weightQkwargs: { averagingConstant: 1 },
    });
    const a = q.activation!();
    expect([a.dtype, a.options.learnable, a.observer.name]).toEqual(['qint16', true, 'percentile']);
    expect(a.observer.options).toMatchObject({ percentile: 99.9, averagingConstant: 0 });
    const w = q.weight!({ chAxis: 0, numChannels: 2 });
    expect([w.dtype, w.options.chAxis, w.options.learnable]).toEqual(['qint16', 0, false]);
    expect(w.observer.options).toMatchObject({ averagingConstant: 1 });
    // a dtype in the qkwargs wins, as in horizon_plugin_pytorch
    expect(getDefaultQatQconfig({ activationQkwargs: { dtype: 'qint16' } }).activation!().dtype).toBe('qint16');
    expect(getDefaultQatQconfig({ weightFakeQuant: null }).weight).toBeNull();
    expect(() => getDefaultQatQconfig({ backend: 'bpu' } as never)).toThrow(
      /getDefaultQatQconfig: 'backend' does not apply.*setMarch/,
    );
  });

  it('getDefaultQatOutQconfig: weights only; an output dtype is rejected with the reason', () => {
    const q = getDefaultQatOutQconfig({ weightDtype: 'qint16', weightQkwargs: { observer: 'mse' } });
    expect(q.activation).toBeNull();
    expect(q.weight!.options).toMatchObject({ dtype: 'qint16', chAxis: 0, observer: 'mse' });
    expect(q.weight!({ chAxis: 0, numChannels: 3 }).observer.options).toMatchObject({
      chAxis: 0,
      averagingConstant: 0.01,
    });
    expect(getDefaultQatOutQconfig({ weightFakeQuant: 'lsq' }).weight!.options.learnable).toBe(true);
    expect(() => getDefaultQatOutQconfig({ dtype: 'qint16' } as never)).toThrow(QConfigError);
    expect(() => getDefaultQatOutQconfig({ dtype: 'qint16' } as never)).toThrow(
      /'dtype' .*does not apply: an out qconfig has no output fake-quant.*weightDtype/,
    );
  });

  it('getDefaultCalibQconfig: dtype and calibQkwargs change the activation fake-quant, both observe in CALIBRATION', () => {
    const q = getDefaultCalibQconfig({ dtype: 'qint16', calibQkwargs: { observer: 'mse', stride: 2 } });
    const a = q.activation!();
    expect([a.dtype, a.observer.name, a.fakeQuantState]).toEqual(['qint16', 'mse', 'CALIBRATION']);
    expect(a.observer.options).toMatchObject({ stride: 2 });
    const x = tensor([0.5, -3]);
    expect(a.forward(x)).toBe(x);
    expect(q.weight!.options).toEqual({
      observer: 'min_max',
      dtype: 'qint8',
      chAxis: 0,
      learnable: false,
      state: 'CALIBRATION',
    });
    expect(() => getDefaultCalibQconfig({ calib_qkwargs: {} } as never)).toThrow(
      /unknown argument 'calib_qkwargs'; it takes dtype, calibQkwargs/,
    );
  });

  it("getDefaultQconfig by name, with the calibration guide's recipes", () => {
    // a fixed output scale for a sub, 16 bits
    const sub = getDefaultQconfig({
      activationQkwargs: { observer: 'fixed_scale', scale: 1 / 2 ** 15, dtype: 'qint16' },
    });
    const fq = sub.activation!();
    expect([fq.dtype, fq.calculateQparams().scale[0]]).toEqual(['qint16', 2 ** -15]);
    // weights: qscheme per channel with its axis; per tensor drops the default axis
    const perChannel = getDefaultQconfig({ weightQkwargs: { qscheme: 'per_channel_symmetric', chAxis: 0 } });
    expect(perChannel.weight!.options).toMatchObject({
      chAxis: 0,
      observerOptions: { qscheme: 'per_channel_symmetric' },
    });
    const perTensor = getDefaultQconfig({
      weightObserver: 'percentile',
      weightQkwargs: { qscheme: 'per_tensor_symmetric' },
    });
    expect(perTensor.weight!.options.chAxis).toBe(-1);
    expect(perTensor.weight!().observer.name).toBe('percentile');
    // an "out" qconfig: no activation fake-quant, no activation observer
    const out = getDefaultQconfig({ activationFakeQuant: null, activationObserver: null });
    expect(out.activation).toBeNull();
    expect(optionsOf(out)).toEqual(optionsOf(getDefaultQconfig(null, 'fake_quant', null, 'min_max', null, null)));
    expect(() => getDefaultQconfig({ activationObserver: null })).toThrow(
      /activation observer null needs activationFakeQuant null/,
    );
    expect(() => getDefaultQconfig({ activation_observer: 'mse' } as never)).toThrow(
      /unknown argument 'activation_observer'/,
    );
    expect(() => getDefaultQconfig('pact' as never)).toThrow(/'pact' is not one of/);
  });
});
