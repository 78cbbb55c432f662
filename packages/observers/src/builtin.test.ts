import { OptionsError, createObserver, observers } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import { builtinObservers, registerBuiltinObservers } from './builtin.js';
import './register.js';
import { batches } from './testing/random-data.js';

const NAMES = [
  'min_max',
  'moving_average_min_max',
  'moving_average_per_channel_min_max',
  'percentile',
  'mse',
  'kl',
  'mix',
  'fixed_scale',
];

describe('built-in observers in the registry', () => {
  it('are registered by name on import, idempotently', () => {
    for (const n of NAMES) expect(observers.has(n)).toBe(true);
    registerBuiltinObservers();
    expect(observers.list().filter((f) => NAMES.includes(f.name))).toHaveLength(NAMES.length);
    expect(builtinObservers.map((f) => f.name)).toEqual(NAMES);
  });

  it('each runs the contract: observe, qparams, state round trip, merge, reset', () => {
    const data = batches(3, [4, 64], 8);
    for (const n of NAMES) {
      const opts = n === 'moving_average_per_channel_min_max' ? {} : n === 'fixed_scale' ? { scale: 0.02 } : {};
      const o = createObserver(n, opts);
      expect(o.apiVersion).toBe(1);
      expect(o.name).toBe(n);
      for (const b of data) o.observe(b);
      const q = o.computeQparams();
      expect(q.zeroPoint).toBe(0);
      expect(q.scale.length).toBe(n === 'moving_average_per_channel_min_max' ? 4 : 1);
      for (const s of q.scale) expect(s).toBeGreaterThan(0);
      const s = JSON.parse(JSON.stringify(o.state()));
      expect(s.observer).toBe(n);
      expect(typeof s.version).toBe('number');
      const p = createObserver(n, opts);
      p.load(s);
      expect(p.computeQparams()).toEqual(q);
      p.merge(s);
      expect(p.computeQparams().scale.length).toBe(q.scale.length);
      o.reset();
      if (n !== 'fixed_scale') expect(o.hasData()).toBe(false);
    }
  });

  it('invalid options fail at creation with the zod path', () => {
    expect(() => createObserver('percentile', { bins: 3.5 })).toThrow(OptionsError);
    expect(() => createObserver('kl', { bins: 'many' })).toThrow(/bins/);
    expect(() => createObserver('min_max', { averagingconstant: 0.1 })).toThrow(/Unrecognized key/);
    expect(() => createObserver('nope')).toThrow(/registered: .*min_max.*percentile/);
  });
});

describe('syncObservers', () => {
  it('leaves every worker with the statistics of all (histograms added once)', async () => {
    const { syncObservers } = await import('@qtk/spec');
    const data = batches(3, [500], 77);
    for (const n of ['min_max', 'percentile', 'kl', 'mse']) {
      // kl in its all-data mode (by default it searches each batch and moving-averages, like min_max)
      const options = n === 'kl' ? { updateInterval: null } : {};
      const workers = data.map((b) => {
        const o = createObserver(n, options);
        o.observe(b);
        return o;
      });
      syncObservers(workers);
      const q = workers[0]!.computeQparams();
      for (const w of workers) expect(w.computeQparams()).toEqual(q);
      if (n !== 'min_max') {
        const one = createObserver(n, options);
        for (const b of data) one.observe(b);
        expect(q).toEqual(one.computeQparams());
      }
    }
  });
});
