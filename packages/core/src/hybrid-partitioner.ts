// The slot through which a hybrid partitioner (@qtk/hybrid) joins prepareQatFx: core knows the
// `hybrid` option and where the pass runs, the partitioner knows how to read a march's table.
import { InvalidArgumentError } from '@qtk/tensor';
import type { PreparePass } from './prepare-context.js';

let partitioner: PreparePass | null = null;

/** Installs the pass prepareQatFx runs (after the march's rewrites) when called with `hybrid: true`. */
export function setHybridPartitioner(pass: PreparePass | null): void {
  partitioner = pass;
}

export function hybridPartitioner(): PreparePass {
  if (!partitioner)
    throw new InvalidArgumentError(
      "prepareQatFx: { hybrid: true } needs a partitioner; add @qtk/hybrid and `import '@qtk/hybrid'` before preparing",
    );
  return partitioner;
}
