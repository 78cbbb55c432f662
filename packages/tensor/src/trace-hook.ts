// The seam symbolic tracing (@qtk/ir) uses to see functional ops. Public functional ops are wrapped
// with `traceable(name, fn)`: when no trace hook is installed the wrapper costs one null check;
// while tracing, a call whose arguments hold a traced value is handed to the hook instead of `fn`.
import { InvalidArgumentError } from './errors.js';
import { Registry } from './named-registry.js';

/** Property every traced value answers with `true` (a traced value is a Proxy standing for a tensor). */
export const TRACED: unique symbol = Symbol.for('qtk.traced');

/** Receives a traceable call made with traced arguments; its return value replaces the call's result. */
// biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
export type TraceHook = (name: string, fn: (...args: any[]) => unknown, args: unknown[]) => unknown;

let hook: TraceHook | null = null;

/** Installs (or with null removes) the trace hook and returns the previous one, so tracers can nest. */
export function setTraceHook(next: TraceHook | null): TraceHook | null {
  const prev = hook;
  hook = next;
  return prev;
}

export function getTraceHook(): TraceHook | null {
  return hook;
}

/** True for a traced value (a tracer's proxy). */
export function isTracedValue(v: unknown): boolean {
  return (
    (typeof v === 'object' || typeof v === 'function') && v !== null && (v as { [TRACED]?: unknown })[TRACED] === true
  );
}

/** True when `v`, or anything inside arrays and plain objects nested in it, is a traced value. */
export function containsTraced(v: unknown, depth = 0): boolean {
  if (typeof v !== 'object' || v === null) return typeof v === 'function' && isTracedValue(v);
  if (isTracedValue(v)) return true;
  if (depth > 8) return false;
  if (Array.isArray(v)) {
    for (const x of v) if (containsTraced(x, depth + 1)) return true;
    return false;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const k in v) if (containsTraced((v as Record<string, unknown>)[k], depth + 1)) return true;
  return false;
}

export interface TraceableEntry {
  /** Stable name, the `target` of call_function nodes. */
  readonly name: string;
  /** The implementation. */
  // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
  readonly fn: (...args: any[]) => unknown;
  /** The public function: `fn` behind the trace check. */
  // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
  readonly wrapped: (...args: any[]) => unknown;
  /** Calls with side effects that dead-code elimination must keep. */
  readonly impure: boolean;
}

/**
 * Functions a graph can call by name (`call_function` targets), in a Registry keyed by name.
 * Registering the same function under the same name twice is a no-op; another function under a
 * taken name throws a RegistryError.
 */
export class TraceableRegistry {
  private readonly byName = new Registry<TraceableEntry>('traceable function', {
    check: (entry) => {
      if (!/^[A-Za-z_$][\w$.]*$/.test(entry.name)) {
        throw new InvalidArgumentError(
          `traceable: name must be an identifier (letters, digits, '_', '$', '.'), got '${entry.name}'`,
        );
      }
    },
    same: (a, b) => a.fn === b.fn || a.wrapped === b.wrapped,
    howToRegister: "registerTraceable(name, fn) (or fxWrap(fn, 'name'))",
    conflictHint: () => "pick another name (fxWrap(fn, 'myName') / registerTraceable('myName', fn))",
  });
  /** Index from a function (implementation or wrapper) to its entry, for tracing calls by identity. */
  private readonly byFn = new Map<unknown, TraceableEntry>();

  register(entry: TraceableEntry): TraceableEntry {
    if (typeof entry?.name !== 'string' || entry.name === '') {
      throw new InvalidArgumentError(
        `traceable: name must be an identifier (letters, digits, '_', '$', '.'), got '${String(entry?.name)}'`,
      );
    }
    const registered = this.byName.register(entry);
    if (registered === entry) {
      this.byFn.set(entry.fn, entry);
      this.byFn.set(entry.wrapped, entry);
    }
    return registered;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The entry called `name`; a miss throws a RegistryError listing what exists. */
  get(name: string): TraceableEntry {
    return this.byName.get(name);
  }

  /** The entry of a function (its implementation or its wrapper), if registered. */
  lookup(fn: unknown): TraceableEntry | undefined {
    return this.byFn.get(fn);
  }

  list(): string[] {
    return this.byName.names().sort();
  }
}

export const traceables = new TraceableRegistry();

/**
 * Wraps `fn` so tracing records calls to it as `call_function` nodes with target `name`, and
 * registers it. Wrapping an already wrapped function returns it unchanged.
 */
// biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
export function traceable<F extends (...args: any[]) => any>(
  name: string,
  fn: F,
  options: { impure?: boolean } = {},
): F {
  if (typeof fn !== 'function')
    throw new InvalidArgumentError(`traceable('${name}'): expected a function, got ${typeof fn}`);
  const known = traceables.lookup(fn);
  if (known && known.name === name) return known.wrapped as F;
  const wrapped = function (this: unknown, ...args: unknown[]): unknown {
    if (hook !== null && containsTraced(args)) return hook(name, fn, args);
    return fn.apply(this, args);
  };
  Object.defineProperty(wrapped, 'name', { value: fn.name || name });
  return traceables.register({ name, fn, wrapped, impure: options.impure ?? false }).wrapped as F;
}
