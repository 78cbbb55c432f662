// Which modules tracing records as one call_module node instead of tracing through, and which
// module methods (FloatFunctional's add, mul, ...) it records as call_module nodes with a method.
import * as nn from '@qtk/nn';
import { FloatFunctional, Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';

// biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
export type ModuleClass<M extends Module = Module> = abstract new (...args: any[]) => M;

const CONTAINERS: ReadonlySet<unknown> = new Set<unknown>([nn.Module, nn.Sequential, nn.ModuleList, nn.ModuleDict]);

/**
 * Classes whose instances (and subclasses' instances) are leaves. Holds every layer @qtk/nn exports
 * (not its containers); other packages and users add theirs with `registerLeafModule`.
 */
export class LeafModuleRegistry {
  private readonly classes = new Set<ModuleClass>();

  register(cls: ModuleClass): void {
    if (typeof cls !== 'function' || !(cls.prototype instanceof Module)) {
      throw new InvalidArgumentError(
        `registerLeafModule: expected a Module subclass, got ${typeof cls === 'function' ? cls.name : typeof cls}`,
      );
    }
    this.classes.add(cls);
  }

  /** Whether `module` is an instance of a registered class. */
  isLeaf(module: Module): boolean {
    for (let p = Object.getPrototypeOf(module); p !== null && p !== Module.prototype; p = Object.getPrototypeOf(p)) {
      if (this.classes.has(p.constructor)) return true;
    }
    return false;
  }

  list(): string[] {
    return [...this.classes].map((c) => c.name).sort();
  }
}

export const leafModules = new LeafModuleRegistry();

for (const v of Object.values(nn)) {
  if (typeof v === 'function' && v.prototype instanceof Module && !CONTAINERS.has(v))
    leafModules.register(v as ModuleClass);
}

/** Makes every instance of `cls` (and of its subclasses) a leaf in all traces. */
export function registerLeafModule(cls: ModuleClass): void {
  leafModules.register(cls);
}

const tracedMethods = new Map<ModuleClass, readonly string[]>();

/**
 * Declares methods of a module class that tracing records as call_module nodes with that method
 * (calls such as `this.skip.add(a, b)` on a FloatFunctional), so patterns can match them and
 * passes can swap the module by name.
 */
export function registerTracedMethods(cls: ModuleClass, methods: readonly string[]): void {
  if (typeof cls !== 'function' || !(cls.prototype instanceof Module)) {
    throw new InvalidArgumentError('registerTracedMethods: expected a Module subclass');
  }
  for (const m of methods) {
    if (m === 'forward' || typeof (cls.prototype as unknown as Record<string, unknown>)[m] !== 'function') {
      throw new InvalidArgumentError(
        `registerTracedMethods(${cls.name}): '${m}' is not a method of ${cls.name} other than forward`,
      );
    }
  }
  tracedMethods.set(cls, [...methods]);
}

/** The traced methods declared for the module's class and its ancestors. */
export function tracedMethodsOf(module: Module): string[] {
  const out = new Set<string>();
  for (let p = Object.getPrototypeOf(module); p !== null && p !== Module.prototype; p = Object.getPrototypeOf(p)) {
    for (const m of tracedMethods.get(p.constructor) ?? []) out.add(m);
  }
  return [...out];
}

registerTracedMethods(FloatFunctional, [
  'add',
  'sub',
  'mul',
  'div',
  'addScalar',
  'mulScalar',
  'matmul',
  'cat',
  'sum',
  'mean',
]);
