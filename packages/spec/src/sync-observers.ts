import { InvalidArgumentError } from '@qtk/tensor';
import type { ObserverV1 } from './observer.js';

/**
 * All-reduce for observers (`isSyncQuantize`): afterwards every observer holds the statistics of
 * all of them — the first one's state loaded, the others' merged in — so their qparams agree.
 * Works across workers too: send `state()` around and do the same with `load` / `merge`.
 */
export function syncObservers(list: readonly ObserverV1[]): void {
  if (list.length < 2) return;
  const kinds = new Set(list.map((o) => o.name));
  if (kinds.size > 1)
    throw new InvalidArgumentError(
      `syncObservers: observers of different kinds (${[...kinds].join(', ')}) cannot be synchronised`,
    );
  const states = list.map((o) => o.state());
  for (const o of list) {
    o.load(states[0]!);
    for (let i = 1; i < states.length; i++) o.merge(states[i]!);
  }
}
