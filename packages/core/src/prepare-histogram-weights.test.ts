import '@qtk/march-bayes';
import { getDefaultQconfig, qconfig, withArgs } from '@qtk/fake-quant';
import { Conv2d, Linear, Module, QuantStub } from '@qtk/nn';
import { OptionsError, QConfigError } from '@qtk/spec';
import { Generator, randn, type Tensor } from '@qtk/tensor';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareQatFx, type QatModule, resetMarch, setMarch } from './index.js';

class Net extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(2, 3, 1, { generator: new Generator(3) });
  readonly fc = new Linear(3, 2, { generator: new Generator(4) });
  forward(x: Tensor): Tensor {
    return this.fc.call(this.conv.call(this.quant.call(x)).mean([2, 3]));
  }
}

beforeEach(() => setMarch('bayes'));
afterEach(() => resetMarch());

describe('histogram observers on weights (per channel)', () => {
  it('prepare rejects percentile / mix / kl weight fake-quants made per channel, naming the module and the observer', () => {
    for (const observer of ['percentile', 'mix', 'kl']) {
      // bound without an axis: prepare gives the weight its channel axis when it creates the fake-quant
      const qc = qconfig(withArgs(), withArgs({ observer }));
      let err: unknown;
      try {
        prepareQatFx(new Net(), { global: qc });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(QConfigError);
      expect((err as QConfigError).module).toBe('conv');
      expect((err as QConfigError).cause).toBeInstanceOf(OptionsError);
      expect((err as Error).message).toMatch(
        new RegExp(
          `^qconfig of module 'conv': invalid options for FakeQuantize \\(observer '${observer}'\\): chAxis: observer '${observer}' keeps one histogram per tensor and cannot observe per channel; per channel use min_max or mse, or set chAxis -1`,
        ),
      );
    }
  });

  it("getDefaultQconfig's per-channel weights with such an observer fail already when the qconfig is made", () => {
    expect(() => getDefaultQconfig({ weightObserver: 'percentile' })).toThrow(
      /invalid options for getDefaultQconfig weight \(observer 'percentile'\): chAxis: .*cannot observe per channel/,
    );
  });

  it('the same observers work per tensor (chAxis -1), and mse per channel', () => {
    const perTensor = prepareQatFx(new Net(), {
      global: getDefaultQconfig({ weightObserver: 'percentile', weightQkwargs: { chAxis: -1, percentile: 99 } }),
    });
    const mse = prepareQatFx(new Net(), { global: qconfig(withArgs(), withArgs({ observer: 'mse', chAxis: 0 })) });
    const x = randn([2, 2, 4, 4], { generator: new Generator(9) });
    perTensor.call(x);
    mse.call(x);
    const w = (gm: Module, name: string) => (gm.getSubmodule(name) as QatModule).weightFakeQuant!;
    expect(w(perTensor, 'conv').observer.name).toBe('percentile');
    expect(w(perTensor, 'conv').calculateQparams().scale).toHaveLength(1);
    expect(w(mse, 'conv').observer.name).toBe('mse');
    expect(w(mse, 'conv').calculateQparams().scale).toHaveLength(3);
    expect(w(mse, 'fc').calculateQparams().scale).toHaveLength(2);
  });
});
