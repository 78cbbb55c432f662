import { OptionsError, RegistryError, scaleFromRange } from '@qtk/spec';
import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { FakeQuantize, withArgs } from './index.js';

function errorOf(f: () => unknown): OptionsError {
  try {
    f();
  } catch (e) {
    if (e instanceof OptionsError) return e;
    throw e;
  }
  throw new Error('expected an OptionsError');
}

describe('withArgs: horizon_plugin_pytorch’s flat keyword form', () => {
  it('observer options sit next to the FakeQuantize ones and reach the observer', () => {
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        { observer: 'percentile', dtype: 'qint8', averagingConstant: 0, percentile: 99.9, bins: 4096 },
        { percentile: 99.9, bins: 4096, averagingConstant: 0 },
      ],
      [
        { observer: 'mse', dtype: 'qint16', stride: 5 },
        { stride: 5, averagingConstant: null, dtype: 'qint16' },
      ],
      [
        { observer: 'mix', averagingConstant: 0.25, percentiles: [99, 99.9] },
        { averagingConstant: 0.25, percentiles: [99, 99.9] },
      ],
      [
        { observer: 'moving_average_per_channel_min_max', dtype: 'qint8', chAxis: 0, averagingConstant: 1 },
        { averagingConstant: 1, chAxis: 0 },
      ],
      [
        { observer: 'fixed_scale', scale: 1 / 2 ** 15, dtype: 'qint16' },
        { scale: 1 / 2 ** 15, dtype: 'qint16' },
      ],
      [
        { observer: 'min_max', qscheme: 'per_tensor_symmetric', reduceRange: true },
        { quantMin: -64, quantMax: 63, reduceRange: true },
      ],
    ];
    for (const [kwargs, expected] of cases) {
      const f = withArgs(kwargs);
      const fq = f();
      expect(fq).toBeInstanceOf(FakeQuantize);
      expect(fq.observer.name).toBe(kwargs.observer);
      expect(fq.observer.options).toMatchObject(expected);
      // bound options are kept nested, so withArgs(...).withArgs(...) and codecs see one form
      const { observer, dtype, chAxis, ...rest } = kwargs;
      expect(f.options).toEqual({
        observer,
        ...(dtype ? { dtype } : {}),
        ...(chAxis !== undefined ? { chAxis } : {}),
        observerOptions: rest,
      });
    }
  });

  it('the options do what they say: averagingConstant 0 keeps the first batch, reduceRange narrows the clamp', () => {
    const fq = withArgs({ observer: 'min_max', averagingConstant: 0, state: 'CALIBRATION' })();
    fq.forward(tensor([-1, 2.55]));
    fq.forward(tensor([-10, 25.5]));
    expect(fq.calculateQparams().scale[0]).toBe(scaleFromRange(-1, 2.55, 'qint8'));
    const reduced = withArgs({ reduceRange: true, averagingConstant: 1 })();
    reduced.forward(tensor([6.35, -6.35, 3]));
    expect([reduced.quantMin, reduced.quantMax]).toEqual([-64, 63]);
    const s = reduced.calculateQparams().scale[0]!;
    expect(s).toBe(Math.fround(6.35 / 63.5));
    reduced.setFakeQuantState('VALIDATION');
    const y = reduced.forward(tensor([10, -10, 3]));
    expect(y.toArray()).toEqual([63 * s, -64 * s, Math.floor(3 / s + 0.5) * s].map(Math.fround));
  });

  it('the nested form still works; .withArgs merges flat over nested', () => {
    const f = withArgs({ observer: 'percentile', observerOptions: { percentile: 99 } }).withArgs({
      bins: 1024,
      dtype: 'qint16',
    });
    expect(f.options).toEqual({
      observer: 'percentile',
      dtype: 'qint16',
      observerOptions: { percentile: 99, bins: 1024 },
    });
    expect(f().observer.options).toMatchObject({ percentile: 99, bins: 1024, dtype: 'qint16' });
    // creation-time overrides take the flat form too
    expect(f({ percentile: 99.9 }).observer.options).toMatchObject({ percentile: 99.9 });
  });

  it('the same option given flat and in observerOptions is an error', () => {
    const e = errorOf(() =>
      withArgs({ observer: 'percentile', percentile: 99, observerOptions: { percentile: 99.9 } }),
    );
    expect(e.issues).toEqual([
      { path: 'percentile', message: 'given both as a flat option and in observerOptions; give it once' },
    ]);
  });
});

