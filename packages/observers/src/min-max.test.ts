import { FLOAT32_EPS, ObserverStateError, OptionsError, StateVersionError } from '@qtk/spec';
import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { MinMaxObserver, MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver } from './min-max.js';
import { batches } from './testing/random-data.js';

function arrMin(v: ArrayLike<number>): number {
  let m = Infinity;
  for (let i = 0; i < v.length; i++) m = Math.min(m, v[i]!);
  return m;
}
function arrMax(v: ArrayLike<number>): number {
  let m = -Infinity;
  for (let i = 0; i < v.length; i++) m = Math.max(m, v[i]!);
  return m;
}

describe('MinMaxObserver (per tensor)', () => {
  it('moving average of batch min/max, first batch sets them (seed semantics)', () => {
    const bs = batches(5, [4, 50], 1);
    const o = new MinMaxObserver({ averagingConstant: 0.3 });
    let lo = 0;
    let hi = 0;
    bs.forEach((b, i) => {
      o.observe(b);
      const bl = arrMin(b.values());
      const bh = arrMax(b.values());
      lo = i === 0 ? bl : lo + 0.3 * (bl - lo);
      hi = i === 0 ? bh : hi + 0.3 * (bh - hi);
    });
    const q = o.computeQparams();
    expect(q.scale).toHaveLength(1);
    expect(q.scale[0]).toBe(Math.fround(Math.max(-lo, hi) / 127.5));
    expect(q).toMatchObject({ zeroPoint: 0, dtype: 'qint8', quantMin: -128, quantMax: 127, chAxis: -1 });
    expect(o.options.averagingConstant).toBe(0.3);
    expect(new MinMaxObserver().options.averagingConstant).toBe(0.01);
  });

  it('observeRange of each batch range gives the state observe() gives, NaN left out; per channel refuses it', () => {
    const bs = batches(4, [3, 40], 7);
    for (const o of [new MinMaxObserver({ averagingConstant: 0.2 }), new MovingAverageMinMaxObserver()]) {
      const byRange = new (o.constructor as typeof MinMaxObserver)(o.options);
      for (const b of bs) {
        o.observe(b);
        byRange.observeRange(arrMin(b.values()), arrMax(b.values()));
      }
      byRange.observeRange(Number.NaN, Number.NaN);
      expect(byRange.state()).toEqual(o.state());
      expect(byRange.computeQparams()).toEqual(o.computeQparams());
    }
    expect(() => new MovingAveragePerChannelMinMaxObserver().observeRange(-1, 1)).toThrow(/per channel \(chAxis 0\)/);
  });

  it('averagingConstant 0 keeps the first batch, 1 the last', () => {
    const a = tensor([-1, 2], [2]);
    const b = tensor([-4, 3], [2]);
    const first = new MinMaxObserver({ averagingConstant: 0 });
    const last = new MinMaxObserver({ averagingConstant: 1 });
    for (const o of [first, last]) {
      o.observe(a);
      o.observe(b);
    }
    expect(first.computeQparams().scale[0]).toBe(Math.fround(2 / 127.5));
    expect(last.computeQparams().scale[0]).toBe(Math.fround(4 / 127.5));
  });

  it('qint16 and a narrowed range', () => {
    const o = new MinMaxObserver({ dtype: 'qint16' });
    o.observe(tensor([-3, 1], [2]));
    expect(o.computeQparams()).toMatchObject({ quantMin: -32768, quantMax: 32767 });
    expect(o.computeQparams().scale[0]).toBe(Math.fround(3 / 32767.5));
    const n = new MinMaxObserver({ quantMin: -127, quantMax: 127 });
    n.observe(tensor([-3, 1], [2]));
    expect(n.computeQparams().scale[0]).toBe(Math.fround(3 / 127));
  });

  it('all zeros give float32 eps; no data is an error', () => {
    const o = new MinMaxObserver();
    expect(() => o.computeQparams()).toThrow(ObserverStateError);
    o.observe(tensor(new Float32Array(10), [10]));
    expect(o.computeQparams().scale[0]).toBe(FLOAT32_EPS);
    o.observe(tensor(new Float32Array(0), [0]));
    o.observe(tensor([NaN, NaN], [2]));
    expect(o.computeQparams().scale[0]).toBe(FLOAT32_EPS);
    const nan = new MinMaxObserver();
    nan.observe(tensor([NaN], [1]));
    expect(nan.hasData()).toBe(false);
    expect(o.hasData()).toBe(true);
    o.reset();
    expect(o.hasData()).toBe(false);
  });

  it('merge synchronises workers: min of minima, max of maxima', () => {
    const [a, b] = batches(2, [100], 7);
    const wa = new MinMaxObserver();
    const wb = new MinMaxObserver();
    wa.observe(a!);
    wb.observe(b!);
    wa.merge(wb.state());
    // one batch per worker: identical to observing all the data as one batch
    const all = new MinMaxObserver();
    const joined = new Float32Array(200);
    joined.set(a!.values() as Float32Array);
    joined.set(b!.values() as Float32Array, 100);
    all.observe(tensor(joined, [200]));
    expect(wa.computeQparams()).toEqual(all.computeQparams());
    // merging into an empty observer adopts the other's statistics
    const empty = new MinMaxObserver();
    empty.merge(wa.state());
    expect(empty.computeQparams()).toEqual(all.computeQparams());
  });

  it('state round-trips through JSON; wrong kinds and versions are rejected', () => {
    const o = new MinMaxObserver({ averagingConstant: 0.5 });
    for (const b of batches(3, [30], 3)) o.observe(b);
    const s = JSON.parse(JSON.stringify(o.state()));
    expect(s).toMatchObject({ observer: 'min_max', version: 1 });
    const p = new MinMaxObserver({ averagingConstant: 0.5 });
    p.load(s);
    expect(p.computeQparams()).toEqual(o.computeQparams());
    expect(() => p.load({ ...s, version: 99 })).toThrow(StateVersionError);
    expect(() => p.load({ ...s, observer: 'percentile' })).toThrow(/state of observer 'percentile'/);
    const empty = new MinMaxObserver();
    empty.load(new MinMaxObserver().state());
    expect(empty.hasData()).toBe(false);
  });

  it('rejects bad options with a path', () => {
    expect(() => new MinMaxObserver({ averagingConstant: 2 })).toThrow(OptionsError);
    expect(() => new MinMaxObserver({ averagingConstant: 2 })).toThrow(/averagingConstant/);
    expect(() => new MinMaxObserver({ dtype: 'qint4' })).toThrow(/dtype/);
    expect(() => new MovingAverageMinMaxObserver({ chAxis: 0 })).toThrow(/per tensor/);
  });
});

