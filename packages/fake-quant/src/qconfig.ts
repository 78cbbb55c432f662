import { fakeQuants, QConfigError, type FakeQuantFactoryV1, type FakeQuantV1 } from '@qtk/spec';
import type { z } from 'zod';
import { checkFakeQuantOptions, nestFakeQuantKwargs, type FakeQuantKwargs } from './fake-quant-kwargs.js';
import { FakeQuantize, fakeQuantizeOptionsSchema, type FakeQuantizeOptions } from './fake-quantize.js';

/** A factory of fake-quant modules with bound options (horizon_plugin_pytorch's `FakeQuantize.with_args(...)`). */
export interface FakeQuantFactory {
  /** A FakeQuantize with `overrides` (flat or nested) merged over the bound options. */
  (overrides?: FakeQuantKwargs): FakeQuantize;
  /** The bound options, nested (observer options under `observerOptions`). */
  readonly options: Readonly<FakeQuantizeOptions>;
  /** A new factory with these options merged over the bound ones (observerOptions merged too). */
  withArgs(options: FakeQuantKwargs): FakeQuantFactory;
}

function merge(a: FakeQuantizeOptions, b: FakeQuantizeOptions): FakeQuantizeOptions {
  const out = { ...a, ...b };
  if (a.observerOptions || b.observerOptions) out.observerOptions = { ...a.observerOptions, ...b.observerOptions };
  return out;
}

/**
 * `FakeQuantize.with_args`: binds options; call the result to create a module. Takes
 * horizon_plugin_pytorch's flat form, the observer's options next to the FakeQuantize ones
 * (`withArgs({ observer: 'percentile', dtype: 'qint8', averagingConstant: 0, percentile: 99.99 })`), or
 * the nested `observerOptions` form. Everything is checked here against FakeQuantize's and the
 * observer's schemas (OptionsError naming the option and the observer), and again on creation, when
 * prepare's overrides (a weight's `chAxis`, ...) are known.
 */
export function withArgs(options: FakeQuantKwargs = {}): FakeQuantFactory {
  return withArgsAt('withArgs', options);
}

/** withArgs whose errors say `where` the options came from (getDefaultQconfig's activation / weight). */
export function withArgsAt(where: string, options: FakeQuantKwargs): FakeQuantFactory {
  return bind(nestFakeQuantKwargs(options, where), where);
}

function bind(options: FakeQuantizeOptions, where = 'withArgs'): FakeQuantFactory {
  checkFakeQuantOptions(options, where);
  const f = ((overrides: FakeQuantKwargs = {}) => {
    const o = merge(options, nestFakeQuantKwargs(overrides, 'FakeQuantize'));
    checkFakeQuantOptions(o, 'FakeQuantize');
    return new FakeQuantize(o);
  }) as FakeQuantFactory;
  Object.defineProperty(f, 'options', { value: Object.freeze({ ...options }) });
  Object.defineProperty(f, 'withArgs', {
    value: (more: FakeQuantKwargs) => bind(merge(options, nestFakeQuantKwargs(more, 'withArgs'))),
  });
  return f;
}

/** `{ activation, weight }`: factories for a module's output and weight fake-quants; null = none ("out" qconfigs, float). */
export interface QConfig {
  readonly activation: FakeQuantFactory | null;
  readonly weight: FakeQuantFactory | null;
}

export function qconfig(activation: FakeQuantFactory | null, weight: FakeQuantFactory | null): QConfig {
  for (const [what, f] of [
    ['activation', activation],
    ['weight', weight],
  ] as const) {
    if (f !== null && typeof f !== 'function') {
      throw new QConfigError(`QConfig.${what} must be a factory from withArgs(...) (or null), not a module instance`);
    }
  }
  return Object.freeze({ activation, weight });
}

/** The registry entries ('fake_quantize', 'lsq') so plugins and options can name them. */
export const fakeQuantizeFactory: FakeQuantFactoryV1<FakeQuantizeOptions> = Object.freeze({
  apiVersion: 1 as const,
  name: 'fake_quantize',
  description: 'observer-driven fake quantization with a straight-through gradient',
  optionsSchema: fakeQuantizeOptionsSchema as unknown as z.ZodType<FakeQuantizeOptions, z.ZodTypeDef, unknown>,
  create: (o?: unknown): FakeQuantV1 => new FakeQuantize((o ?? {}) as FakeQuantizeOptions),
});
export const lsqFactory: FakeQuantFactoryV1<FakeQuantizeOptions> = Object.freeze({
  apiVersion: 1 as const,
  name: 'lsq',
  description: 'LSQ: learnable scale, initialised by the observer',
  optionsSchema: fakeQuantizeOptionsSchema as unknown as z.ZodType<FakeQuantizeOptions, z.ZodTypeDef, unknown>,
  create: (o?: unknown): FakeQuantV1 => new FakeQuantize({ ...((o ?? {}) as FakeQuantizeOptions), learnable: true }),
});

export function registerBuiltinFakeQuants(): void {
  fakeQuants.register(fakeQuantizeFactory);
  fakeQuants.register(lsqFactory);
}
