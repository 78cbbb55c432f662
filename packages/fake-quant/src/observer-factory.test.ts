// Fake-quants find their observers by name without anything registering the built-ins: importing
// @qtk/fake-quant registers no observer, the default qconfigs work, and a registered observer wins.
import { MinMaxObserver } from '@qtk/observers';
import { type ObserverFactoryV1, observers, RegistryError } from '@qtk/spec';
import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { FakeQuantize, getDefaultQatQconfig, withArgs } from './index.js';
import { observerFactory } from './observer-factory.js';

const X = tensor([-2, 1, 0.5, 3.5]);

describe('observers by name in fake-quant', () => {
  // this file runs in a process of its own (vitest.config.ts): other test files register observers
  it('importing fake-quant and observers registers no observer, and the default qconfig still calibrates', () => {
    expect(observers.names()).toEqual([]);
    const act = getDefaultQatQconfig().activation!();
    act.call(X);
    const reference = new MinMaxObserver({});
    reference.observe(X);
    expect([...act.scale.values()]).toEqual([...reference.computeQparams().scale]);
    expect(act.scale.values()[0]).toBeCloseTo(3.5 / 127.5, 7);
    expect(observers.names()).toEqual([]);
  });

  it('a built-in name finds the built-in (ignoring case); a registered observer under that name wins', () => {
    expect(observerFactory('MSE').name).toBe('mse');
    const fixed: ObserverFactoryV1 = { ...observerFactory('fixed_scale'), name: 'min_max' };
    const wasRegistered = observers.has('min_max');
    const previous = wasRegistered ? observers.get('min_max') : null;
    if (previous) observers.unregister('min_max');
    observers.register(fixed);
    try {
      expect(observerFactory('min_max')).toBe(fixed);
      const act = new FakeQuantize({ observer: 'min_max', observerOptions: { scale: 0.25 } });
      act.call(X);
      expect([...act.scale.values()]).toEqual([0.25]);
    } finally {
      observers.unregister('min_max');
      if (previous) observers.register(previous);
    }
    expect(getDefaultQatQconfig().activation!.options.observer).toBe('min_max');
  });

  it('an unknown name is a RegistryError listing the built-ins with the close one', () => {
    let err: unknown;
    try {
      withArgs({ observer: 'percentil' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RegistryError);
    const e = err as RegistryError;
    expect(e.key).toBe('percentil');
    expect(e.suggestions).toEqual(['percentile']);
    expect(e.message).toMatch(
      /^no observer named 'percentil'; registered: .*min_max.*kl.*fixed_scale.*Did you mean 'percentile'\?$/,
    );
  });
});