describe('withArgs: typos and misplaced options fail at the boundary', () => {
  it('an unknown name is reported with the observer, a suggestion and the valid names', () => {
    const e = errorOf(() => withArgs({ observer: 'percentile', percentil: 99.9 }));
    expect(e.where).toBe("withArgs (observer 'percentile')");
    expect(e.issues[0]!.path).toBe('percentil');
    expect(e.message).toMatch(
      /'percentil' is neither a FakeQuantize option nor an option of observer 'percentile' \(did you mean 'percentile'\?\)/,
    );
    expect(e.message).toMatch(
      /observer 'percentile' accepts percentile, bins, averagingConstant, qscheme, reduceRange, isSyncQuantize, factoryKwargs; FakeQuantize accepts observer, observerOptions, dtype, chAxis/,
    );
    // python spelling copied from a recipe
    expect(() => withArgs({ observer: 'min_max', averaging_constant: 0 })).toThrow(/did you mean 'averagingConstant'/);
    // an option of another observer
    expect(() => withArgs({ observer: 'mse', percentile: 99 })).toThrow(
      /'percentile' is neither a FakeQuantize option nor an option of observer 'mse'/,
    );
    // nested typos too
    expect(() => withArgs({ observer: 'mix', observerOptions: { bin: 512 } })).toThrow(
      /'bin' .*observer 'mix' \(did you mean 'bins'\?\)/,
    );
  });

  it('bad values, FakeQuantize options inside observerOptions and unknown observers', () => {
    expect(() => withArgs({ observer: 'percentile', percentile: 120 })).toThrow(
      /withArgs \(observer 'percentile'\): percentile: Number must be less than or equal to 100/,
    );
    expect(() => withArgs({ observerOptions: { chAxis: 0 } })).toThrow(
      /observerOptions\.chAxis: chAxis is a FakeQuantize option.*give it next to observer/,
    );
    expect(() => withArgs({ observer: 'percentil' })).toThrow(RegistryError);
    expect(() => withArgs({ dtype: 'qint4' as never })).toThrow(/withArgs: dtype/);
  });
});

describe('histogram observers per channel (weights)', () => {
  it('percentile, mix and kl reject chAxis >= 0 when the fake-quant is bound or created, naming the observer', () => {
    for (const observer of ['percentile', 'mix', 'kl']) {
      expect(() => withArgs({ observer, chAxis: 0 })).toThrow(
        new RegExp(
          `withArgs \\(observer '${observer}'\\): chAxis: observer '${observer}' keeps one histogram per tensor and cannot observe per channel; per channel use min_max or mse`,
        ),
      );
      // a weight factory bound per tensor, given a channel axis at creation (what prepare does for weights)
      const f = withArgs({ observer });
      expect(() => f({ chAxis: 0, numChannels: 4 })).toThrow(
        new RegExp(`FakeQuantize \\(observer '${observer}'\\): chAxis: .*cannot observe per channel`),
      );
      // per tensor it works
      const w = f({ chAxis: -1 });
      w.forward(tensor([1, -2, 3, -4], [2, 2]));
      expect(w.calculateQparams().scale).toHaveLength(1);
    }
  });

  it('mse observes weights per channel', () => {
    const fq = withArgs({ observer: 'mse' })({ chAxis: 0, numChannels: 2 });
    fq.forward(tensor([1, -0.5, 0.25, 4, -2, 1], [2, 3]));
    const s = fq.calculateQparams().scale;
    expect(s).toHaveLength(2);
    expect(s[1]! / s[0]!).toBeCloseTo(4, 1);
  });
});
