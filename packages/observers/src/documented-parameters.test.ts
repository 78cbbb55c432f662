import { createObserver, OptionsError, StateVersionError, syncObservers } from '@qtk/spec';
import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import './register.js';
import { MixObserver } from './mix.js';
import { MSEObserver } from './mse.js';
import { PercentileObserver } from './percentile.js';
import { batches } from './testing/random-data.js';

/**
 * Every parameter horizon_plugin_pytorch's calibration guide lists per observer ("Observer Parameters
 * Documentation"; fixed_scale from the guide's qconfig example), camelCased, with a value other than
 * the default. kl is covered by its own tests.
 */
// the values the min-max family documents alike, and its two ways of choosing a qscheme
const SHARED = {
  averagingConstant: 0.5,
  dtype: 'qint16',
  quantMin: -100,
  quantMax: 100,
  isSyncQuantize: false,
  factoryKwargs: null,
};
const PER_CHANNEL = { chAxis: 1, qscheme: 'per_channel_symmetric' };
const PER_TENSOR = { chAxis: -1, qscheme: 'per_tensor_symmetric' };
const DOCUMENTED: Record<string, Record<string, unknown>> = {
  min_max: { ...SHARED, ...PER_CHANNEL },
  moving_average_min_max: { ...SHARED, qscheme: 'per_tensor_symmetric', reduceRange: true },
  moving_average_per_channel_min_max: { ...SHARED, ...PER_CHANNEL },
  percentile: { percentile: 99.9, bins: 4096, ...SHARED, ...PER_TENSOR },
  mse: { stride: 5, ...SHARED, ...PER_CHANNEL },
  mix: { ...SHARED, ...PER_TENSOR },
  fixed_scale: { scale: 1 / 2 ** 15, dtype: 'qint16' },
};

describe('documented observer parameters', () => {
  for (const [name, params] of Object.entries(DOCUMENTED)) {
    it(`${name} accepts each documented parameter and keeps its value`, () => {
      for (const [key, value] of Object.entries(params)) {
        // a qscheme must agree with chAxis, so it comes with the table's chAxis
        const o = createObserver(name, {
          [key]: value,
          ...(key === 'qscheme' && 'chAxis' in params ? { chAxis: params.chAxis } : {}),
        });
        const opts = o.options as unknown as Record<string, unknown>;
        if (key === 'reduceRange') expect([opts.reduceRange, opts.quantMin, opts.quantMax]).toEqual([true, -64, 63]);
        else if (key === 'factoryKwargs') expect(opts.factoryKwargs ?? null).toBeNull();
        else expect(opts[key], `${name}.${key}`).toEqual(value);
      }
      // all together, reduceRange apart (it replaces quantMin / quantMax)
      const together = Object.fromEntries(Object.entries(params).filter(([k]) => k !== 'reduceRange'));
      const o = createObserver(name, together);
      for (const b of batches(2, [4, 3, 5], 3)) o.observe(b);
      expect(o.computeQparams()).toMatchObject({
        dtype: params.dtype,
        quantMin: params.quantMin ?? -32768,
        quantMax: params.quantMax ?? 32767,
      });
    });
  }
});

describe('reduceRange, isSyncQuantize, factoryKwargs', () => {
  it('reduceRange quantizes into one bit less (qint8 [-64, 63], qint16 [-16384, 16383])', () => {
    const o = createObserver('moving_average_min_max', { reduceRange: true });
    o.observe(tensor([-1, 6.35]));
    const q = o.computeQparams();
    expect([q.quantMin, q.quantMax]).toEqual([-64, 63]);
    expect(q.scale[0]).toBe(Math.fround(6.35 / 63.5));
    const w = createObserver('moving_average_per_channel_min_max', { reduceRange: true, dtype: 'qint16' });
    w.observe(tensor([1, -2, 3, 4], [2, 2]));
    expect(w.computeQparams()).toMatchObject({ quantMin: -16384, quantMax: 16383 });
    expect(Array.from(w.computeQparams().scale)).toEqual([2, 4].map((m) => Math.fround(m / 16383.5)));
    expect(() => createObserver('min_max', { reduceRange: true, quantMax: 100 })).toThrow(
      /reduceRange.*cannot be combined with quantMin/,
    );
  });

  it('isSyncQuantize true is rejected: QTK trains in one process (false is the default and accepted)', () => {
    for (const name of ['min_max', 'percentile', 'mse', 'mix', 'fixed_scale']) {
      expect(createObserver(name, { isSyncQuantize: false }).options.isSyncQuantize).toBe(false);
      expect(() => createObserver(name, { isSyncQuantize: true })).toThrow(OptionsError);
      expect(() => createObserver(name, { isSyncQuantize: true })).toThrow(
        /isSyncQuantize: QTK trains and calibrates in one process.*syncObservers/,
      );
    }
    // what QTK offers instead: merging states gathered separately
    const data = batches(2, [300], 5);
    const parts = data.map((b) => {
      const o = createObserver('min_max');
      o.observe(b);
      return o;
    });
    syncObservers(parts);
    const lo = Math.min(...data.map((b) => Math.min(...(b.values() as Float32Array))));
    const hi = Math.max(...data.map((b) => Math.max(...(b.values() as Float32Array))));
    expect(parts[1]!.computeQparams().scale[0]).toBe(Math.fround(Math.max(-lo, hi) / 127.5));
  });

  it('factoryKwargs: null is accepted, torch buffer arguments are rejected with the reason', () => {
    expect(() => createObserver('percentile', { factoryKwargs: null })).not.toThrow();
    expect(() => createObserver('percentile', { factoryKwargs: { device: 'cuda' } })).toThrow(
      /factoryKwargs: .*torch's device\/dtype.*nothing to pass/,
    );
  });
});

