// --march and --observer: a registered name, or a usage error listing the registered ones and the close ones.
import { marches, observers } from '@qtk/spec';
import { didYouMean } from '@qtk/tensor';
import { CliError } from './io.js';

function unknownName(
  what: string,
  name: string,
  registry: { closeTo(name: string): string[]; names(): string[] },
): CliError {
  const close = registry.closeTo(name);
  return new CliError(`unknown ${what} '${name}' (registered: ${registry.names().join(', ')})${didYouMean(close)}`, {
    exitCode: 2,
  });
}

/** The registered march `id`, or a usage error naming the close ones. */
export function requireMarch(id: string): string {
  if (!marches.has(id)) throw unknownName('march', id, marches);
  return id;
}

/** The registered observer `name` stands for (names ignore case: 'MSE' is 'mse'), or a usage error. */
export function requireObserver(name: string): string {
  const key = observers.resolve(name);
  if (key === undefined) throw unknownName('observer', name, observers);
  return key;
}
