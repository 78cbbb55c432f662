import { observerBaseShape, OptionsError } from '@qtk/spec';
import { closeNames } from '@qtk/tensor';
import type { z } from 'zod';
import { fakeQuantizeOptionsSchema, type FakeQuantizeOptions } from './fake-quantize.js';
import { observerFactory } from './observer-factory.js';

/**
 * FakeQuantize options in horizon_plugin_pytorch's flat keyword form: the FakeQuantize options
 * (observer, dtype, chAxis, ...) and the observer's own options (averagingConstant, percentile, bins,
 * ...) side by side. The nested `observerOptions` form is accepted too.
 */
export type FakeQuantKwargs = FakeQuantizeOptions & { readonly [observerOption: string]: unknown };

const FAKE_QUANT_KEYS: readonly string[] = Object.keys(fakeQuantizeOptionsSchema.shape);
/** Observer options FakeQuantize fills in from its own (so they belong next to `observer`). */
const PASSED_BY_FAKE_QUANT: readonly string[] = ['dtype', 'chAxis', 'quantMin', 'quantMax'];

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The nested form: keys that are not FakeQuantize options move into `observerOptions`. */
export function nestFakeQuantKwargs(kwargs: FakeQuantKwargs, where: string): FakeQuantizeOptions {
  const out: Record<string, unknown> = {};
  const flat: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(kwargs)) {
    if (v === undefined) continue;
    if (FAKE_QUANT_KEYS.includes(k)) out[k] = v;
    else flat[k] = v;
  }
  const keys = Object.keys(flat);
  if (keys.length === 0) return out as FakeQuantizeOptions;
  const nested = out.observerOptions;
  if (nested !== undefined && !isPlainObject(nested)) return out as FakeQuantizeOptions; // the schema reports it
  const twice = keys.filter((k) => nested && k in nested);
  if (twice.length > 0) {
    throw new OptionsError(
      where,
      twice.map((k) => ({ path: k, message: `given both as a flat option and in observerOptions; give it once` })),
    );
  }
  out.observerOptions = { ...nested, ...flat };
  return out as FakeQuantizeOptions;
}

/** Top-level option names of a zod object schema behind refinements / transforms; null if it is not one. */
function objectKeys(schema: z.ZodTypeAny): string[] | null {
  let s: z.ZodTypeAny | undefined = schema;
  for (let depth = 0; s && depth < 32; depth++) {
    const def = s._def as {
      typeName?: string;
      schema?: z.ZodTypeAny;
      innerType?: z.ZodTypeAny;
      shape?: () => Record<string, unknown>;
    };
    if (def.typeName === 'ZodObject' && def.shape) return Object.keys(def.shape());
    s = def.typeName === 'ZodEffects' ? def.schema : def.innerType;
  }
  return null;
}

const squash = (k: string) => k.replace(/_/g, '').toLowerCase();

/** 'averaging_constant' or 'averagingconstant' -> 'averagingConstant'; else the closest name, if any is close. */
function closest(key: string, names: readonly string[]): string | null {
  return names.find((n) => squash(n) === squash(key)) ?? closeNames(key, names, 1)[0] ?? null;
}

/**
 * Checks nested FakeQuantize options against FakeQuantize's schema and the chosen observer's:
 * unknown names (with the valid ones listed), observer options that belong next to `observer`, and
 * every value the observer would reject at creation. Throws OptionsError (or RegistryError for an
 * unregistered observer).
 */
export function checkFakeQuantOptions(options: FakeQuantizeOptions, where: string): void {
  const r0 = fakeQuantizeOptionsSchema.safeParse(options);
  if (!r0.success) {
    throw new OptionsError(
      where,
      r0.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      { cause: r0.error },
    );
  }
  const o = r0.data;
  const factory = observerFactory(o.observer);
  const at = `${where} (observer '${o.observer}')`;
  const own = o.observerOptions;
  for (const k of Object.keys(own)) {
    if (PASSED_BY_FAKE_QUANT.includes(k)) {
      throw new OptionsError(at, [
        {
          path: `observerOptions.${k}`,
          message: `${k} is a FakeQuantize option that it passes to the observer; give it next to observer, not in observerOptions`,
        },
      ]);
    }
  }
  const keys = objectKeys(factory.optionsSchema as z.ZodTypeAny);
  if (keys) {
    // the observer's own options first, then the ones every observer takes
    const common = Object.keys(observerBaseShape);
    const accepted = [
      ...keys.filter((k) => !common.includes(k)),
      ...keys.filter((k) => common.includes(k) && !PASSED_BY_FAKE_QUANT.includes(k)),
    ];
    const unknown = Object.keys(own).filter((k) => !accepted.includes(k));
    if (unknown.length > 0) {
      throw new OptionsError(
        at,
        unknown.map((k) => {
          const hint = closest(k, [...accepted, ...FAKE_QUANT_KEYS]);
          return {
            path: k,
            message:
              `'${k}' is neither a FakeQuantize option nor an option of observer '${o.observer}'` +
              (hint ? ` (did you mean '${hint}'?)` : '') +
              `; observer '${o.observer}' accepts ${accepted.join(', ')}; FakeQuantize accepts ${FAKE_QUANT_KEYS.join(', ')}`,
          };
        }),
      );
    }
  }
  const r = factory.optionsSchema.safeParse({
    ...own,
    dtype: o.dtype,
    chAxis: o.chAxis,
    quantMin: o.quantMin,
    quantMax: o.quantMax,
  });
  if (!r.success) {
    throw new OptionsError(
      at,
      r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      { cause: r.error },
    );
  }
}
