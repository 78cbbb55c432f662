import type { z } from 'zod';
import { OptionsError } from './errors.js';

/**
 * Validates `value` against `schema` at a public boundary; a failure is an OptionsError listing
 * every failing path (`bins: Expected integer, received float`).
 */
export function parseOptions<S extends z.ZodTypeAny>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw new OptionsError(
    where,
    r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    { cause: r.error },
  );
}

/**
 * What a registry of a V1 extension point holds: a named, versioned factory of `T` whose `create`
 * parses its options with `optionsSchema` (invalid options fail there, with a path).
 */
export interface FactoryV1<T, O = unknown> {
  readonly apiVersion: 1;
  readonly name: string;
  readonly description?: string;
  /** zod schema of the options. */
  readonly optionsSchema: z.ZodType<O, z.ZodTypeDef, unknown>;
  create(options?: unknown): T;
}
