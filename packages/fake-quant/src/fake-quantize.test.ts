import { Linear, Module, type StateDict } from '@qtk/nn';
import { fakeQuants, scaleFromRange } from '@qtk/spec';
import { sum, tensor, type Tensor, type Tensor as T } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import {
  defaultCalibOutQconfig,
  defaultCalibQconfig,
  defaultLsqQconfig,
  defaultQat16bitQconfig,
  defaultQatOutQconfig,
  defaultQatQconfig,
  getDefaultQconfig,
  FakeQuantize,
  namedFakeQuants,
  setDefaultRounding,
  setFakeQuantize,
  withArgs,
} from './index.js';

const s127 = (m: number) => scaleFromRange(-m, m, 'qint8');

describe('FakeQuantize states', () => {
  it('CALIBRATION observes and passes the value through unquantized', () => {
    const fq = new FakeQuantize({ state: 'CALIBRATION', observerOptions: { averagingConstant: 1 } });
    const x = tensor([0.1234, -2.55, 1]);
    expect(fq.forward(x)).toBe(x);
    expect(fq.calculateQparams().scale[0]).toBe(s127(2.55));
  });

  it('VALIDATION freezes the observer and fake-quantizes with the calibrated scale', () => {
    const fq = new FakeQuantize({ state: 'CALIBRATION' });
    fq.forward(tensor([-1.275, 1]));
    const s = fq.calculateQparams().scale[0]!;
    fq.setFakeQuantState('VALIDATION');
    const y = fq.forward(tensor([0.1234, 50]));
    expect(fq.calculateQparams().scale[0]).toBe(s);
    expect(y.toArray()).toEqual([Math.fround(Math.floor(0.1234 / s + 0.5) * s), Math.fround(127 * s)]);
  });

  it('applyWithoutObserving: the identity while calibrating or unobserved, else the scale of what forward observed', () => {
    const fq = new FakeQuantize({ state: 'CALIBRATION', observerOptions: { averagingConstant: 1 } });
    const big = tensor([40, -40]);
    expect(fq.applyWithoutObserving(big)).toBe(big); // not observed yet
    fq.forward(tensor([-1.275, 1]));
    expect(fq.applyWithoutObserving(big)).toBe(big); // calibrating: passes through without observing
    const s = fq.calculateQparams().scale[0]!;
    expect(s).toBe(s127(1.275));
    for (const state of ['QAT', 'VALIDATION'] as const) {
      fq.setFakeQuantState(state);
      expect(fq.applyWithoutObserving(tensor([0.1234, 50])).toArray()).toEqual([
        Math.fround(Math.floor(0.1234 / s + 0.5) * s),
        Math.fround(127 * s),
      ]);
      expect(fq.calculateQparams().scale[0]).toBe(s); // 50 was not observed, even in QAT
    }
  });

  it('QAT updates the observer and fake-quantizes', () => {
    const fq = new FakeQuantize({ observerOptions: { averagingConstant: 1 } });
    fq.forward(tensor([-1, 1]));
    const y = fq.forward(tensor([-2, 0.5]));
    const s = s127(2);
    expect(fq.calculateQparams().scale[0]).toBe(s);
    // -2 / s = -127.5 rounds half up to -127
    expect(y.toArray()).toEqual([Math.fround(-127 * s), Math.fround(Math.floor(0.5 / s + 0.5) * s)]);
  });

  it('the global rounding applies when the module sets none', () => {
    const fq = new FakeQuantize({ observer: 'fixed_scale', observerOptions: { scale: 1 }, state: 'VALIDATION' });
    try {
      setDefaultRounding('half_even');
      expect(fq.forward(tensor([0.5, 1.5, 2.5])).toArray()).toEqual([0, 2, 2]);
    } finally {
      setDefaultRounding('half_up');
    }
    expect(fq.forward(tensor([0.5, 1.5, 2.5])).toArray()).toEqual([1, 2, 3]);
  });

  it('per-channel weight fake-quant: one scale per output channel, kept in the state dict', () => {
    const w = tensor([1, -2, 0.5, 0.25, 4, -8], [3, 2]);
    const fq = new FakeQuantize({ chAxis: 0, numChannels: 3, state: 'VALIDATION' });
    fq.forward(w);
    expect(Array.from(fq.calculateQparams().scale)).toEqual([s127(2), s127(0.5), s127(8)]);
    const copy = new FakeQuantize({ chAxis: 0, numChannels: 3, state: 'VALIDATION' });
    copy.loadStateDict(fq.stateDict() as StateDict);
    expect(copy.isInitialized).toBe(true);
    expect(Array.from(copy.calculateQparams().scale)).toEqual(Array.from(fq.calculateQparams().scale));
  });

  it('LSQ: scale initialised by the observer, then learned with gradient scale 1/sqrt(numel·qmax)', () => {
    const fq = new FakeQuantize({ learnable: true, observerOptions: { averagingConstant: 1 } });
    const x = tensor([0.3, -1, 0.77, 1.27]);
    fq.forward(x);
    const s = fq.calculateQparams().scale[0]!;
    expect(s).toBe(s127(1.27));
    fq.forward(tensor([100, -100])); // no longer observed
    expect(fq.calculateQparams().scale[0]).toBe(s);
    const y = fq.forward(x);
    sum(y).backward();
    const lsq = x.toArray().reduce((a, v) => {
      const r = Math.floor(v / s + 0.5);
      return a + (r > 127 ? 127 : r < -128 ? -128 : r - v / s);
    }, 0);
    expect((fq.scale as Tensor).grad!.item()).toBeCloseTo(lsq / Math.sqrt(4 * 127), 5);
  });
});

