import { Module } from '@qtk/nn';
import { InvalidArgumentError, traceable } from '@qtk/tensor';
import { currentTracer } from './tracer.js';

// biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
type AnyFn = (...args: any[]) => any;

const WRAPPED = Symbol('qtk.fxWrapped');

function wrapMethod<T extends AnyFn>(original: T, name: string): T {
  if ((original as unknown as Record<symbol, unknown>)[WRAPPED]) return original;
  const wrapper = function (this: unknown, ...args: unknown[]): unknown {
    const tracer = currentTracer();
    if (tracer !== null && this instanceof Module) return tracer.recordModuleMethod(this, name, args, { opaque: true });
    return original.apply(this, args);
  };
  Object.defineProperty(wrapper, 'name', { value: original.name || name });
  Object.defineProperty(wrapper, WRAPPED, { value: original });
  return wrapper as unknown as T;
}

export interface FxWrapOptions {
  /** Keep calls even when their result is unused (dead-code elimination skips them). */
  impure?: boolean;
}

/**
 * Keeps code out of symbolic tracing: the call is recorded as one node and the code runs for real
 * when the GraphModule runs, so its branches (`if (this.training)`, data-dependent loops) survive.
 *
 * - `fxWrap(fn, name?)` wraps a free function: calls whose arguments hold a traced value become one
 *   call_function node with target `name` (names are registered and must be unique). Pass the name:
 *   the default, `fn.name`, can be changed by bundlers and minifiers, and serialized graphs refer to it.
 * - `@fxWrap()` decorates a method of a Module subclass (TS 5 standard decorators): while tracing,
 *   every call becomes one call_module node on the module's path with `method` set, never traced
 *   inside. Modules the method calls stay children of the model, addressable and configurable by name.
 *   `fxWrapMethod(Class, 'name')` does the same without decorator syntax.
 */
export function fxWrap<F extends AnyFn>(fn: F, name?: string, options?: FxWrapOptions): F;
export function fxWrap(): <T extends AnyFn>(method: T, context: ClassMethodDecoratorContext) => T;
export function fxWrap<F extends AnyFn>(fn?: F, name?: string, options: FxWrapOptions = {}): unknown {
  if (fn === undefined) {
    return <T extends AnyFn>(method: T, context: ClassMethodDecoratorContext): T => {
      if (context.kind !== 'method' || context.static || typeof context.name !== 'string') {
        throw new InvalidArgumentError('@fxWrap() decorates instance methods of Module subclasses');
      }
      return wrapMethod(method, context.name);
    };
  }
  if (typeof fn !== 'function') throw new InvalidArgumentError(`fxWrap: expected a function, got ${typeof fn}`);
  const n = name ?? fn.name;
  if (!n) throw new InvalidArgumentError('fxWrap: the function has no name; pass one: fxWrap(fn, "myPostProcess")');
  return traceable(n, fn, { impure: options.impure ?? false });
}

/** Wraps `Class.prototype[method]` like `@fxWrap()` does (idempotent). */
// biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
export function fxWrapMethod<C extends abstract new (...args: any[]) => Module>(
  cls: C,
  method: string & keyof InstanceType<C>,
): void {
  const proto = cls.prototype as Record<string, unknown>;
  const original = proto[method];
  if (typeof original !== 'function' || method === 'forward') {
    throw new InvalidArgumentError(
      `fxWrapMethod(${cls.name}, '${method}'): not a method of ${cls.name} other than forward`,
    );
  }
  proto[method] = wrapMethod(original as AnyFn, method);
}
