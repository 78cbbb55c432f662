import { createObserver, observers, registerPluginModule } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import './register.js';
import { activations, t } from './testing/random-data.js';

// The fixture package (packages/spec/fixtures/third-party-observer) depends on @qtk/spec only.
describe('a third-party observer', () => {
  it('registers by module name and is used by name next to the built-ins', async () => {
    const plugin = await registerPluginModule('qtk-observer-mean-std', (s) => import(s));
    expect(plugin.name).toBe('qtk-observer-mean-std');
    await registerPluginModule('qtk-observer-mean-std', (s) => import(s)); // same objects: no-op
    expect(observers.names()).toEqual(expect.arrayContaining(['min_max', 'percentile', 'mean_std']));

    const v = activations(10000, 3, 2, 0.01);
    const o = createObserver('mean_std', { stdScale: 3 });
    o.observe(t(v.subarray(0, 4000)));
    const other = createObserver('mean_std', { stdScale: 3 });
    other.observe(t(v.subarray(4000)));
    o.merge(other.state());

    let s = 0;
    let s2 = 0;
    let m = 0;
    for (const x of v) {
      s += x;
      s2 += x * x;
      m = Math.max(m, Math.abs(x));
    }
    const mean = s / v.length;
    const clip = Math.min(m, Math.abs(mean) + 3 * Math.sqrt(s2 / v.length - mean * mean));
    expect(o.computeQparams().scale[0]).toBeCloseTo(Math.fround(clip / 127.5), 9);
    expect(() => createObserver('mean_std', { stdScale: -1 })).toThrow(/stdScale/);
  });

  it('a different object under a taken name is refused', async () => {
    const mod = (await import('qtk-observer-mean-std')) as typeof import('qtk-observer-mean-std');
    expect(() => observers.register({ ...mod.meanStdObserver })).toThrow(/already registered as 'mean_std'/);
  });
});
