import { deepCopy, deserializeStateDict, serializeStateDict, StateDictError, type StateDict } from '@qtk/nn';
import { scaleFromRange, StateVersionError, type ObserverState, type ObserverV1 } from '@qtk/spec';
import { Generator, randn, tensor, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { FakeQuantize, type FakeQuantizeOptions } from './index.js';
import { FAKE_QUANTIZE_EXTRA_STATE_VERSION, loadObserverState, seedObserverFromScale } from './observer-resume.js';

const data = (n: number, seed: number, spread = 1): Tensor[] => {
  const g = new Generator(seed);
  return Array.from({ length: n }, () => randn([4, 50], { generator: g }).mul(spread));
};

function calibrated(options: FakeQuantizeOptions, batches = data(3, 1)): FakeQuantize {
  const fq = new FakeQuantize({ ...options, state: 'CALIBRATION' });
  for (const b of batches) fq.forward(b);
  return fq;
}

const viaFile = (sd: StateDict) => deserializeStateDict(serializeStateDict(sd));
const minMaxOf = (fq: FakeQuantize) =>
  (fq.observer as unknown as { minMax: { min: Float64Array; max: Float64Array } | null }).minMax;

describe('FakeQuantize observer statistics in the state dict', () => {
  it('the extra state is the versioned observer state, restored exactly through a file', () => {
    for (const observer of ['min_max', 'percentile', 'kl', 'mse', 'mix']) {
      const fq = calibrated({ observer });
      const sd = fq.stateDict();
      expect(sd.extra!['']).toEqual({ version: FAKE_QUANTIZE_EXTRA_STATE_VERSION, observer: fq.observer.state() });
      const back = new FakeQuantize({ observer, state: 'CALIBRATION' });
      back.loadStateDict(viaFile(sd));
      expect(back.observer.state(), observer).toEqual(fq.observer.state());
      // calibration continues where it stopped
      const more = data(1, 9)[0]!;
      fq.forward(more);
      back.forward(more);
      expect(Array.from(back.scale.values()), observer).toEqual(Array.from(fq.scale.values()));
    }
  });

  it('QAT with averagingConstant 0 keeps a loaded calibration; a restarted observer would not', () => {
    const calib = calibrated({ observerOptions: { averagingConstant: 0.5 } });
    const s = calib.scale.values()[0]!;
    const qat = new FakeQuantize({ observerOptions: { averagingConstant: 0 } });
    qat.loadStateDict(viaFile(calib.stateDict()));
    for (const b of data(4, 2, 3)) qat.forward(b);
    expect(qat.scale.values()[0]).toBe(s);
    const restarted = new FakeQuantize({ observerOptions: { averagingConstant: 0 } });
    restarted.forward(data(4, 2, 3)[0]!);
    expect(restarted.scale.values()[0]).not.toBe(s);
  });

  it('another observer kind: the QAT min_max observer starts from ±scale·(qmax − qmin)/2, giving back the scale exactly', () => {
    const cases: [FakeQuantizeOptions, number][] = [
      [{}, 127.5],
      [{ dtype: 'qint16' }, 32767.5],
      [{ quantMin: -127, quantMax: 127 }, 127],
    ];
    for (const [range, half] of cases) {
      const calib = calibrated({ observer: 'kl', ...range });
      const s = calib.scale.values()[0]!;
      const qat = new FakeQuantize({ observer: 'min_max', observerOptions: { averagingConstant: 0.01 }, ...range });
      qat.loadStateDict(calib.stateDict());
      expect(minMaxOf(qat)).toEqual({ min: Float64Array.of(-s * half), max: Float64Array.of(s * half) });
      expect(qat.observer.computeQparams().scale[0]).toBe(s);
      const b = data(1, 3, 2)[0]!;
      qat.forward(b);
      const v = b.values();
      const lo = Math.min(...v);
      const hi = Math.max(...v);
      expect(qat.scale.values()[0]).toBe(
        scaleFromRange(-s * half + 0.01 * (lo + s * half), s * half + 0.01 * (hi - s * half), {
          quantMin: qat.quantMin,
          quantMax: qat.quantMax,
        }),
      );
    }
  });

  it('per channel: each channel starts from its own scale', () => {
    const w = randn([3, 8], { generator: new Generator(4) });
    const calib = new FakeQuantize({ observer: 'mse', chAxis: 0, numChannels: 3, state: 'CALIBRATION' });
    calib.forward(w);
    const qat = new FakeQuantize({ chAxis: 0, numChannels: 3, observerOptions: { averagingConstant: 0 } });
    qat.loadStateDict(calib.stateDict());
    expect(Array.from(qat.observer.computeQparams().scale)).toEqual(Array.from(calib.scale.values()));
    qat.forward(w.mul(5));
    expect(Array.from(qat.scale.values())).toEqual(Array.from(calib.scale.values()));
  });

  it('a dict without observer statistics (older files): the observer starts from the scale at its first observation', () => {
    const calib = calibrated({});
    const s = calib.scale.values()[0]!;
    const sd = calib.stateDict();
    delete sd.extra;
    const qat = new FakeQuantize({ observerOptions: { averagingConstant: 0 } });
    qat.loadStateDict(sd);
    expect(qat.observer.hasData()).toBe(false);
    qat.forward(tensor([-100, 100]));
    expect(qat.scale.values()[0]).toBe(s);
    // a fake-quant that never saw data still starts from its first batch
    const fresh = new FakeQuantize({ observerOptions: { averagingConstant: 0 } });
    fresh.forward(tensor([-1.275, 1]));
    expect(fresh.scale.values()[0]).toBe(scaleFromRange(-1.275, 1, 'qint8'));
  });

  it('an observer that cannot take a range (the histogram kinds) is left empty, to start from its own data', () => {
    const loaded: ObserverState[] = [];
    let resets = 0;
    const histogramLike = {
      name: 'histogram_like',
      state: (): ObserverState => ({ observer: 'histogram_like', version: 1, stats: {} }),
      load: (st: ObserverState) => {
        if (st.observer !== 'histogram_like')
          throw new StateVersionError(`cannot load a state of observer '${st.observer}'`);
        loaded.push(st);
      },
      reset: () => void resets++,
    } as unknown as ObserverV1;
    const minMaxState: ObserverState = { observer: 'min_max', version: 1, stats: { min: [-1], max: [1] } };
    expect(loadObserverState(histogramLike, minMaxState)).toBe(false);
    expect(resets).toBe(1);
    expect(seedObserverFromScale(histogramLike, [0.1], -128, 127)).toBe(false);
    expect(loadObserverState(histogramLike, histogramLike.state())).toBe(true);
    expect(loaded).toHaveLength(1);
  });

  it('rejects an extra state of an unknown layout, and a broken state of its own kind', () => {
    const sd = calibrated({}).stateDict();
    const newer = { ...sd, extra: { '': { version: 2, observer: {} } } };
    const err = (() => {
      try {
        new FakeQuantize().loadStateDict(newer);
      } catch (e) {
        return e as StateDictError;
      }
    })();
    expect(err).toBeInstanceOf(StateDictError);
    expect(err!.cause).toBeInstanceOf(StateVersionError);
    expect(err!.message).toMatch(
      /extra state version 2 is not supported \(this build reads version 1\); it was saved by a newer QTK/,
    );
    const broken = {
      ...sd,
      extra: { '': { version: 1, observer: { observer: 'min_max', version: 1, stats: { min: 'x', max: [] } } } },
    };
    expect(() => new FakeQuantize().loadStateDict(broken)).toThrow(/state field 'min' must be an array of numbers/);
    expect(() => new FakeQuantize().loadStateDict({ ...sd, extra: { '': 3 } })).toThrow(
      /must be an object \{ version, observer \}/,
    );
  });
});

describe('deepCopy of a fake-quant', () => {
  it('copies its observer: observing through the copy leaves the original statistics and scale alone', () => {
    const fq = new FakeQuantize({ observer: 'min_max', observerOptions: { averagingConstant: 1 } });
    fq.setFakeQuantState('CALIBRATION');
    fq.call(tensor([-1, 0.5, 1]));
    const before = fq.observer.state();
    const copy = deepCopy(fq);
    expect(copy.observer).not.toBe(fq.observer);
    expect(copy.observer.state()).toEqual(before);
    copy.call(tensor([-4, 4]));
    expect(copy.observer.state()).not.toEqual(before);
    expect(fq.observer.state()).toEqual(before);
    expect(Array.from(fq.scale.values())).toEqual(Array.from(fq.observer.computeQparams().scale));
  });
});

describe('deepCopy of a histogram fake-quant', () => {
  it('copies the histogram too: the copy observes on its own', () => {
    const fq = new FakeQuantize({ observer: 'percentile' });
    fq.setFakeQuantState('CALIBRATION');
    fq.call(randn([200], { generator: new Generator(4) }));
    const before = JSON.stringify(fq.observer.state());
    const copy = deepCopy(fq);
    copy.call(randn([200], { generator: new Generator(5) }).mul(3));
    expect(JSON.stringify(copy.observer.state())).not.toBe(before);
    expect(JSON.stringify(fq.observer.state())).toBe(before);
  });
});