class Two extends Module {
  readonly a = new FakeQuantize();
  readonly inner = new Linear(2, 2);
  readonly b = defaultCalibQconfig.activation!();
  forward(x: T): T {
    return this.b.call(this.inner.call(this.a.call(x)));
  }
}

describe('setFakeQuantize and qconfigs', () => {
  it('sets every fake-quant in the tree', () => {
    const m = new Two();
    expect(setFakeQuantize(m, 'VALIDATION')).toBe(2);
    expect(namedFakeQuants(m).map(([n, f]) => [n, f.fakeQuantState])).toEqual([
      ['a', 'VALIDATION'],
      ['b', 'VALIDATION'],
    ]);
    expect(() => setFakeQuantize(m, 'TRAIN' as never)).toThrow(/unknown state/);
  });

  it('withArgs binds and merges options', () => {
    const f = withArgs({ observer: 'percentile', observerOptions: { percentile: 99.9 } }).withArgs({
      observerOptions: { bins: 512 },
      dtype: 'qint16',
    });
    const fq = f();
    expect(fq.options.observer).toBe('percentile');
    expect(fq.observer.options).toMatchObject({ percentile: 99.9, bins: 512, dtype: 'qint16' });
    expect(fq.quantMax).toBe(32767);
    expect(() => withArgs({ dtype: 'qint4' as never })).toThrow();
  });

  it("the default qconfigs follow horizon_plugin_pytorch's shapes", () => {
    expect(defaultQatQconfig.activation!().options).toMatchObject({ chAxis: -1, dtype: 'qint8', learnable: false });
    expect(defaultQatQconfig.weight!({ numChannels: 4 }).options).toMatchObject({ chAxis: 0, dtype: 'qint8' });
    expect(defaultQatOutQconfig.activation).toBeNull();
    expect(defaultCalibOutQconfig.activation).toBeNull();
    expect(defaultCalibQconfig.activation!().fakeQuantState).toBe('CALIBRATION');
    expect(defaultLsqQconfig.activation!().kind).toBe('lsq');
    expect(defaultQat16bitQconfig.activation!().dtype).toBe('qint16');
    expect(defaultQat16bitQconfig.weight!().dtype).toBe('qint8');
    const q = getDefaultQconfig('fake_quant', null, 'kl', 'min_max', { observerOptions: { bins: 1024 } });
    expect(q.weight).toBeNull();
    expect(q.activation!().observer.name).toBe('kl');
    expect(() => getDefaultQconfig('pact' as never)).toThrow(/not one of/);
  });

  it('registers fake_quantize and lsq', () => {
    expect(fakeQuants.get('lsq').create({}).kind).toBe('lsq');
    expect(fakeQuants.get('fake_quantize').create({}).kind).toBe('fake_quantize');
  });
});
