import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ReferenceNet } from '@qtk/examples';
import { loadStateDictFileSync } from '@qtk/nn/node';

/**
 * The pretrained float weights embedded in the repository: the reference network after the 8-epoch
 * float protocol on the full Fashion-MNIST (92.40 % test accuracy); `pnpm make-demo-weights` regenerates them.
 */
export const EMBEDDED_WEIGHTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'assets', 'reference-net.qtk');

/** The reference network with float weights from a state-dict file, in eval mode. */
export function loadFloatWeights(path: string): ReferenceNet {
  if (!existsSync(path))
    throw new Error(
      `float weights '${path}' not found${path === EMBEDDED_WEIGHTS ? '; run `pnpm make-demo-weights`' : ''}`,
    );
  const model = new ReferenceNet();
  model.loadStateDict(loadStateDictFileSync(path));
  return model.eval();
}
