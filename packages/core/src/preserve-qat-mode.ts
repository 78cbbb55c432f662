import type { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';
import { QatModule } from './qat-module.js';

const preserved = new WeakSet<Module>();

type ModuleClass = abstract new (...a: any[]) => Module;

/**
 * Marks modules of a prepared (QAT) model to stay QAT modules in the converted model: their
 * quantized inputs are dequantized to float, they run as in QAT's VALIDATION state, and their
 * output is quantized again with its observed scale. A module is chosen when its qualified name
 * starts with one of `prefixes` or its (inner, for QAT modules) class is one of `types` (a class
 * or a class name). Returns the qualified names it changed.
 */
export function setPreserveQatMode(model: Module, prefixes: readonly string[] = [], types: readonly (ModuleClass | string)[] = [], value = true): string[] {
  if (!Array.isArray(prefixes) || !Array.isArray(types)) {
    throw new InvalidArgumentError('setPreserveQatMode(model, prefixes, types, value): prefixes and types must be arrays');
  }
  const changed: string[] = [];
  const typeMatches = (m: Module): boolean => {
    const inner = m instanceof QatModule ? m.module : m;
    return types.some((t) => (typeof t === 'string' ? inner.constructor.name === t : inner instanceof t));
  };
  for (const [name, m] of model.namedModules()) {
    if (name === '') continue;
    const byName = prefixes.some((p) => name === p || name.startsWith(`${p}.`) || (p.endsWith('.') && name.startsWith(p)));
    if (!byName && !typeMatches(m)) continue;
    if (value) preserved.add(m);
    else preserved.delete(m);
    changed.push(name);
  }
  return changed;
}

/** Whether convertFx keeps this module as a QAT module. */
export function isPreserveQatMode(module: Module): boolean {
  return preserved.has(module);
}