describe('per-channel min/max', () => {
  it('matches naive loops along any axis', () => {
    const [x] = batches(1, [2, 3, 4, 5], 11);
    const v = x!.values();
    for (const ax of [0, 1, 3]) {
      const o = new MinMaxObserver({ chAxis: ax });
      o.observe(x!);
      const C = x!.shape[ax]!;
      const lo = new Array(C).fill(Infinity);
      const hi = new Array(C).fill(-Infinity);
      for (let a = 0; a < 2; a++)
        for (let b = 0; b < 3; b++)
          for (let c = 0; c < 4; c++)
            for (let d = 0; d < 5; d++) {
              const ch = [a, b, c, d][ax]!;
              const val = v[((a * 3 + b) * 4 + c) * 5 + d]!;
              lo[ch] = Math.min(lo[ch], val);
              hi[ch] = Math.max(hi[ch], val);
            }
      const q = o.computeQparams();
      expect(q.chAxis).toBe(ax);
      expect(o.options.qscheme).toBe('per_channel_symmetric');
      expect(Array.from(q.scale)).toEqual(lo.map((l, i) => Math.fround(Math.max(-l, hi[i]) / 127.5)));
    }
  });

  it('moving average per channel; chAxis 0 by default; channel count must stay', () => {
    const o = new MovingAveragePerChannelMinMaxObserver({ averagingConstant: 0.5 });
    expect(o.options.chAxis).toBe(0);
    o.observe(tensor([-1, 1, -2, 2], [2, 2]));
    o.observe(tensor([-3, 3, -2, 0], [2, 2]));
    expect(o.minMax!.min).toEqual(Float64Array.from([-2, -2]));
    expect(o.minMax!.max).toEqual(Float64Array.from([2, 1]));
    expect(() => o.observe(tensor([1, 2, 3], [3, 1]))).toThrow(/3 channels/);
    expect(() => new MinMaxObserver({ chAxis: 4 }).observe(tensor([1], [1]))).toThrow(/out of range/);
    const m = new MovingAveragePerChannelMinMaxObserver();
    m.observe(tensor([5, -5, 1, 1], [2, 2]));
    o.merge(m.state());
    expect(o.minMax!.max).toEqual(Float64Array.from([5, 1]));
    expect(() => new MinMaxObserver().merge(o.state())).toThrow(/per-tensor observer/);
    const family = new MinMaxObserver({ chAxis: 0 });
    family.load(o.state());
    expect(family.computeQparams().scale).toEqual(o.computeQparams().scale);
    family.setRange([-1, -2], [1, 4]);
    expect(Array.from(family.computeQparams().scale)).toEqual([Math.fround(1 / 127.5), Math.fround(4 / 127.5)]);
  });
});
