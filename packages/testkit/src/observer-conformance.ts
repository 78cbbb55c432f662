import { FakeQuantize } from '@qtk/fake-quant';
import {
  FLOAT32_EPS,
  OBSERVER_DTYPES,
  ObserverStateError,
  observers,
  OptionsError,
  QtkError,
  StateVersionError,
  quantRange,
  type ObserverFactoryV1,
  type ObserverState,
  type ObserverV1,
  type QParams,
} from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { channelScaled, concatenated, filled, normalBatches, scaleBits, withNaNs } from './observer-data.js';

/** Options of {@link describeObserverConformance}; every field has a default that suits a data-driven observer. */
export interface ObserverConformanceOptions {
  /** Options every observer of the suite is created with (the observer's required options, e.g. `{ scale: 0.02 }`). */
  readonly options?: Readonly<Record<string, unknown>>;
  /** More invalid options, each with the path its OptionsError must name (the suite always tries the base options). */
  readonly invalidOptions?: readonly { readonly options: Readonly<Record<string, unknown>>; readonly path: string }[];
  /**
   * Whether the observer observes per channel (`chAxis >= 0`). When false the suite checks that `chAxis: 1` is
   * refused with an OptionsError naming `chAxis`. Default false.
   */
  readonly perChannel?: boolean;
  /** Options added for the per-channel checks (chAxis 1 over 3 channels), e.g. `{ scale: [0.1, 1, 10] }`. */
  readonly perChannelOptions?: Readonly<Record<string, unknown>>;
  /**
   * What `merge` promises. `'exact'` (the default, the contract's "as if this one had seen its data too"):
   * two observers that each saw one batch, merged, give bit-identically the qparams of one observer that saw
   * both batches as one tensor. `{ approximate: reason }`: the merged qparams are only checked to be sane, and
   * the reason says why (a moving average over batches cannot be split, ...).
   */
  readonly merge?: 'exact' | { readonly approximate: string };
  /** The qparams do not depend on the data (a configured scale): the robustness checks only ask for sane qparams. */
  readonly dataIndependent?: boolean;
  /**
   * NaN in the data: `'ignored'` (qparams as if the NaN elements were absent), `'rejected'` (a QtkError from
   * observe or computeQparams), or `'ignored-or-rejected'` (the default: either, but never a non-finite scale).
   */
  readonly nan?: 'ignored' | 'rejected' | 'ignored-or-rejected';
  /** Seed of the random batches (default 1234). */
  readonly seed?: number;
}

/** Invalid base options every observer must refuse (observerOptionsSchema's fields) and the path each names. */
export const BASE_INVALID_OPTIONS: readonly { readonly options: Record<string, unknown>; readonly path: string }[] = [
  { options: { dtype: 'qint4' }, path: 'dtype' },
  { options: { dtype: 'qint32' }, path: 'dtype' },
  { options: { chAxis: 1.5 }, path: 'chAxis' },
  { options: { chAxis: -2 }, path: 'chAxis' },
  { options: { quantMin: 0.5 }, path: 'quantMin' },
  { options: { reduceRange: 'yes' }, path: 'reduceRange' },
  { options: { reduceRange: true, quantMin: -10 }, path: 'reduceRange' },
  { options: { isSyncQuantize: true }, path: 'isSyncQuantize' },
  { options: { factoryKwargs: { device: 'cuda' } }, path: 'factoryKwargs' },
];

const SHAPE = [4, 3, 32] as const;

/** What `fn` throws, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** Sane qparams for `dtype` (march-semantics.md §0): finite positive float32 scales >= eps, zero point 0, symmetric range. */
export function expectSaneQparams(q: QParams, dtype: string, channels: number, what: string): void {
  expect(q.zeroPoint, `${what}: zero point`).toBe(0);
  expect(q.dtype, `${what}: dtype`).toBe(dtype);
  expect(q.scale, `${what}: scale is a Float32Array`).toBeInstanceOf(Float32Array);
  expect(q.scale.length, `${what}: one scale per channel`).toBe(channels);
  for (const s of q.scale) {
    expect(Number.isFinite(s) && s >= FLOAT32_EPS, `${what}: scale ${s} is finite and >= float32 eps`).toBe(true);
  }
  const full = quantRange(q.dtype);
  expect(q.quantMin, `${what}: quantMin inside ${dtype}`).toBeGreaterThanOrEqual(full.quantMin);
  expect(q.quantMax, `${what}: quantMax inside ${dtype}`).toBeLessThanOrEqual(full.quantMax);
  expect(q.quantMin < 0 && q.quantMax > 0, `${what}: quantMin < 0 < quantMax`).toBe(true);
}

