import type { Tensor } from '@qtk/tensor';
import { z } from 'zod';
import type { FactoryV1 } from './options.js';
import { observerDTypeSchema, quantRange, type QuantDType } from './quant-dtype.js';

/** Quantization parameters an observer (or fake-quant) hands to conversion. Symmetric: zero point 0. */
export interface QParams {
  /** One float32 scale per tensor (length 1) or per channel along `chAxis`. */
  readonly scale: Float32Array;
  readonly zeroPoint: 0;
  readonly dtype: QuantDType;
  readonly quantMin: number;
  readonly quantMax: number;
  /** Channel axis of a per-channel scale; -1 for per tensor (horizon_plugin_pytorch's convention). */
  readonly chAxis: number;
}

export const QSCHEMES = ['per_tensor_symmetric', 'per_channel_symmetric'] as const;
export type QScheme = (typeof QSCHEMES)[number];

/**
 * Options every observer accepts (horizon_plugin_pytorch's parameters, camelCase).
 * - `chAxis` -1 observes per tensor; >= 0 per channel along that axis. `qscheme` may be left out and
 *   is then derived from `chAxis`; when given it must agree with it.
 * - `quantMin` / `quantMax` narrow the dtype's range (null = the dtype's own).
 * - `reduceRange`: one bit less than the dtype (qint8 [-64, 63], qint16 [-16384, 16383]); resolved into
 *   `quantMin` / `quantMax`, so it cannot be combined with them.
 * - `isSyncQuantize`: horizon_plugin_pytorch all-reduces statistics across data-parallel workers. QTK
 *   trains and calibrates in one process, so there is nothing to synchronise: only `false` is accepted.
 *   Statistics gathered separately (worker threads, several runs) are combined with `merge(state)` /
 *   `syncObservers`.
 * - `factoryKwargs`: horizon_plugin_pytorch passes these to torch when it creates its min/max buffers
 *   (device, dtype). QTK's statistics are plain arrays, so only null (nothing to pass) is accepted.
 */
export const observerBaseShape = {
  dtype: observerDTypeSchema.default('qint8'),
  chAxis: z.number().int().min(-1).default(-1),
  qscheme: z.enum(QSCHEMES).optional(),
  quantMin: z.number().int().nullable().default(null),
  quantMax: z.number().int().nullable().default(null),
  reduceRange: z.boolean().default(false),
  isSyncQuantize: z
    .boolean()
    .refine((v) => v === false, {
      message:
        'QTK trains and calibrates in one process, so there are no data-parallel workers to synchronise; ' +
        'leave isSyncQuantize false (to combine statistics gathered separately, merge observer states with syncObservers or observer.merge)',
    })
    .default(false),
  factoryKwargs: z
    .unknown()
    .refine((v) => v === null || v === undefined, {
      message:
        "factoryKwargs are torch's device/dtype for horizon_plugin_pytorch's min/max buffers; QTK observers keep their statistics " +
        'in plain arrays in this process, so there is nothing to pass: remove it (or give null)',
    })
    .optional(),
};

interface BaseLike {
  chAxis: number;
  qscheme?: QScheme | undefined;
  dtype?: QuantDType;
  quantMin?: number | null;
  quantMax?: number | null;
  reduceRange?: boolean;
}

/**
 * Rejects `qscheme` disagreeing with `chAxis`, and `reduceRange` combined with `quantMin` / `quantMax`.
 * Use as `.superRefine(checkQscheme).transform(withQscheme)`.
 */
export function checkQscheme(o: BaseLike, ctx: z.RefinementCtx): void {
  if (o.reduceRange && (o.quantMin != null || o.quantMax != null)) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      path: ['reduceRange'],
      message:
        'reduceRange narrows the dtype range by one bit; it cannot be combined with quantMin / quantMax (give one or the other)',
    });
  }
  if (o.qscheme === undefined) return;
  const perChannel = o.qscheme === 'per_channel_symmetric';
  if (perChannel !== o.chAxis >= 0) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      path: ['qscheme'],
      message: perChannel
        ? 'per_channel_symmetric needs chAxis >= 0 (the channel axis)'
        : `per_tensor_symmetric needs chAxis -1, got ${o.chAxis}`,
    });
  }
}

/** Fills in `qscheme` from `chAxis` and resolves `reduceRange` into `quantMin` / `quantMax`. */
export function withQscheme<T extends BaseLike>(o: T): T & { qscheme: QScheme } {
  const out = { ...o, qscheme: o.chAxis >= 0 ? ('per_channel_symmetric' as const) : ('per_tensor_symmetric' as const) };
  if (o.reduceRange) {
    // one bit less, as torch's reduce_range: an arithmetic shift halves both ends (-128 -> -64, 127 -> 63)
    const full = quantRange(o.dtype ?? 'qint8');
    out.quantMin = full.quantMin >> 1;
    out.quantMax = full.quantMax >> 1;
  }
  return out;
}

/** Builds an observer's options schema: the base options plus its own, strict, qscheme resolved. */
export function observerOptionsSchema<S extends z.ZodRawShape>(extra: S) {
  const obj = z.object({ ...observerBaseShape, ...extra }).strict();
  type Out = z.output<typeof obj> & { chAxis: number; qscheme?: QScheme | undefined };
  return obj.superRefine((o, ctx) => checkQscheme(o as Out, ctx)).transform((o) => withQscheme(o as Out));
}

export const observerBaseOptionsSchema = observerOptionsSchema({});
export type ObserverBaseOptions = z.output<typeof observerBaseOptionsSchema>;

/** JSON-safe value (observer state travels between workers and into checkpoints). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * An observer's serialized statistics. `observer` is the registry name of its kind, `version`
 * the version of that kind's state layout; `load` / `merge` reject other kinds and versions.
 */
export interface ObserverState {
  readonly observer: string;
  readonly version: number;
  readonly stats: { readonly [key: string]: JsonValue };
}

export const observerStateSchema = z.object({
  observer: z.string().min(1),
  version: z.number().int().nonnegative(),
  stats: z.record(z.unknown()),
});

/** Contract of an observer instance. */
export interface ObserverV1 {
  readonly apiVersion: 1;
  /** Registry name of this observer's kind ('min_max', 'percentile', ...). */
  readonly name: string;
  /** Validated options (defaults filled in). */
  readonly options: Readonly<ObserverBaseOptions>;
  /** Accumulates statistics of `x` (any float tensor; per-channel observers read `chAxis`). */
  observe(x: Tensor): void;
  /**
   * Optional, for a per-tensor observer whose statistics of a batch are only its smallest and largest value (the
   * min-max family): accumulates a batch given by those two numbers, as observe() of the batch would. A
   * calibration engine that runs the model elsewhere then reduces each value there instead of copying it out.
   * NaN elements are left out of the range, as observe() leaves them out; a range of NaN is no data.
   */
  observeRange?(min: number, max: number): void;
  /** True once any data (or a loaded / merged state with data) has been seen. */
  hasData(): boolean;
  /** Scales from the statistics so far; throws ObserverStateError before any data. */
  computeQparams(): QParams;
  state(): ObserverState;
  load(state: ObserverState): void;
  /** Folds another observer's state (same kind and options) in, as if this one had seen its data too. */
  merge(other: ObserverState): void;
  reset(): void;
}

/** What the observer registry holds: a named, versioned factory. */
export type ObserverFactoryV1<O = unknown> = FactoryV1<ObserverV1, O>;
