import { describe, expect, it } from 'vitest';
import { FixedScaleObserver } from './fixed-scale.js';
import { batches } from './testing/random-data.js';

describe('FixedScaleObserver', () => {
  it('returns its scale whatever it observes', () => {
    const o = new FixedScaleObserver({ scale: 1 / 128 });
    expect(o.hasData()).toBe(true);
    for (const b of batches(2, [10], 1)) o.observe(b);
    expect(o.computeQparams()).toEqual({
      scale: Float32Array.from([1 / 128]),
      zeroPoint: 0,
      dtype: 'qint8',
      quantMin: -128,
      quantMax: 127,
      chAxis: -1,
    });
    expect(new FixedScaleObserver().computeQparams().scale[0]).toBe(1);
  });

  it('per channel, state, merge checks', () => {
    const o = new FixedScaleObserver({ scale: [0.5, 0.25], chAxis: 0, dtype: 'qint16' });
    expect(Array.from(o.computeQparams().scale)).toEqual([0.5, 0.25]);
    expect(o.computeQparams().quantMax).toBe(32767);
    const p = new FixedScaleObserver({ scale: [1, 1], chAxis: 0 });
    p.load(JSON.parse(JSON.stringify(o.state())));
    expect(Array.from(p.computeQparams().scale)).toEqual([0.5, 0.25]);
    o.merge(p.state());
    expect(() => o.merge(new FixedScaleObserver({ scale: [1, 2], chAxis: 0 }).state())).toThrow(
      /cannot merge a fixed scale/,
    );
    expect(() => new FixedScaleObserver({ scale: [1, 2] })).toThrow(/one number/);
    expect(() => new FixedScaleObserver({ scale: 0 })).toThrow(/scale/);
  });
});
