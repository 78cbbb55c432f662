import type { ObserverV1 } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';

/**
 * One observer fed every batch, and two fresh ones fed the batches of `split` (indices, in that order)
 * with the second's state merged into the first through a JSON round trip, as workers would send it.
 */
export function observeWholeAndSplit<O extends ObserverV1>(
  make: () => O,
  batches: readonly Tensor[],
  split: readonly [readonly number[], readonly number[]],
): { whole: O; merged: O } {
  const whole = make();
  for (const b of batches) whole.observe(b);
  const [merged, other] = [make(), make()];
  for (const i of split[0]) merged.observe(batches[i]!);
  for (const i of split[1]) other.observe(batches[i]!);
  merged.merge(JSON.parse(JSON.stringify(other.state())));
  return { whole, merged };
}