/**
 * A vitest suite every observer factory (ObserverFactoryV1) runs: options validation, state versioning,
 * state round trip and merge, sane qparams for every observable dtype (and per channel when supported),
 * determinism, and robustness to all-zero, constant, huge, tiny and NaN inputs. Call it at the top level of a
 * test file: `describeObserverConformance(myObserver, { options: { ... } })`.
 */
export function describeObserverConformance(
  factory: ObserverFactoryV1,
  options: ObserverConformanceOptions = {},
): void {
  const base = options.options ?? {};
  const seed = options.seed ?? 1234;
  const create = (extra: Record<string, unknown> = {}): ObserverV1 => factory.create({ ...base, ...extra });
  const data = () => normalBatches(3, SHAPE, seed);
  const channelsOf = (o: ObserverV1): number => (o.options.chAxis >= 0 ? SHAPE[o.options.chAxis]! : 1);
  const observed = (o: ObserverV1, batches: readonly Tensor[]): ObserverV1 => {
    for (const b of batches) o.observe(b);
    return o;
  };

  describe(`observer conformance: ${factory.name}`, () => {
    describe('options', () => {
      it('the factory is apiVersion 1 with a name and an options schema; create() fills in the defaults', () => {
        expect(factory.apiVersion).toBe(1);
        expect(typeof factory.name === 'string' && factory.name.length > 0).toBe(true);
        expect(typeof factory.optionsSchema.safeParse).toBe('function');
        const o = create();
        expect(o.apiVersion).toBe(1);
        expect(o.name).toBe(factory.name);
        expect(o.options.dtype).toBe((base as { dtype?: string }).dtype ?? 'qint8');
        expect(o.options.reduceRange).toBe(false);
        expect(o.options.qscheme).toBe(o.options.chAxis >= 0 ? 'per_channel_symmetric' : 'per_tensor_symmetric');
        expect(factory.optionsSchema.safeParse(base).success).toBe(true);
      });

      it('invalid options fail at create() with an OptionsError naming the path', () => {
        for (const bad of [...BASE_INVALID_OPTIONS, ...(options.invalidOptions ?? [])]) {
          const e = thrown(() => create(bad.options));
          const label = JSON.stringify(bad.options);
          expect(OptionsError.isInstance(e), `${label} is an OptionsError (got ${String(e)})`).toBe(true);
          expect(
            (e as OptionsError).issues.map((i) => i.path),
            `${label} names '${bad.path}'`,
          ).toContain(bad.path);
          expect(factory.optionsSchema.safeParse({ ...base, ...bad.options }).success, `${label}: schema`).toBe(false);
        }
      });

      it('an unknown option is refused, naming it', () => {
        const e = thrown(() => create({ notAnOption: 1 }));
        expect(OptionsError.isInstance(e), `got ${String(e)}`).toBe(true);
        expect((e as Error).message).toContain('notAnOption');
      });

      if (!options.perChannel) {
        it('per channel is refused with an OptionsError naming chAxis (the observer declares per tensor only)', () => {
          const e = thrown(() => create({ chAxis: 1 }));
          expect(OptionsError.isInstance(e), `got ${String(e)}`).toBe(true);
          expect((e as OptionsError).issues.map((i) => i.path)).toContain('chAxis');
        });
      }
    });

    describe('qparams', () => {
      it(
        options.dataIndependent
          ? 'qparams before data: the configured ones, sane'
          : 'no qparams before data: ObserverStateError',
        () => {
          const o = create();
          if (options.dataIndependent) {
            expectSaneQparams(o.computeQparams(), o.options.dtype, channelsOf(o), 'before data');
            return;
          }
          expect(o.hasData()).toBe(false);
          const e = thrown(() => o.computeQparams());
          expect(ObserverStateError.isInstance(e), `got ${String(e)}`).toBe(true);
        },
      );

      for (const dtype of OBSERVER_DTYPES) {
        it(`${dtype}: sane qparams over the dtype's range (and one bit less with reduceRange)`, () => {
          const batches = data();
          const o = observed(create({ dtype }), batches);
          const q = o.computeQparams();
          expectSaneQparams(q, dtype, channelsOf(o), dtype);
          expect([q.quantMin, q.quantMax]).toEqual([quantRange(dtype).quantMin, quantRange(dtype).quantMax]);
          expect(q.chAxis).toBe(o.options.chAxis);
          if (!options.dataIndependent) {
            // the clip lies inside the data's range and is not absurdly small
            let amax = 0;
            for (const b of batches)
              for (const v of Array.from(b.values() as ArrayLike<number>)) amax = Math.max(amax, Math.abs(v));
            const minMax = amax / ((q.quantMax - q.quantMin) / 2);
            for (const s of q.scale) {
              expect(s, `${dtype}: scale within [min/max scale / 64, 1.05 · min/max scale]`).toBeLessThanOrEqual(
                1.05 * minMax,
              );
              expect(s).toBeGreaterThanOrEqual(minMax / 64);
            }
          }
          const r = observed(create({ dtype, reduceRange: true }), batches).computeQparams();
          const full = quantRange(dtype);
          expect([r.quantMin, r.quantMax]).toEqual([full.quantMin >> 1, full.quantMax >> 1]);
          expectSaneQparams(r, dtype, channelsOf(o), `${dtype} reduceRange`);
        });
      }

      if (options.perChannel) {
        it('per channel (chAxis 1): one sane scale per channel, ordered as the channels are scaled', () => {
          const gains = [1, 10, 100];
          const batches = data().map((b) => channelScaled(b, gains));
          for (const dtype of OBSERVER_DTYPES) {
            const q = observed(create({ dtype, chAxis: 1, ...options.perChannelOptions }), batches).computeQparams();
            expectSaneQparams(q, dtype, gains.length, `${dtype} per channel`);
            expect(q.chAxis).toBe(1);
            if (!options.dataIndependent) {
              expect(q.scale[1]!, 'channel 1 (×10) over channel 0').toBeGreaterThan(q.scale[0]! * 5);
              expect(q.scale[2]!, 'channel 2 (×100) over channel 1').toBeGreaterThan(q.scale[1]! * 5);
            }
          }
        });
      }
    });

    describe('state', () => {
      it('state() names the observer and a version, survives JSON, and load() restores bit-identical qparams', () => {
        const o = observed(create(), data());
        const s = JSON.parse(JSON.stringify(o.state())) as ObserverState;
        expect(s.observer).toBe(factory.name);
        expect(Number.isInteger(s.version) && s.version >= 0).toBe(true);
        const p = create();
        p.load(s);
        expect(p.hasData()).toBe(true);
        expect(scaleBits(p.computeQparams().scale)).toEqual(scaleBits(o.computeQparams().scale));
        const fresh = create();
        fresh.load(JSON.parse(JSON.stringify(create().state())) as ObserverState);
        if (!options.dataIndependent) expect(fresh.hasData(), 'the state of an empty observer loads empty').toBe(false);
      });

      it('inside a FakeQuantize (by its registered name), a state dict round trip restores bit-identical qparams', () => {
        if (!observers.has(factory.name)) observers.register(factory);
        const o = create();
        const { dtype, chAxis, quantMin, quantMax, qscheme, reduceRange, ...own } = { ...o.options, ...base };
        const make = () =>
          new FakeQuantize({
            observer: factory.name,
            observerOptions: { ...own, reduceRange, qscheme },
            dtype,
            chAxis,
            numChannels: channelsOf(o),
            quantMin,
            quantMax,
            state: 'CALIBRATION',
          });
        const fq = make();
        for (const b of data()) fq.call(b);
        const back = make();
        back.loadStateDict(fq.stateDict());
        expect(scaleBits(back.observer.computeQparams().scale), 'the observer state travels as extra state').toEqual(
          scaleBits(fq.observer.computeQparams().scale),
        );
        expect(scaleBits(back.calculateQparams().scale)).toEqual(scaleBits(fq.calculateQparams().scale));
      });

      it('a newer state version or another observer kind is refused by load() and merge() with StateVersionError', () => {
        const s = observed(create(), data()).state();
        const bad: ObserverState[] = [
          { ...s, version: s.version + 1 },
          { ...s, observer: `not-${factory.name}` },
        ];
        for (const b of bad) {
          for (const action of ['load', 'merge'] as const) {
            const e = thrown(() => create()[action](b));
            expect(
              StateVersionError.isInstance(e),
              `${action} of ${b.observer} v${b.version}: StateVersionError (got ${String(e)})`,
            ).toBe(true);
          }
        }
      });

      it(
        options.merge && options.merge !== 'exact'
          ? `merge gives sane qparams (not exact: ${options.merge.approximate})`
          : 'merging the states of two observers that each saw one batch equals observing both batches as one',
        () => {
          const [a, b] = data() as [Tensor, Tensor];
          const wa = observed(create(), [a]);
          const wb = observed(create(), [b]);
          wa.merge(JSON.parse(JSON.stringify(wb.state())) as ObserverState);
          const merged = wa.computeQparams();
          expectSaneQparams(merged, wa.options.dtype, channelsOf(wa), 'merged');
          const empty = create();
          empty.merge(wa.state());
          expect(scaleBits(empty.computeQparams().scale), 'merging into an empty observer adopts the state').toEqual(
            scaleBits(merged.scale),
          );
          if (options.merge === undefined || options.merge === 'exact') {
            const all = observed(create(), [concatenated([a, b])]).computeQparams();
            expect(scaleBits(merged.scale), `merged ${merged.scale[0]} vs all ${all.scale[0]}`).toEqual(
              scaleBits(all.scale),
            );
          }
        },
      );
    });

    describe('determinism', () => {
      it('the same batches give bit-identical qparams: in two observers, and again after reset()', () => {
        const batches = data();
        const a = observed(create(), batches);
        const b = observed(create(), batches);
        const qa = scaleBits(a.computeQparams().scale);
        expect(scaleBits(b.computeQparams().scale)).toEqual(qa);
        a.reset();
        if (!options.dataIndependent) expect(a.hasData(), 'reset() forgets the data').toBe(false);
        expect(scaleBits(observed(a, batches).computeQparams().scale)).toEqual(qa);
      });
    });

    describe('robustness', () => {
      const sane = (batches: readonly Tensor[], what: string): QParams => {
        const o = observed(create(), batches);
        const q = o.computeQparams();
        expectSaneQparams(q, o.options.dtype, channelsOf(o), what);
        return q;
      };

      it('all-zero data: a finite scale >= float32 eps', () => {
        sane([filled(SHAPE, 0), filled(SHAPE, 0)], 'all zeros');
      });

      it('constant data: the constant does not quantize to zero', () => {
        for (const c of [3.7, -0.02]) {
          const q = sane([filled(SHAPE, c)], `constant ${c}`);
          if (!options.dataIndependent) {
            expect(Math.abs(c) / q.scale[0]!, `constant ${c} in steps`).toBeGreaterThanOrEqual(1);
          }
        }
      });

      it('huge (1e20) and tiny (1e-30) data: finite scales, the huge one covering the data', () => {
        const huge = sane(normalBatches(2, SHAPE, seed + 1, 1e20), 'huge');
        if (!options.dataIndependent) for (const s of huge.scale) expect(s).toBeGreaterThan(1e15);
        sane(normalBatches(2, SHAPE, seed + 2, 1e-30), 'tiny');
      });

      it(`NaN in the data: ${options.nan ?? 'ignored-or-rejected'}, never a non-finite scale`, () => {
        const { withNaN, without } = withNaNs(normalBatches(1, SHAPE, seed + 3)[0]!, 7);
        const policy = options.nan ?? 'ignored-or-rejected';
        const o = create();
        const e = thrown(() => {
          o.observe(withNaN);
          return o.computeQparams();
        });
        if (e !== undefined) {
          expect(policy, `NaN was rejected (${String(e)})`).not.toBe('ignored');
          expect(QtkError.isInstance(e), `the rejection is a QtkError (got ${String(e)})`).toBe(true);
          return;
        }
        expect(policy, 'NaN was not rejected').not.toBe('rejected');
        const q = o.computeQparams();
        expectSaneQparams(q, o.options.dtype, channelsOf(o), 'NaN data');
        // per tensor, the NaN-free elements flattened are the same data; per channel they are not comparable
        if (o.options.chAxis < 0 && !options.dataIndependent) {
          const clean = observed(create(), [without]).computeQparams();
          expect(scaleBits(q.scale), 'qparams as if the NaN elements were absent').toEqual(scaleBits(clean.scale));
        }
      });
    });
  });
}
