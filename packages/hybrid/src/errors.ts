import { QtkError } from '@qtk/tensor';

/** A hybridDict entry that matches no module (by name) or no module type in the model. */
export class HybridDictError extends QtkError {
  static readonly code = 'E_HYBRID_DICT';
  readonly key: 'moduleName' | 'moduleType';
  readonly entry: string;
  /** Names in the model close to the entry, best first. */
  readonly closest: readonly string[];
  constructor(key: 'moduleName' | 'moduleType', entry: string, closest: readonly string[]) {
    super(
      'E_HYBRID_DICT',
      `hybridDict.${key} entry '${entry}' matches nothing in the model` +
        (closest.length ? `; closest: ${closest.join(', ')}` : '') +
        (key === 'moduleName'
          ? '; use a module path as printed by qtk inspect (functional ops by their generated names, e.g. _generated_add_0)'
          : '; use a module class name of the model (or the class itself)'),
    );
    this.key = key;
    this.entry = entry;
    this.closest = closest;
  }
}
