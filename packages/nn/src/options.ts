import { InvalidArgumentError } from '@qtk/tensor';
import { Generator } from '@qtk/tensor';
import { z } from 'zod';

/**
 * Validates constructor options at the boundary. The error names the layer and each offending
 * field with zod's message, e.g. `Conv2d: invalid options: stride: Number must be greater than 0`.
 */
export function parseOptions<S extends z.ZodTypeAny>(owner: string, schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(options)'}: ${i.message}`);
  throw new InvalidArgumentError(`${owner}: invalid options: ${issues.join('; ')}`, { cause: r.error });
}

export const positiveInt = z.number().int().positive();
export const nonNegativeInt = z.number().int().nonnegative();
export const generatorSchema = z.instanceof(Generator).optional();

/** An int or a tuple of `n` ints (PyTorch's `_pair` / `_triple`). */
export function intOrTuple(n: number, min: number) {
  const el = z.number().int().min(min);
  return z.union([el, z.array(el).length(n)]);
}

export function expand(v: number | readonly number[], n: number): number[] {
  return typeof v === 'number' ? new Array<number>(n).fill(v) : [...v];
}
