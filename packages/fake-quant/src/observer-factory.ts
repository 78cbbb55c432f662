// How a fake-quant finds its observer by name: a registered observer (a plugin's, or one registered over a
// built-in name) first, else the built-in of that name. So fake-quants and the default qconfigs work without
// anything registering the built-ins, and a custom observer set needs none of them.
import { builtinObservers } from '@qtk/observers';
import { type ObserverFactoryV1, type ObserverV1, observers } from '@qtk/spec';
import { Registry } from '@qtk/tensor';

const builtinOf = (name: string): ObserverFactoryV1 | undefined =>
  builtinObservers.find((f) => f.name === name.toLowerCase()) as ObserverFactoryV1 | undefined;

/**
 * The observer factory `name` stands for (names ignore case): the registered one, else the built-in;
 * a RegistryError naming the registered and built-in observers (and close ones) for any other name.
 */
export function observerFactory(name: string): ObserverFactoryV1 {
  const key = observers.resolve(name);
  if (key !== undefined) return observers.get(key);
  const builtin = builtinOf(name);
  if (builtin) return builtin;
  const known = new Registry<ObserverFactoryV1>('observer', {
    caseInsensitive: true,
    howToRegister: 'registerPlugin() or observers.register()',
  });
  for (const f of [...observers.list(), ...(builtinObservers as readonly ObserverFactoryV1[])])
    if (!known.has(f.name)) known.register(f);
  throw known.missError(name);
}

/** Creates the observer `name` stands for (see observerFactory), its options checked by the factory's schema. */
export function createNamedObserver(name: string, options?: unknown): ObserverV1 {
  return observerFactory(name).create(options);
}
