// Options keyed by module name (qconfigDict.moduleName, setPreserveQatMode's prefixes and type names):
// an entry that names nothing would be ignored without a word, so prepareQatFx refuses it, naming the
// closest names. A name may be one of the model before fusion or after it (generated ones included).
import type { Module } from '@qtk/nn';
import { QConfigError } from '@qtk/spec';
import { closeNames } from '@qtk/tensor';

/** An option entry (a module name or class name) that matches no module of the model. */
export class UnknownModuleNameError extends QConfigError {
  static override readonly code: string = 'E_UNKNOWN_MODULE_NAME';
  /** Where the entry was given, e.g. `qconfigDict.moduleName`. */
  readonly option: string;
  readonly entry: string;
  /** Names (or class names) of the model close to the entry, best first. */
  readonly closest: readonly string[];
  constructor(option: string, entry: string, closest: readonly string[], kind: 'name' | 'type' = 'name') {
    super(
      `${option} entry '${entry}' matches no module ${kind === 'name' ? 'name' : 'class'} of the model, so it would change nothing` +
        (closest.length ? `; closest: ${closest.join(', ')}` : '') +
        (kind === 'name'
          ? '; use a module path as printed by qtk inspect or gm.namedModules() (before or after fusion; functional ops by their generated names, e.g. _generated_add_0)'
          : '; use the class name of a module of the model'),
    );
    this.option = option;
    this.entry = entry;
    this.closest = closest;
  }
}

/** Every module path of the models ('' left out). */
export function moduleNamesOf(models: readonly Module[]): string[] {
  const names = new Set<string>();
  for (const m of models) for (const [path] of m.namedModules()) if (path !== '') names.add(path);
  return [...names];
}

/** Whether a name entry covers `path`: the module itself or one inside it (a trailing '.' is a bare prefix). */
export const coversPath = (entry: string, path: string): boolean =>
  path === entry || path.startsWith(entry.endsWith('.') ? entry : `${entry}.`);

/** Throws UnknownModuleNameError for the first entry that covers no module of `models` ('' is the root). */
export function checkModuleNames(option: string, entries: Iterable<string>, models: readonly Module[]): void {
  const known = moduleNamesOf(models);
  for (const entry of entries) {
    if (entry === '' || known.some((p) => coversPath(entry, p))) continue;
    throw new UnknownModuleNameError(option, entry, closeNames(entry, known));
  }
}

/** Throws UnknownModuleNameError for the first class name no module of `models` has (or inherits). */
export function checkModuleTypeNames(option: string, entries: Iterable<string>, models: readonly Module[]): void {
  const known = new Set<string>();
  for (const model of models)
    for (const m of model.modules())
      for (let p = Object.getPrototypeOf(m); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p))
        known.add((p.constructor as { name: string }).name);
  for (const entry of entries) {
    if (known.has(entry)) continue;
    throw new UnknownModuleNameError(option, entry, closeNames(entry, [...known]), 'type');
  }
}