/** `rangeFrom` of one batch alone: the same observer kind in its all-data mode on that batch only. */
function batchRange(
  make: (o: object) => { observe(x: never): void; range(): { min: number; max: number } },
  b: unknown,
): { min: number; max: number } {
  const o = make({ averagingConstant: null });
  o.observe(b as never);
  return o.range();
}

describe('averagingConstant of the histogram observers (percentile, mix, mse per tensor)', () => {
  const kinds = {
    percentile: (o: object) => new PercentileObserver({ percentile: 99, ...o }),
    mix: (o: object) => new MixObserver(o),
    mse: (o: object) => new MSEObserver({ stride: 3, ...o }),
  };
  const data = batches(3, [2000], 21); // std 1, 1.1, 1.2 with outliers
  for (const [name, make] of Object.entries(kinds)) {
    it(`${name}: the first batch sets the range, each later one moves it by averagingConstant`, () => {
      const r = data.map((b) => batchRange(make, b));
      expect(r[0]).not.toEqual(r[2]);
      for (const c of [0, 0.3, 1]) {
        const o = make({ averagingConstant: c });
        for (const b of data) o.observe(b);
        let min = r[0]!.min;
        let max = r[0]!.max;
        for (const x of r.slice(1)) {
          min += c * (x.min - min);
          max += c * (x.max - max);
        }
        expect(o.range().min).toBeCloseTo(min, 12);
        expect(o.range().max).toBeCloseTo(max, 12);
        expect(o.computeQparams().scale[0]).toBe(Math.fround(Math.max(-o.range().min, o.range().max) / 127.5));
      }
      // 0 keeps the first batch, 1 the latest; null (default) is one histogram of all data
      const first = make({ averagingConstant: 0 });
      const last = make({ averagingConstant: 1 });
      const all = make({});
      for (const b of data)
        [first, last, all].forEach((o) => {
          o.observe(b);
        });
      expect(first.range()).toEqual(r[0]);
      expect(last.range()).toEqual(r[2]);
      const merged = make({ averagingConstant: null });
      for (const b of data) merged.observe(b);
      expect(all.range()).toEqual(merged.range());
      expect(all.range()).not.toEqual(last.range());
    });

    it(`${name}: per-batch state round-trips, merges by min/max, and does not mix with all-data states`, () => {
      const a = make({ averagingConstant: 0.5 });
      const b = make({ averagingConstant: 0.5 });
      a.observe(data[0]!);
      b.observe(data[2]!);
      const copy = make({ averagingConstant: 0.5 });
      copy.load(JSON.parse(JSON.stringify(a.state())));
      expect(copy.range()).toEqual(a.range());
      copy.observe(data[1]!);
      a.observe(data[1]!);
      expect(copy.range()).toEqual(a.range());
      const ra = a.range();
      const rb = b.range();
      a.merge(b.state());
      expect(a.range()).toEqual({ min: Math.min(ra.min, rb.min), max: Math.max(ra.max, rb.max) });
      expect(() => make({}).load(a.state())).toThrow(StateVersionError);
      expect(() => make({}).load(a.state())).toThrow(/give both the same averagingConstant/);
      expect(() => a.merge(make({}).state())).toThrow(/give both the same averagingConstant/);
    });
  }

  it('mse per channel keeps 0.01 when averagingConstant is not given', () => {
    expect(createObserver('mse', { chAxis: 0 }).options).toMatchObject({ averagingConstant: 0.01 });
    expect(createObserver('mse').options).toMatchObject({ averagingConstant: null });
    expect(() => createObserver('percentile', { averagingConstant: 1.5 })).toThrow(/averagingConstant/);
  });
});
